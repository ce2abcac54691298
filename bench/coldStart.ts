import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// CLI cold start, wall (and CPU) time of whole processes as a user runs them, against `node -e 0` measured in
// the same run (interleaved, so machine load hits all three alike). Goal: ≤ 2× the baseline.
//   - `keel tool LS '{"path":"."}'` in this repository (bin/keel.mjs → dist/cli.mjs, what `keel` runs);
//   - `keel run --demo`: the bundled emulator, a scratch git repo and the scripted tour (5 model
//     turns: LS, 2 Reads, an Edit, the answer, then the diff). Its phases are reported apart, from
//     stderr: the banner (emulator up, scratch repo made with 3 git commands), the session line
//     (sandbox probed, session ready: the start-up proper), the first tool call (the first model
//     reply has streamed) and the exit.
// A second baseline puts the demo's goal in proportion: the floor under ANY process that answers
// through the model SDK — bench/sdkFloorChild.mjs, a bare script that imports @anthropic-ai/sdk and
// streams one reply from a canned loopback server, no Keel code — timed bundled the way Keel bundles
// it (esbuild, one ES module file, built here into a temp dir) and as the SDK ships (363 files).

const RUNS = 7;
const repo = path.resolve(import.meta.dirname, '..');
const keel = path.join(repo, 'bin', 'keel.mjs');

// Each process runs under bash's `time`: its real time (no bash start-up in it) and its CPU time
// (user + sys), which machine load distorts far less than wall time on a shared, busy machine.
const TIMED = 'TIMEFORMAT="@@time %3R %3U %3S"; time "$@"';

interface Timed {
  wall: number;
  cpu: number;
}

function parseTime(stderr: string): Timed {
  const m = /@@time (\d+\.\d+) (\d+\.\d+) (\d+\.\d+)\s*$/.exec(stderr);
  if (!m) throw new Error(`no timing in: ${stderr.slice(-300)}`);
  return { wall: Number(m[1]) * 1000, cpu: (Number(m[2]) + Number(m[3])) * 1000 };
}

function timed(args: string[]): Timed {
  const run = spawnSync('bash', ['-c', TIMED, 'bash', process.execPath, ...args], {
    cwd: repo,
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  return parseTime(run.stderr);
}

interface DemoPhases {
  banner: number;
  session: number;
  firstTool: number;
  exit: number;
  cpu: number;
}

function demo(): Promise<DemoPhases> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn('bash', ['-c', TIMED, 'bash', process.execPath, keel, 'run', '--demo'], {
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
      const { wall: exit, cpu } = parseTime(stderr);
      resolve({
        banner: at.banner ?? exit,
        session: at.session ?? exit,
        firstTool: at.firstTool ?? exit,
        exit,
        cpu,
      });
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The SDK floor script bundled as Keel bundles its CLI (into `dir`, removed by the caller). */
async function bundleSdkFloor(dir: string): Promise<string> {
  const esbuild = await import('esbuild');
  const outfile = path.join(dir, 'sdkFloor.mjs');
  await esbuild.build({
    entryPoints: [path.join(repo, 'bench', 'sdkFloorChild.mjs')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    banner: {
      js: "import { createRequire as __keelCreateRequire } from 'node:module'; const require = __keelCreateRequire(import.meta.url);",
    },
  });
  return outfile;
}

export async function runColdStartBench() {
  if (!fs.existsSync(path.join(repo, 'dist', 'cli.mjs'))) {
    const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: repo, stdio: 'inherit' });
    if (build.status !== 0) throw new Error('npm run build failed');
  }
  const floorDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-sdk-floor-'));
  try {
    return await measure(await bundleSdkFloor(floorDir));
  } finally {
    fs.rmSync(floorDir, { recursive: true, force: true });
  }
}

async function measure(sdkFloorBundled: string) {
  const sdkFloorAsShipped = path.join(repo, 'bench', 'sdkFloorChild.mjs');
  const baseline: Timed[] = [];
  const ls: Timed[] = [];
  const phases: DemoPhases[] = [];
  const floorBundled: Timed[] = [];
  const floorShipped: Timed[] = [];
  // One warm-up of each (disk cache), then interleaved runs.
  timed(['-e', '0']);
  timed([keel, 'tool', 'LS', '{"path":"."}']);
  await demo();
  timed([sdkFloorBundled]);
  timed([sdkFloorAsShipped]);
  for (let i = 0; i < RUNS; i++) {
    baseline.push(timed(['-e', '0']));
    ls.push(timed([keel, 'tool', 'LS', '{"path":"."}']));
    phases.push(await demo());
    floorBundled.push(timed([sdkFloorBundled]));
    floorShipped.push(timed([sdkFloorAsShipped]));
  }
  const base = median(baseline.map((t) => t.wall));
  const baseCpu = median(baseline.map((t) => t.cpu));
  const figure = (xs: number[]) => ({
    median_ms: Math.round(median(xs)),
    ratio: Number((median(xs) / base).toFixed(2)),
  });
  const cpuFigure = (xs: number[]) => ({
    cpu_median_ms: Math.round(median(xs)),
    cpu_ratio: Number((median(xs) / baseCpu).toFixed(2)),
  });
  const nodeVersion = process.versions.node;
  return {
    runs_each: RUNS,
    node: nodeVersion,
    compile_cache: nodeVersion.split('.').map(Number)[0]! >= 22 ? 'available (on)' : 'not in this Node',
    baseline_node_e_0_ms: Math.round(base),
    baseline_node_e_0_cpu_ms: Math.round(baseCpu),
    keel_tool_LS: {
      ...figure(ls.map((t) => t.wall)),
      ...cpuFigure(ls.map((t) => t.cpu)),
      goal_ratio: 2,
    },
    keel_run_demo: {
      total: {
        ...figure(phases.map((p) => p.exit)),
        ...cpuFigure(phases.map((p) => p.cpu)),
        goal_ratio: 2,
      },
      banner_emulator_and_scratch_repo_ready: figure(phases.map((p) => p.banner)),
      session_ready_startup: figure(phases.map((p) => p.session)),
      first_tool_call_after_first_model_reply: figure(phases.map((p) => p.firstTool)),
      total_vs_sdk_floor_bundled: Number(
        (median(phases.map((p) => p.exit)) / median(floorBundled.map((t) => t.wall))).toFixed(2),
      ),
    },
    // No Keel code: import the SDK, stream one reply from loopback, exit (ratios against node -e 0).
    sdk_floor_one_streamed_call: {
      bundled_like_keel: figure(floorBundled.map((t) => t.wall)),
      as_the_sdk_ships: figure(floorShipped.map((t) => t.wall)),
    },
    baseline_runs_ms: baseline.map((t) => Math.round(t.wall)),
    ls_runs_ms: ls.map((t) => Math.round(t.wall)),
    cores: os.cpus().length,
    load_average_1m: Number(os.loadavg()[0]!.toFixed(2)),
  };
}
