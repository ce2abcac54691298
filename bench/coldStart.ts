import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// CLI cold start, wall time of whole processes as a user runs them, against `node -e 0` measured in
// the same run (interleaved, so machine load hits all three alike). Goal: ≤ 2× the baseline.
//   - `keel tool LS '{"path":"."}'` in this repository (bin/keel.mjs → dist/cli.mjs, what `keel` runs);
//   - `keel run --demo`: the bundled emulator, a scratch git repo and the scripted tour (5 model
//     turns: LS, 2 Reads, an Edit, the answer, then the diff). Its phases are reported apart, from
//     stderr: the banner (emulator up, scratch repo made with 3 git commands), the session line
//     (sandbox probed, session ready: the start-up proper), the first tool call (the first model
//     reply has streamed) and the exit.

const RUNS = 7;
const repo = path.resolve(import.meta.dirname, '..');
const keel = path.join(repo, 'bin', 'keel.mjs');

function wall(args: string[]): number {
  const started = performance.now();
  const run = spawnSync(process.execPath, args, { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = performance.now() - started;
  if (run.status !== 0) throw new Error(`${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  return ms;
}

interface DemoPhases {
  banner: number;
  session: number;
  firstTool: number;
  exit: number;
}

function demo(): Promise<DemoPhases> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [keel, 'run', '--demo'], {
      cwd: repo,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const at: Partial<DemoPhases> = {};
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const now = performance.now() - started;
      if (at.banner === undefined && stderr.includes('*** DEMO MODE')) at.banner = now;
      if (at.session === undefined && /keel: session \S+/.test(stderr)) at.session = now;
      if (at.firstTool === undefined && /^▸ /m.test(stderr)) at.firstTool = now;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`keel run --demo exited ${code}: ${stderr}`));
      const exit = performance.now() - started;
      resolve({
        banner: at.banner ?? exit,
        session: at.session ?? exit,
        firstTool: at.firstTool ?? exit,
        exit,
      });
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export async function runColdStartBench() {
  if (!fs.existsSync(path.join(repo, 'dist', 'cli.mjs'))) {
    const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: repo, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const baseline: number[] = [];
  const ls: number[] = [];
  const phases: DemoPhases[] = [];
  // One warm-up of each (disk cache), then interleaved runs.
  wall(['-e', '0']);
  wall([keel, 'tool', 'LS', '{"path":"."}']);
  await demo();
  for (let i = 0; i < RUNS; i++) {
    baseline.push(wall(['-e', '0']));
    ls.push(wall([keel, 'tool', 'LS', '{"path":"."}']));
    phases.push(await demo());
  }
  const base = median(baseline);
  const figure = (xs: number[]) => ({
    median_ms: Math.round(median(xs)),
    ratio: Number((median(xs) / base).toFixed(2)),
  });
  const nodeVersion = process.versions.node;
  return {
    runs_each: RUNS,
    node: nodeVersion,
    compile_cache: nodeVersion.split('.').map(Number)[0]! >= 22 ? 'available (on)' : 'not in this Node',
    baseline_node_e_0_ms: Math.round(base),
    keel_tool_LS: { ...figure(ls), goal_ratio: 2 },
    keel_run_demo: {
      total: { ...figure(phases.map((p) => p.exit)), goal_ratio: 2 },
      banner_emulator_and_scratch_repo_ready: figure(phases.map((p) => p.banner)),
      session_ready_startup: figure(phases.map((p) => p.session)),
      first_tool_call_after_first_model_reply: figure(phases.map((p) => p.firstTool)),
    },
    baseline_runs_ms: baseline.map(Math.round),
    ls_runs_ms: ls.map(Math.round),
    cores: os.cpus().length,
    load_average_1m: Number(os.loadavg()[0]!.toFixed(2)),
  };
}
