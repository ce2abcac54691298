// Harness CPU per model call at 25k / 50k / 100k / 150k-token contexts, and how it grows.
// Keel: a real session (resumed from a synthetic log of that size) against the emulator running in a
// CHILD process, so only the harness's own CPU (context assembly, hashing, serialisation, SDK request
// and SSE parsing, logging, events, the tool call) is measured with process.cpuUsage().
// Baseline, same run, same emulator: the bare SDK sending the very request Keel sent last (the least
// any harness must do). Per size: BENCH_RUNS runs (fresh session each), each the median of
// BENCH_TURNS prompts (two model calls each; the first prompt of a run is a warm-up); printed: the
// median over runs, the ratio, harness = Keel − bare SDK, and the slope per 100k tokens (flatness).
// Goal: harness ≤ 3 ms median per call at 100k, flat as the context grows.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import Anthropic from '@anthropic-ai/sdk';
import type { AgentMessage } from '../src/agent/messages.ts';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../src/agent/safety/approvals.ts';
import { createAgentSession } from '../src/agent/session/session.ts';

const TURNS = Number(process.env.BENCH_TURNS ?? 8);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const SIZES = (process.env.BENCH_SIZES ?? '25000,50000,100000,150000').split(',').map(Number);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

export function syntheticTranscript(targetTokens: number): AgentMessage[] {
  const messages: AgentMessage[] = [];
  let chars = 0;
  let i = 0;
  const line = (n: number) => `  ${n}\tconst value${n} = compute(${n}, 'some realistic source text here');\n`;
  messages.push({
    role: 'user',
    id: 'u0',
    ts: 0,
    text: 'Refactor the compute module and keep the tests green.',
  });
  while (chars < targetTokens * 4) {
    const id = `toolu_${String(i).padStart(6, '0')}`;
    messages.push({
      role: 'assistant',
      id: `a${i}`,
      ts: 0,
      model: 'bench',
      stopReason: 'tool_use',
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      content: [
        { type: 'text', text: `Reading part ${i}.` },
        { type: 'tool_use', id, name: 'Read', input: { path: `src/part${i}.ts` } },
      ],
    });
    const body = Array.from({ length: 60 }, (_, n) => line(n)).join('');
    const result = { status: 'success' as const, data: null, text: body, stats: { time_ms: 1 } };
    messages.push({
      role: 'tool_result',
      id: `r${i}`,
      ts: 0,
      toolUseId: id,
      toolName: 'Read',
      result,
      content: body,
      isError: false,
    });
    chars += body.length + 60;
    i++;
  }
  messages.push({
    role: 'assistant',
    id: 'afinal',
    ts: 0,
    model: 'bench',
    stopReason: 'end_turn',
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    content: [{ type: 'text', text: 'Done reading.' }],
  });
  return messages;
}

async function startEmulatorProcess(
  scenarioFile: string,
  lastRequestFile: string,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'test/emulator/cli.ts',
      '--scenario',
      scenarioFile,
      '--port',
      '0',
      '--context-window',
      '1000000',
      '--last-request-file',
      lastRequestFile,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const rl = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    rl.once('line', (l) => resolve(l.trim()));
    child.once('exit', (code) => reject(new Error(`emulator exited ${code}`)));
  });
  // Waits for the exit: the emulator may still be writing the last request into the folder removed next.
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

function scenarioReplies(prompts: number) {
  // Each prompt: one TodoWrite call then an answer — two model calls.
  const replies = [];
  for (let t = 0; t < prompts; t++) {
    replies.push({
      content: [
        {
          type: 'tool_use',
          name: 'TodoWrite',
          input: { todos: [{ id: '1', content: `step ${t}`, status: 'in_progress' }] },
        },
      ],
    });
    replies.push({ content: [{ type: 'text', text: `ok ${t}` }] });
  }
  return replies;
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

interface RunFigures {
  keel: number;
  bare: number;
  estTokens: number;
}

/** The emulator writes the last request after it answered: wait until the file is whole. */
async function readLastRequest(file: string): Promise<Anthropic.MessageCreateParams> {
  for (let attempt = 0; ; attempt++) {
    await new Promise((r) => setTimeout(r, 200));
    try {
      return JSON.parse(fs.readFileSync(file, 'utf8')) as Anthropic.MessageCreateParams;
    } catch (error) {
      if (attempt >= 25) throw error;
    }
  }
}

/** One run: a fresh session resumed from the log, TURNS prompts, then the bare SDK baseline. */
async function oneRun(
  ws: string,
  logId: string,
  emuUrl: string,
  lastRequestFile: string,
): Promise<RunFigures> {
  const host = createNodeHost({ workspace: ws, approvals: createPolicyApprovals('never') });
  const session = createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'bench',
    baseURL: emuUrl,
    resumeId: logId,
    contextWindow: 1_000_000,
  });
  let estTokens = 0;
  session.subscribe((e) => {
    if (e.type === 'model_call') estTokens = e.record.est_tokens;
  });
  const keel: number[] = [];
  for (let t = 0; t < TURNS; t++) {
    const cpu = process.cpuUsage();
    await session.prompt(`next ${t}`);
    if (t > 0) keel.push(cpuMs(cpu) / 2); // two model calls per prompt; the first prompt warms up
  }
  session.dispose();
  // Baseline: the bare SDK sending exactly the request Keel sent last (tools, system, messages,
  // cache markers), same emulator: the least any harness must spend on one call.
  const lastRequest = await readLastRequest(lastRequestFile);
  const client = new Anthropic({ apiKey: 'bench', baseURL: emuUrl, maxRetries: 0 });
  const bare: number[] = [];
  for (let t = 0; t < TURNS; t++) {
    const cpu = process.cpuUsage();
    const stream = await client.messages.create({ ...lastRequest, stream: true });
    for await (const _ of stream) {
      // drain
    }
    if (t > 0) bare.push(cpuMs(cpu));
  }
  return { keel: median(keel), bare: median(bare), estTokens };
}

async function measureSize(targetTokens: number) {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-cpu-')));
  fs.writeFileSync(path.join(ws, 'notes.md'), 'bench\n');
  const scenarioFile = path.join(ws, 'scenario.json');
  fs.writeFileSync(
    scenarioFile,
    JSON.stringify({ replies: scenarioReplies(TURNS * RUNS + 2), onExhausted: 'repeat_last' }),
  );
  const lastRequestFile = path.join(ws, 'last-request.json');
  const emu = await startEmulatorProcess(scenarioFile, lastRequestFile);
  try {
    // A resumable log holding the synthetic conversation of the target size.
    const id = 'bench-cpu';
    const logDir = path.join(ws, '.keel', 'sessions');
    fs.mkdirSync(logDir, { recursive: true });
    const lines = [
      JSON.stringify({ type: 'session', version: 1, id, createdAt: 0, model: 'bench', workspace: ws }),
    ];
    for (const [n, message] of syntheticTranscript(targetTokens).entries()) {
      lines.push(JSON.stringify({ type: 'message_appended', message, sessionId: id, seq: n + 1, ts: 0 }));
    }
    const logFile = path.join(logDir, `${id}.jsonl`);
    const log = `${lines.join('\n')}\n`;
    const runs: RunFigures[] = [];
    for (let r = 0; r < RUNS; r++) {
      fs.writeFileSync(logFile, log); // each run resumes the same conversation
      runs.push(await oneRun(ws, id, emu.url, lastRequestFile));
    }
    const keel = median(runs.map((r) => r.keel));
    const bare = median(runs.map((r) => r.bare));
    const harness = median(runs.map((r) => r.keel - r.bare));
    return {
      target_tokens: targetTokens,
      context_tokens_est: runs.at(-1)!.estTokens,
      keel_cpu_ms_per_call: +keel.toFixed(2),
      bare_sdk_cpu_ms_per_call: +bare.toFixed(2),
      ratio_keel_to_bare_sdk: +(keel / bare).toFixed(2),
      // Negative: Keel spends less than the bare SDK sending the same request (it does not re-serialise).
      harness_cpu_ms_per_call: +harness.toFixed(2),
      runs_keel_ms: runs.map((r) => +r.keel.toFixed(2)),
      runs_bare_ms: runs.map((r) => +r.bare.toFixed(2)),
    };
  } finally {
    await emu.stop();
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

/** Least-squares slope of y over x, per 100k tokens. */
function slopePer100k(points: { x: number; y: number }[]): number {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const num = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  return den === 0 ? 0 : (num / den) * 100_000;
}

export async function runTurnCpuBench() {
  const sizes: Awaited<ReturnType<typeof measureSize>>[] = [];
  for (const size of SIZES) sizes.push(await measureSize(size));
  const at100k = sizes.find((s) => s.target_tokens === 100_000);
  const pts = (key: 'keel_cpu_ms_per_call' | 'bare_sdk_cpu_ms_per_call' | 'harness_cpu_ms_per_call') =>
    sizes.map((s) => ({ x: s.context_tokens_est, y: s[key] }));
  return {
    runs_per_size: RUNS,
    calls_per_run: (TURNS - 1) * 2,
    sizes,
    slope_ms_per_100k_tokens: {
      keel: +slopePer100k(pts('keel_cpu_ms_per_call')).toFixed(2),
      bare_sdk: +slopePer100k(pts('bare_sdk_cpu_ms_per_call')).toFixed(2),
      harness: +slopePer100k(pts('harness_cpu_ms_per_call')).toFixed(2),
    },
    goal: 'harness ≤ 3 ms per call at 100k, flat (harness slope ≈ 0)',
    meets_goal_at_100k: at100k ? at100k.harness_cpu_ms_per_call <= 3 : undefined,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runTurnCpuBench();
  console.log(JSON.stringify(r, null, 2));
}
