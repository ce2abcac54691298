import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

// How a command's whole process tree is stopped when it runs WITHOUT the OS sandbox (`--sandbox
// off`, no bubblewrap, an approved outside_sandbox run). A process group and an environment marker
// are not enough: `setsid sh -c 'exec env -i sleep 300' &` leaves both. Probed once per process, best
// first:
// - cgroup: a child cgroup v2 of Keel's own per command (where Keel may write it: root, or a
//   systemd-delegated user session); the command moves itself in before it starts anything, and
//   cgroup.kill stops everything in it, however it detached. Nothing else changes for the command.
// - pidns: a PID namespace through util-linux `unshare` (root: `--pid`; others: in a user namespace
//   mapping the user to itself, where unprivileged user namespaces are allowed). When the command's
//   shell ends, or `unshare` is killed, the kernel kills every process in it. Inside, PIDs are the
//   namespace's own; in a user namespace, setuid programs (sudo) gain nothing and other users' files
//   show as nobody.
// - group: the process group and the marker only (macOS, Windows, containers without either).
// The bwrap path needs none of this: bubblewrap gives each command its own PID namespace and
// --die-with-parent.

export type TreeTier = 'cgroup' | 'pidns' | 'group';

export interface TreeStatus {
  readonly tier: TreeTier;
  /** One line for `keel doctor`. */
  readonly detail: string;
  readonly checks: readonly { readonly name: string; readonly ok: boolean; readonly detail: string }[];
  /** cgroup: Keel's own cgroup folder; pidns: the unshare argv up to the command. */
  readonly cgroupDir?: string;
  readonly unshare?: readonly string[];
}

const CGROUP_PREFIX = `keel-`;

function cgroupOfSelf(): string | undefined {
  let line: string | undefined;
  let mounts: string;
  try {
    line = fs
      .readFileSync('/proc/self/cgroup', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return undefined;
  }
  const own = line?.slice(3).trim();
  if (!own) return undefined;
  for (const m of mounts.split('\n')) {
    const [left, right] = m.split(' - ');
    if (!left || !right?.startsWith('cgroup2 ')) continue;
    const fields = left.split(' ');
    const root = fields[3];
    const mountPoint = fields[4];
    if (!root || !mountPoint) continue;
    const rel = path.posix.relative(root, own);
    if (rel.startsWith('..')) continue;
    return path.join(mountPoint.replace(/\\040/g, ' '), rel);
  }
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function killCgroup(dir: string): void {
  try {
    fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
    return;
  } catch {
    // Before Linux 5.14: one by one.
  }
  for (const pid of readProcs(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function readProcs(dir: string): number[] {
  try {
    return fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Cgroups a Keel that died without cleaning up left behind (its pid is in the name). */
function sweepStale(base: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = new RegExp(`^${CGROUP_PREFIX}(\\d+)-`).exec(name)?.[1];
    if (!pid || Number(pid) === process.pid || alive(Number(pid))) continue;
    const dir = path.join(base, name);
    killCgroup(dir);
    try {
      fs.rmdirSync(dir);
    } catch {
      // still emptying; the next sweep gets it
    }
  }
}

function probeCgroup(): { ok: boolean; detail: string; dir?: string } {
  const base = cgroupOfSelf();
  if (!base) return { ok: false, detail: 'no cgroup v2 hierarchy for this process' };
  const probe = path.join(base, `${CGROUP_PREFIX}${process.pid}-probe`);
  try {
    fs.mkdirSync(probe);
  } catch (error) {
    return {
      ok: false,
      detail: `cannot create a cgroup under ${base} (${(error as NodeJS.ErrnoException).code})`,
    };
  }
  try {
    // The real thing: a process moving itself in, as every command will.
    const moved = spawnSync('/bin/sh', ['-c', 'echo $$ > "$1"', 'keel', path.join(probe, 'cgroup.procs')], {
      stdio: 'ignore',
      timeout: 5000,
    });
    if (moved.status !== 0) return { ok: false, detail: `cannot move a process into a cgroup under ${base}` };
    return { ok: true, detail: `a cgroup v2 per command under ${base}`, dir: base };
  } finally {
    try {
      fs.rmdirSync(probe);
    } catch {
      // the probe's shell may still be leaving
    }
  }
}

function findUnshare(env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '/usr/bin:/bin').split(':').concat(['/usr/bin', '/bin'])) {
    const p = path.join(dir || '.', 'unshare');
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return undefined;
}

function probePidns(env: NodeJS.ProcessEnv): { ok: boolean; detail: string; argv?: string[] } {
  const unshare = findUnshare(env);
  if (!unshare) return { ok: false, detail: 'util-linux unshare not found' };
  const tail = ['--pid', '--fork', '--kill-child', '--mount-proc'];
  const uid = process.getuid?.() ?? -1;
  const gid = process.getgid?.() ?? -1;
  const variants: { argv: string[]; what: string }[] = [];
  if (uid === 0) variants.push({ argv: [unshare, ...tail], what: 'a PID namespace per command' });
  // --map-user/--map-group (util-linux ≥ 2.36), not --map-current-user (2.38): the user stays who they are.
  variants.push({
    argv: [unshare, '--user', `--map-user=${uid}`, `--map-group=${gid}`, ...tail],
    what: 'a PID namespace per command, in a user namespace (setuid programs such as sudo gain nothing there)',
  });
  const errors: string[] = [];
  for (const v of variants) {
    const r = spawnSync(v.argv[0]!, [...v.argv.slice(1), '--', '/bin/sh', '-c', 'exit 0'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 5000,
      encoding: 'utf8',
    });
    if (r.status === 0) return { ok: true, detail: v.what, argv: v.argv };
    errors.push((r.stderr || String(r.error ?? `exit ${r.status}`)).trim().split('\n')[0] ?? '');
  }
  return {
    ok: false,
    detail: `unshare refused (${errors.join('; ')}): unprivileged user namespaces are off?`,
  };
}

let cached: TreeStatus | undefined;

/** The best tier here; probed on first use (a few ms), then remembered for the process. */
export function probeProcessTree(
  options: { env?: NodeJS.ProcessEnv; platform?: NodeJS.Platform; fresh?: boolean } = {},
): TreeStatus {
  if (cached && !options.fresh) return cached;
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const forced = env.KEEL_PROCESS_TREE?.trim().toLowerCase();
  const checks: { name: string; ok: boolean; detail: string }[] = [];
  let status: TreeStatus | undefined;
  if (platform === 'linux') {
    if (!forced || forced === 'cgroup') {
      const cg = probeCgroup();
      checks.push({ name: 'cgroup', ok: cg.ok, detail: cg.detail });
      if (cg.ok && cg.dir) {
        sweepStale(cg.dir);
        status = { tier: 'cgroup', detail: cg.detail, checks, cgroupDir: cg.dir };
      }
    }
    if (!status && (!forced || forced === 'pidns')) {
      const ns = probePidns(env);
      checks.push({ name: 'pidns', ok: ns.ok, detail: ns.detail });
      if (ns.ok && ns.argv) status = { tier: 'pidns', detail: ns.detail, checks, unshare: ns.argv };
    }
  } else checks.push({ name: 'cgroup/pidns', ok: false, detail: `not available on ${platform}` });
  cached = status ?? {
    tier: 'group',
    detail:
      'process group and environment marker only: a child that leaves both (setsid, env -i) can outlive its command',
    checks,
  };
  return cached;
}

export interface ProcessTree {
  readonly file: string;
  readonly args: readonly string[];
  /** Variables to add to the spawned process's environment. */
  readonly env: Readonly<Record<string, string>>;
  /** The spawned process (its pid is the process group's). */
  attach(pid: number | undefined): void;
  /** Reaches what the process group and the marker cannot (the cgroup's members). */
  signal(signal: NodeJS.Signals): void;
  /** After the command: nothing of it is left; the cgroup folder goes away. */
  dispose(): void;
}

const live = new Set<ProcessTree>();
let exitHook = false;
let counter = 0;

function track(tree: ProcessTree): ProcessTree {
  live.add(tree);
  if (!exitHook) {
    exitHook = true;
    // A Keel that exits while a command runs takes the command's whole tree with it.
    process.on('exit', () => {
      for (const t of live) t.dispose();
    });
  }
  return tree;
}

function removeWhenEmpty(dir: string, triesLeft = 20): void {
  try {
    fs.rmdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EBUSY' || triesLeft === 0) return;
    // Killed processes take a moment to leave.
    setTimeout(() => removeWhenEmpty(dir, triesLeft - 1), 100).unref();
  }
}

/** `argv` run so that its whole process tree can be stopped (see the tiers above). */
export function processTreeFor(
  argv: readonly string[],
  status: TreeStatus = probeProcessTree(),
): ProcessTree {
  let pid: number | undefined;
  if (status.tier === 'cgroup' && status.cgroupDir) {
    const dir = path.join(status.cgroupDir, `${CGROUP_PREFIX}${process.pid}-${++counter}`);
    try {
      fs.mkdirSync(dir);
    } catch {
      return processTreeFor(argv, { ...status, tier: 'group' });
    }
    let disposed = false;
    return track({
      file: '/bin/sh',
      // Into the cgroup first, then the command: nothing it starts can be outside.
      args: [
        '-c',
        'echo $$ > "$1" 2>/dev/null; shift; exec "$@"',
        'keel',
        path.join(dir, 'cgroup.procs'),
        ...argv,
      ],
      env: {},
      attach: () => {},
      signal(signal) {
        if (signal === 'SIGKILL') return killCgroup(dir);
        for (const member of readProcs(dir)) {
          try {
            process.kill(member, signal);
          } catch {
            // gone
          }
        }
      },
      dispose() {
        if (disposed) return;
        disposed = true;
        live.delete(this);
        killCgroup(dir);
        removeWhenEmpty(dir);
      },
    });
  }
  if (status.tier === 'pidns' && status.unshare) {
    const [file, ...pre] = status.unshare;
    return track({
      file: file!,
      // PID 1 of the namespace ignores signals it has no handler for: a shell with a TERM trap
      // stays PID 1 (so the command keeps its usual signals) and passes on the command's status.
      // The last argument (the command text) travels in the environment, so that unshare and that
      // shell do not show it in their command lines (`ps`, pgrep): only the command itself does.
      args: [
        ...pre,
        '--',
        '/bin/sh',
        '-c',
        'trap : TERM; last=$KEEL_TREE_LAST; unset KEEL_TREE_LAST; "$@" "$last"',
        'keel',
        ...argv.slice(0, -1),
      ],
      env: { KEEL_TREE_LAST: argv.at(-1) ?? '' },
      attach: (p) => {
        pid = p;
      },
      signal: () => {},
      dispose() {
        live.delete(this);
        // unshare gone → its child (the namespace's PID 1) is killed → so is everything inside.
        killGroup(pid);
      },
    });
  }
  return track({
    file: argv[0]!,
    args: argv.slice(1),
    env: {},
    attach: (p) => {
      pid = p;
    },
    signal: () => {},
    dispose() {
      live.delete(this);
      killGroup(pid);
    },
  });
}

/** SIGKILL to a process group, if it still exists. */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
