import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { rgPath } from '@vscode/ripgrep';
import { READ_CONCURRENCY } from '../src/agent/loop.ts';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createAgentSession } from '../src/agent/session/session.ts';
import { type Emulator, startEmulator } from '../test/emulator/server.ts';

// One assistant turn of 6 Reads + 2 Greps over a real tree (a copy of three packages from
// node_modules: ~4,600 files, 38 MB), run one by one (readConcurrency 1, the baseline) and together
// (the default cap), through a real session and the real SDK against the emulator. Timed from the
// turn's first tool_start to its last tool_end; medians of RUNS alternating runs after a warm-up.

const RUNS = 7;
const PACKAGES = ['zod', '@anthropic-ai', 'ajv'];
const READS = [
  'zod/v4/core/schemas.js',
  'zod/v4/classic/schemas.js',
  '@anthropic-ai/sdk/client.js',
  '@anthropic-ai/sdk/resources/messages/messages.d.ts',
  'ajv/dist/core.js',
  'ajv/lib/core.ts',
];
const GREPS = ['export (async )?function', 'TODO|FIXME'];

function turn() {
  const use = (name: string, input: Record<string, unknown>) => ({ type: 'tool_use' as const, name, input });
  return [
    ...READS.slice(0, 3).map((p) => use('Read', { path: p })),
    use('Grep', { pattern: GREPS[0] }),
    ...READS.slice(3).map((p) => use('Read', { path: p })),
    use('Grep', { pattern: GREPS[1] }),
  ];
}

interface TurnTime {
  /** First tool_start to last tool_end. */
  wall: number;
  /** The calls' own durations added up: above `wall` when they overlapped. */
  callsSum: number;
}

async function timeTurn(emu: Emulator, workspace: string, readConcurrency: number): Promise<TurnTime> {
  emu.setScenario({ replies: [{ content: turn() }, { content: [{ type: 'text', text: 'done' }] }] });
  const session = createAgentSession({
    host: createNodeHost({ workspace, approvals: { ask: async () => 'deny' }, ripgrepPath: rgPath }),
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
    userMemoryFile: null,
    checkpoints: false,
    readConcurrency,
  });
  let first: number | undefined;
  let last = 0;
  let failed = 0;
  let callsSum = 0;
  session.subscribe((e) => {
    if (e.type === 'tool_start') first ??= performance.now();
    if (e.type === 'tool_end') {
      last = performance.now();
      callsSum += e.durationMs;
      if (e.result.status === 'error') failed++;
    }
  });
  const outcome = await session.prompt('look around');
  session.dispose();
  if (outcome.status !== 'finished') throw new Error(`run ${outcome.status}: ${outcome.error}`);
  if (failed > 0) throw new Error(`${failed} of the turn's calls failed: the bench would time errors`);
  return { wall: last - (first ?? last), callsSum };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export async function runReadConcurrencyBench() {
  const repoModules = path.resolve('node_modules');
  const workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-reads-')));
  const emu = await startEmulator({});
  try {
    for (const pkg of PACKAGES)
      fs.cpSync(path.join(repoModules, pkg), path.join(workspace, pkg), { recursive: true });
    await timeTurn(emu, workspace, 1); // warm-up: page cache, JIT
    const sequential: TurnTime[] = [];
    const concurrent: TurnTime[] = [];
    for (let i = 0; i < RUNS; i++) {
      sequential.push(await timeTurn(emu, workspace, 1));
      concurrent.push(await timeTurn(emu, workspace, READ_CONCURRENCY));
    }
    const seq = median(sequential.map((t) => t.wall));
    const con = median(concurrent.map((t) => t.wall));
    return {
      turn: '6 Read + 2 Grep',
      tree: `${PACKAGES.join(', ')} (copied from node_modules)`,
      runs_each: RUNS,
      cap: READ_CONCURRENCY,
      baseline_sequential_median_ms: Math.round(seq),
      concurrent_median_ms: Math.round(con),
      ratio_concurrent_to_sequential: Number((con / seq).toFixed(2)),
      speedup: Number((seq / con).toFixed(2)),
      // Sum of the calls' own durations over the turn's wall time: 1 = one at a time.
      overlap_sequential: Number(median(sequential.map((t) => t.callsSum / t.wall)).toFixed(2)),
      overlap_concurrent: Number(median(concurrent.map((t) => t.callsSum / t.wall)).toFixed(2)),
      sequential_runs_ms: sequential.map((t) => Math.round(t.wall)),
      concurrent_runs_ms: concurrent.map((t) => Math.round(t.wall)),
      cores: os.cpus().length,
      load_average_1m: Number(os.loadavg()[0]!.toFixed(2)),
    };
  } finally {
    await emu.close();
    fs.rmSync(workspace, { recursive: true, force: true });
  }
}
