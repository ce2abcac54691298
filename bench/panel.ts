// `npm run bench panel`: the chat panel with a long transcript, in Debian's Chromium (playwright-core)
// with the real webview bundle behind the real CSP (the harness of webview-ui/test).
// For a 5,000-event session (replies in long Markdown, Read/Grep/Bash results, Edit cards with diffs):
//   - restore → first paint: from posting the snapshot until the newest message is in the DOM and a
//     frame has been painted;
//   - JS heap after the restore (CDP Performance.getMetrics after a forced GC) and DOM node count;
//   - per-delta main-thread cost while streaming a new answer at the end of the transcript: CDP
//     TaskDuration over 120 deltas delivered one per frame, divided by 120 (reducer + render + timers);
//   - scrolling up 150 steps of 400 px, one per frame: main-thread time per step; then to the top,
//     where the first message must show.
// Baselines in the same run: the same measures on a 50-event session (per-delta ratio long/short: flat
// means O(new text) per delta), and the previous, unvirtualised panel (git BASELINE_REF, default the
// commit before the virtualised list) built from git in a temp dir, on the same 5,000 events.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { sessionEvents } from './sessionFixture.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const BASELINE_REF = process.env.BASELINE_REF ?? '00452c10eb23684a1c842dbc8a86c8fa7140d41b';
const REPS = Number(process.env.BENCH_REPS ?? 5);
const DELTAS = 120;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const r1 = (n: number) => Math.round(n * 10) / 10;
const r2 = (n: number) => Math.round(n * 100) / 100;

async function bundle(srcRoot: string, out: string): Promise<void> {
  await esbuild.build({
    absWorkingDir: srcRoot,
    bundle: true,
    entryPoints: { webview: 'webview-ui/src/main.ts', 'webview-style': 'webview-ui/src/styles.css' },
    outdir: out,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    minify: true,
    logLevel: 'error',
    nodePaths: [path.join(root, 'node_modules')],
  });
  fs.renameSync(path.join(out, 'webview-style.css'), path.join(out, 'webview.css'));
}

function serve(dist: string): Promise<Server> {
  const roots: Array<[string, string]> = [
    ['/dist/', `${dist}/`],
    ['/codicons/', path.join(root, 'node_modules/@vscode/codicons/dist/')],
    ['/', path.join(root, 'webview-ui/test/harness/')],
  ];
  const types: Record<string, string> = {
    '.js': 'text/javascript',
    '.css': 'text/css',
    '.html': 'text/html',
  };
  const srv = createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://localhost').pathname;
    for (const [prefix, dir] of roots) {
      if (!p.startsWith(prefix)) continue;
      const file = path.join(dir, p.slice(prefix.length) || 'index.html');
      if (file.startsWith(dir) && fs.existsSync(file)) {
        res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
        res.end(fs.readFileSync(file));
        return;
      }
    }
    res.writeHead(404);
    res.end();
  });
  return new Promise((ok) => srv.listen(0, '127.0.0.1', () => ok(srv)));
}

interface Measure {
  firstPaintMs: number;
  heapMb: number;
  domNodes: number;
  renderedItems: number;
  perDeltaMs: number;
  perDeltaScriptMs: number;
  perDeltaLayoutMs: number;
  scrollStepMs: number;
  reachedFirst: boolean;
}

type Page = import('playwright-core').Page;
type Cdp = import('playwright-core').CDPSession;

async function metrics(cdp: Cdp): Promise<Record<string, number>> {
  const { metrics: list } = (await cdp.send('Performance.getMetrics')) as {
    metrics: Array<{ name: string; value: number }>;
  };
  return Object.fromEntries(list.map((m) => [m.name, m.value]));
}

async function measureOnce(
  page: Page,
  url: string,
  events: unknown[],
  restoreOnly = false,
): Promise<Measure> {
  await page.goto(url);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForFunction(() => (window as unknown as { __posted: unknown[] }).__posted.length > 0);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  // The newest item: the session's last reply (what a restored panel must show first).
  const lastReply = [...events].reverse().find((e) => (e as { type: string }).type === 'message_end') as {
    message: { id: string };
  };
  await page.evaluate((list) => {
    (window as unknown as { __events: unknown }).__events = list;
  }, events);
  const firstPaintMs = await page.evaluate(async (lastId) => {
    const w = window as unknown as { __events: Array<{ seq: number }> };
    const t0 = performance.now();
    window.postMessage(
      {
        type: 'snapshot',
        sessionId: 'bench',
        replace: true,
        events: w.__events,
        todos: [],
        running: false,
        model: 'claude-sonnet-4-6',
        contextWindow: 200000,
      },
      '*',
    );
    // The panel has its own (cloned) copy now: the bench's must not count in the heap.
    w.__events = [];
    await new Promise<void>((ok) => {
      const poll = () =>
        document.querySelector(`.msg[data-id="${lastId}"]`) ? ok() : requestAnimationFrame(poll);
      poll();
    });
    // The frame that shows it: the next rAF runs after it was painted.
    await new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
    return performance.now() - t0;
  }, lastReply.message.id);
  await page.waitForTimeout(300);
  await cdp.send('HeapProfiler.collectGarbage');
  const afterRestore = await metrics(cdp);
  const renderedItems = await page.evaluate(() => document.querySelectorAll('.items > *').length);
  if (restoreOnly) {
    await cdp.detach();
    return {
      firstPaintMs,
      heapMb: afterRestore.JSHeapUsedSize! / 1024 / 1024,
      domNodes: afterRestore.Nodes!,
      renderedItems,
      perDeltaMs: Number.NaN,
      perDeltaScriptMs: Number.NaN,
      perDeltaLayoutMs: Number.NaN,
      scrollStepMs: Number.NaN,
      reachedFirst: false,
    };
  }

  // Streaming a new answer at the end, one delta per frame, as a model streams.
  const lastSeq = Math.max(...(events as Array<{ seq: number }>).map((e) => e.seq));
  const before = await metrics(cdp);
  await page.evaluate(
    async ({ lastSeq, deltas }) => {
      let seq = lastSeq;
      const ev = (body: Record<string, unknown>) => ({ ...body, sessionId: 'bench', seq: ++seq, ts: 1 });
      const frame = () => new Promise((ok) => requestAnimationFrame(ok));
      window.postMessage(
        { type: 'event', event: ev({ type: 'message_start', messageId: 'live', model: 'm' }) },
        '*',
      );
      await frame();
      for (let i = 0; i < deltas; i++) {
        const delta = i % 10 === 9 ? `\n\n- item ${i} with \`code\`\n\n` : `word${i} and some more text `;
        window.postMessage(
          {
            type: 'event',
            event: ev({ type: 'message_delta', messageId: 'live', blockIndex: 0, kind: 'text', delta }),
          },
          '*',
        );
        await frame();
      }
      await new Promise((ok) => setTimeout(ok, 450)); // a persist timer that was started runs inside
    },
    { lastSeq, deltas: DELTAS },
  );
  const after = await metrics(cdp);
  const per = (k: string) => ((after[k]! - before[k]!) * 1000) / DELTAS;
  const perDeltaMs = per('TaskDuration');

  // Scroll to the first message, 400 px per frame (the old panel needs "Show earlier" first: it
  // is clicked until everything is in the DOM, and that time is not counted).
  const reachable = await page.evaluate(async () => {
    for (;;) {
      const more = Array.from(document.querySelectorAll('button, vscode-button')).find((b) =>
        /Show earlier/.test(b.textContent ?? ''),
      ) as HTMLElement | undefined;
      if (!more) break;
      more.click();
      await new Promise((ok) => requestAnimationFrame(ok));
    }
    return true;
  });
  const s0 = await metrics(cdp);
  const steps = await page.evaluate(async () => {
    const t = document.querySelector('.transcript') as HTMLElement;
    let n = 0;
    while (t.scrollTop > 0 && n < 150) {
      t.scrollTop = Math.max(0, t.scrollTop - 400);
      n++;
      await new Promise((ok) => requestAnimationFrame(ok));
    }
    await new Promise((ok) => requestAnimationFrame(ok));
    return n;
  });
  const s1 = await metrics(cdp);
  // Then the scrollbar dragged to the top: the first message must be there.
  await page.evaluate(async () => {
    const t = document.querySelector('.transcript') as HTMLElement;
    for (let i = 0; i < 5; i++) {
      t.scrollTop = 0;
      await new Promise((ok) => requestAnimationFrame(ok));
    }
  });
  await page.waitForTimeout(100);
  const reachedFirst =
    reachable &&
    (await page.evaluate(() => {
      const first = document.querySelector('.msg.user[data-id="usr_1"]');
      const t = document.querySelector('.transcript') as HTMLElement;
      if (!first) return false;
      const a = first.getBoundingClientRect();
      const b = t.getBoundingClientRect();
      return a.bottom > b.top && a.top < b.bottom;
    }));
  await cdp.detach();
  return {
    firstPaintMs,
    heapMb: afterRestore.JSHeapUsedSize! / 1024 / 1024,
    domNodes: afterRestore.Nodes!,
    renderedItems,
    perDeltaMs,
    perDeltaScriptMs: per('ScriptDuration'),
    perDeltaLayoutMs: per('LayoutDuration') + per('RecalcStyleDuration'),
    scrollStepMs: steps > 0 ? ((s1.TaskDuration! - s0.TaskDuration!) * 1000) / steps : 0,
    reachedFirst,
  };
}

async function measure(page: Page, url: string, events: unknown[]) {
  if (process.env.BENCH_VERBOSE) console.log(`  measuring ${events.length} events at ${url}`);
  const runs: Measure[] = [];
  for (let i = 0; i < REPS; i++) runs.push(await measureOnce(page, url, events));
  const med = (k: keyof Measure) => median(runs.map((r) => Number(r[k])));
  return {
    first_paint_ms: r1(med('firstPaintMs')),
    js_heap_mb: r1(med('heapMb')),
    dom_nodes: med('domNodes'),
    rendered_items: med('renderedItems'),
    per_delta_main_thread_ms: r2(med('perDeltaMs')),
    per_delta_script_ms: r2(med('perDeltaScriptMs')),
    per_delta_layout_and_style_ms: r2(med('perDeltaLayoutMs')),
    scroll_step_main_thread_ms: r2(med('scrollStepMs')),
    scrolled_to_first_message: runs.every((r) => r.reachedFirst),
  };
}

export async function runPanelBench() {
  if (!fs.existsSync(CHROMIUM)) return { skipped: `no Chromium at ${CHROMIUM}` };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-panel-bench-'));
  const servers: Server[] = [];
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const current = path.join(tmp, 'current');
    await bundle(root, current);
    let baselineDist: string | undefined;
    try {
      const src = path.join(tmp, 'baseline-src');
      fs.mkdirSync(src);
      const tar = execFileSync('git', ['archive', BASELINE_REF, 'webview-ui', 'src'], {
        cwd: root,
        maxBuffer: 1 << 28,
      });
      execFileSync('tar', ['-x', '-C', src], { input: tar });
      baselineDist = path.join(tmp, 'baseline');
      await bundle(src, baselineDist);
    } catch (error) {
      baselineDist = undefined;
      console.log(`(baseline build from ${BASELINE_REF} unavailable: ${String(error).split('\n')[0]})`);
    }
    const urlFor = async (dist: string) => {
      const srv = await serve(dist);
      servers.push(srv);
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      return `http://127.0.0.1:${port}/index.html?theme=dark`;
    };
    const long = sessionEvents({ sessionId: 'bench', events: 5000 });
    const short = sessionEvents({ sessionId: 'bench', events: 50 });
    const page = await browser.newPage({ viewport: { width: 420, height: 800 } });
    // tsx compiles this file with esbuild's keepNames: functions handed to page.evaluate call __name.
    await page.addInitScript({ content: 'window.__name = (f) => f;' });
    page.on('pageerror', (error) => console.log(`page error: ${error.message}`));
    const currentUrl = await urlFor(current);
    const longNow = await measure(page, currentUrl, long);
    const shortNow = await measure(page, currentUrl, short);
    const figures: Record<string, unknown> = {
      reps: REPS,
      events: long.length,
      transcript_5000: longNow,
      transcript_50: shortNow,
      ratio_per_delta_5000_vs_50: r2(longNow.per_delta_main_thread_ms / shortNow.per_delta_main_thread_ms),
    };
    if (baselineDist) {
      const before = await measure(page, await urlFor(baselineDist), long);
      figures[`unvirtualised_${BASELINE_REF.slice(0, 7)}_5000`] = before;
      figures.ratio_first_paint_vs_unvirtualised = r2(longNow.first_paint_ms / before.first_paint_ms);
      figures.ratio_heap_vs_unvirtualised = r2(longNow.js_heap_mb / before.js_heap_mb);
      figures.ratio_per_delta_vs_unvirtualised = r2(
        longNow.per_delta_main_thread_ms / before.per_delta_main_thread_ms,
      );
    }
    // The panel reopening the 50 MB log of bench/sessionLog.ts: every event of it in one snapshot.
    const big = sessionEvents({ sessionId: 'bench', bytes: 50 * 1024 * 1024, resultBytes: 12_000 });
    const bigRuns: Measure[] = [];
    for (let i = 0; i < Math.min(REPS, 3); i++) bigRuns.push(await measureOnce(page, currentUrl, big, true));
    figures.log_50mb_snapshot = {
      events: big.length,
      first_paint_ms: r1(median(bigRuns.map((r) => r.firstPaintMs))),
      js_heap_mb: r1(median(bigRuns.map((r) => r.heapMb))),
      rendered_items: median(bigRuns.map((r) => r.renderedItems)),
    };
    figures.goal = '5,000 events: first paint < 500 ms, webview memory < 150 MB, per-delta cost flat';
    return figures;
  } finally {
    await browser.close();
    for (const s of servers) s.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
