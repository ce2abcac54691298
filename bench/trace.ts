// `npm run bench trace`: `keel trace --html` of a ~50 MB session log. Baseline, measured in the same
// run: reading the same log the simplest way (readFileSync + JSON.parse of every line), the least any
// trace must do. Figures: build time and heap growth (streamed reading), page size, and — when
// Chromium is there — the time until the page shows its first call row, and until all rows are in.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildTrace, renderTraceHtml } from '../src/agent/trace/html.ts';

const TARGET_BYTES = 50 * 1024 * 1024;

function writeLog(file: string): { calls: number; bytes: number } {
  const fd = fs.openSync(file, 'w');
  let seq = 0;
  let bytes = 0;
  const line = (o: unknown) => {
    const s = `${JSON.stringify(o)}\n`;
    bytes += Buffer.byteLength(s);
    fs.writeSync(fd, s);
  };
  const sessionId = 'bench-session';
  const ts = 1_700_000_000_000;
  line({
    type: 'session',
    version: 1,
    id: sessionId,
    createdAt: ts,
    model: 'claude-sonnet-4-6',
    workspace: '/w',
  });
  const system = [{ type: 'text', text: 'You are Keel. '.repeat(600) }];
  const tools = Array.from({ length: 12 }, (_, i) => ({
    name: `Tool${i}`,
    description: 'd '.repeat(200),
    input_schema: { type: 'object' },
  }));
  line({ type: 'prefix', seq: ++seq, sessionId, ts, hash: 'a'.repeat(64), system, tools });
  const ev = (body: Record<string, unknown>) => line({ ...body, sessionId, seq: ++seq, ts: ts + seq });
  const output = 'x'.repeat(79).concat('\n').repeat(250); // 20 KB tool output
  let calls = 0;
  ev({ type: 'agent_start', runId: 'run_1', prompt: 'benchmark' });
  while (bytes < TARGET_BYTES) {
    calls++;
    const id = `toolu_${calls}`;
    ev({
      type: 'model_call',
      record: {
        stage: 0,
        message_count: calls * 2,
        est_tokens: 10_000 + calls * 5_000,
        prefix_hash: 'a'.repeat(64),
        cache_read: 9_000 + calls * 5_000,
        cache_write: 900,
        input: 3,
        output: 120,
        latency_ms: 900,
        ttft_ms: 300,
        model: 'claude-sonnet-4-6',
        cost_usd: 0.01,
        context_window: 200_000,
        ok: true,
      },
    });
    const assistant = {
      role: 'assistant',
      id: `msg_${calls}`,
      ts,
      model: 'claude-sonnet-4-6',
      stopReason: 'tool_use',
      usage: { input: 3, output: 120, cacheRead: 0, cacheWrite: 0 },
      content: [
        { type: 'text', text: 'Reading the next file.' },
        { type: 'tool_use', id, name: 'Read', input: { path: `src/f${calls}.ts` } },
      ],
    };
    ev({ type: 'message_appended', message: assistant });
    ev({ type: 'message_end', message: assistant });
    ev({ type: 'tool_start', toolUseId: id, name: 'Read', input: { path: `src/f${calls}.ts` } });
    const result = { status: 'success', data: null, text: output, stats: { time_ms: 3 } };
    ev({ type: 'tool_end', toolUseId: id, name: 'Read', result, durationMs: 3 });
    ev({
      type: 'message_appended',
      message: {
        role: 'tool_result',
        id: `res_${calls}`,
        ts,
        toolUseId: id,
        toolName: 'Read',
        result,
        content: output,
        isError: false,
      },
    });
  }
  ev({ type: 'agent_end', runId: 'run_1', status: 'finished', finalText: 'done' });
  fs.closeSync(fd);
  return { calls, bytes };
}

const mb = (n: number) => Math.round((n / 1024 / 1024) * 10) / 10;

export async function runTraceBench() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-trace-bench-'));
  const log = path.join(dir, 'session.jsonl');
  const { calls, bytes } = writeLog(log);

  global.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  let t = performance.now();
  const parsed = fs
    .readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as unknown);
  const baselineMs = performance.now() - t;
  const baselineHeap = process.memoryUsage().heapUsed - heap0;
  parsed.length = 0;

  global.gc?.();
  const heap1 = process.memoryUsage().heapUsed;
  let peak = heap1;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 5);
  t = performance.now();
  const data = await buildTrace(log);
  const html = renderTraceHtml(data);
  const traceMs = performance.now() - t;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().heapUsed);
  const out = path.join(dir, 'trace.html');
  fs.writeFileSync(out, html);

  const figures: Record<string, unknown> = {
    log_mb: mb(bytes),
    model_calls: calls,
    baseline_read_and_parse_ms: Math.round(baselineMs),
    trace_html_ms: Math.round(traceMs),
    ratio_trace_vs_baseline: Math.round((traceMs / baselineMs) * 100) / 100,
    baseline_heap_growth_mb: mb(baselineHeap),
    trace_peak_heap_growth_mb: mb(peak - heap1),
    html_mb: mb(Buffer.byteLength(html)),
    goal: 'page shows its first rows < 2 s for a 50 MB log; trace build within 2x of merely parsing the log',
  };
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (fs.existsSync(chromium)) {
    const { chromium: pw } = await import('playwright-core');
    const browser = await pw.launch({ executablePath: chromium, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      t = performance.now();
      await page.goto(pathToFileURL(out).href);
      await page.waitForSelector('.row.call');
      figures.chromium_first_row_ms = Math.round(performance.now() - t);
      figures.rows_rendered_at_open = await page.$$eval('.row', (r) => r.length);
      figures.rows_total = data.rows.length;
    } finally {
      await browser.close();
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return figures;
}
