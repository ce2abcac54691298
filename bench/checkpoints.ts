// Checkpoint overhead per prompt on a 20k-file workspace.
// The workspace: 20,000 real files (hard links into this repository's node_modules) plus a small src/.
// Each prompt is a real session turn against the emulator: Bash writes a file, then the model answers.
// Measured in the same run: per-prompt wall time with checkpoints off (baseline), on with a full
// rescan around every command (`full`: the previous implementation) and on with the kept-up-to-date
// scan (`watch`: only what the kernel reported is re-stat'ed), the scan alone, and the emulator's
// own model-call latency. Printed: medians and ratios.
// Two layouts: node_modules ignored by .gitignore (a normal project: stat-only, no copies) and not
// ignored (worst case: every file is copied once by the first command, then only what changed).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createLiveScan } from '../src/agent/checkpoints/liveScan.ts';
import { DEFAULT_IGNORED_SIZE_CAP, scanWorkspace } from '../src/agent/checkpoints/scan.ts';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../src/agent/safety/approvals.ts';
import { createAgentSession } from '../src/agent/session/session.ts';
import { type ScriptedReply, startEmulator } from '../test/emulator/server.ts';

const FILES = Number(process.env.BENCH_FILES ?? 20_000);
const PROMPTS = Number(process.env.BENCH_PROMPTS ?? 15);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function linkTree(from: string, to: string, limit: number): number {
  let count = 0;
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (count >= limit) return;
      const abs = path.join(dir, e.name);
      const rel = path.relative(from, abs);
      if (e.isDirectory()) walk(abs);
      else if (e.isFile()) {
        fs.mkdirSync(path.join(to, path.dirname(rel)), { recursive: true });
        try {
          fs.linkSync(abs, path.join(to, rel));
        } catch {
          fs.copyFileSync(abs, path.join(to, rel));
        }
        count++;
      }
    }
  };
  walk(from);
  return count;
}

function makeWorkspace(ignored: boolean): { dir: string; files: number } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-ckpt-')));
  const files = linkTree(path.resolve('node_modules'), path.join(dir, 'node_modules'), FILES - 20);
  fs.mkdirSync(path.join(dir, 'src'));
  for (let i = 0; i < 19; i++)
    fs.writeFileSync(path.join(dir, 'src', `m${i}.ts`), `export const m${i} = ${i};\n`);
  fs.writeFileSync(path.join(dir, '.gitignore'), ignored ? 'node_modules/\n' : '# nothing ignored\n');
  return { dir, files: files + 20 };
}

/** The scan work around one command (refresh before + refresh after), with a real command between. */
async function scanPerCommand(workspace: string, detector: 'full' | 'watch'): Promise<number> {
  const stateDir = path.join(workspace, '.keel');
  const live = createLiveScan({
    root: workspace,
    skipDirs: [stateDir],
    ignoredSizeCap: DEFAULT_IGNORED_SIZE_CAP,
    fenceDir: path.join(stateDir, 'bench-fence'),
    detector,
  });
  try {
    await live.refresh(); // the session's first command walks the tree once either way
    const times: number[] = [];
    for (let i = 0; i < PROMPTS; i++) {
      const t0 = performance.now();
      await live.refresh();
      const t1 = performance.now();
      execFileSync('sh', ['-c', `echo ${i} > src/out.txt`], { cwd: workspace });
      const t2 = performance.now();
      const changes = await live.refresh();
      times.push(t1 - t0 + (performance.now() - t2));
      if (!changes.some((c) => c.rel === 'src/out.txt')) throw new Error(`${detector}: the write was missed`);
    }
    return median(times);
  } finally {
    live.dispose();
  }
}

type Mode = 'off' | 'full' | 'watch';

/** One session on its own emulator and workspace; its prompts are timed one at a time. */
async function startRunner(workspace: string, checkpoints: Mode) {
  const replies: ScriptedReply[] = [];
  for (let i = 0; i < PROMPTS; i++) {
    replies.push({
      content: [{ type: 'tool_use', name: 'Bash', input: { command: `echo ${i} > src/out.txt` } }],
    });
    replies.push({ content: [{ type: 'text', text: `done ${i}` }] });
  }
  const emu = await startEmulator({ scenario: { replies } });
  const host = createNodeHost({ workspace, approvals: createPolicyApprovals('all') });
  const session = createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'bench',
    baseURL: emu.url,
    userSkillsDir: null,
    checkpoints: checkpoints === 'off' ? (false as const) : { detector: checkpoints },
  });
  const modelMs: number[] = [];
  session.subscribe((e) => {
    if (e.type === 'model_call') modelMs.push(e.record.latency_ms);
  });
  const promptMs: number[] = [];
  let firstMs = 0;
  return {
    async prompt(i: number) {
      const t0 = performance.now();
      const outcome = await session.prompt(`step ${i}`);
      const ms = performance.now() - t0;
      if (outcome.status !== 'finished')
        throw new Error(`${checkpoints} prompt ${i}: ${outcome.status} ${outcome.error ?? ''}`);
      if (i === 0) firstMs = ms;
      else promptMs.push(ms);
    },
    async close() {
      session.dispose();
      await emu.close();
      return { firstMs, promptMs: median(promptMs), modelMs: median(modelMs) };
    },
  };
}

export async function runCheckpointBench() {
  const results: Record<string, unknown> = {};
  for (const ignored of [true, false]) {
    // One workspace per mode, prompts interleaved (off, full, watch, off, …): the machine's load
    // drifts, and interleaving spreads it over the three alike.
    const spaces = {
      off: makeWorkspace(ignored),
      full: makeWorkspace(ignored),
      watch: makeWorkspace(ignored),
    };
    const ws = spaces.watch;
    try {
      const scans: number[] = [];
      for (let i = 0; i < 7; i++) {
        const t0 = performance.now();
        scanWorkspace({
          root: ws.dir,
          skipDirs: [path.join(ws.dir, '.keel')],
          ignoredSizeCap: DEFAULT_IGNORED_SIZE_CAP,
        });
        scans.push(performance.now() - t0);
      }
      const scanFull = await scanPerCommand(ws.dir, 'full');
      const scanWatch = await scanPerCommand(ws.dir, 'watch');
      const modes: Mode[] = ['off', 'full', 'watch'];
      const runners = await Promise.all(modes.map((m) => startRunner(spaces[m].dir, m)));
      for (let i = 0; i < PROMPTS; i++) for (const r of runners) await r.prompt(i);
      const [off, full, watch] = await Promise.all(runners.map((r) => r.close()));
      if (!off || !full || !watch) throw new Error('a runner did not finish');
      const round = (n: number) => Math.round(n * 10) / 10;
      const ratio = (n: number) => Math.round(n * 1000) / 1000;
      const overheadFull = full.promptMs - off.promptMs;
      const overheadWatch = watch.promptMs - off.promptMs;
      results[ignored ? 'node_modules ignored' : 'nothing ignored'] = {
        files: ws.files,
        scan_once_median_ms: round(median(scans)),
        // The scan work around one command (before + after), measured alone: the figure.
        scan_per_command_median_ms_full_rescan_baseline: round(scanFull),
        scan_per_command_median_ms_incremental: round(scanWatch),
        scan_speedup: round(scanFull / Math.max(0.01, scanWatch)),
        prompt_median_ms_checkpoints_off: round(off.promptMs),
        emulator_model_call_median_ms: round(off.modelMs),
        scan_full_vs_emulator_turn_ratio: ratio(scanFull / Math.max(1, off.promptMs)),
        scan_incremental_vs_emulator_turn_ratio: ratio(scanWatch / Math.max(1, off.promptMs)),
        scan_incremental_vs_one_model_call_ratio: ratio(scanWatch / Math.max(0.1, off.modelMs)),
        goal_incremental_under_5_percent_of_turn: scanWatch / Math.max(1, off.promptMs) < 0.05,
        // Whole prompts (noisier: everything else a turn does on a loaded machine is in them too).
        prompt_median_ms_full_rescan_baseline: round(full.promptMs),
        prompt_median_ms_incremental: round(watch.promptMs),
        overhead_per_prompt_ms_full_rescan_baseline: round(overheadFull),
        overhead_per_prompt_ms_incremental: round(overheadWatch),
        overhead_full_vs_emulator_turn_ratio: ratio(overheadFull / Math.max(1, off.promptMs)),
        overhead_incremental_vs_emulator_turn_ratio: ratio(overheadWatch / Math.max(1, off.promptMs)),
        first_prompt_ms_off: round(off.firstMs),
        first_prompt_ms_full_rescan: round(full.firstMs),
        first_prompt_ms_incremental: round(watch.firstMs),
      };
    } finally {
      for (const space of Object.values(spaces)) fs.rmSync(space.dir, { recursive: true, force: true });
    }
  }
  return results;
}
