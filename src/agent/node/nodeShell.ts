import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import type { SandboxDenial, SandboxPort, ShellPort, ShellRunOptions, ShellRunResult } from '../host.ts';
import { traceEnv } from '../telemetry/propagation.ts';
import { type ProcessTree, processTreeFor } from './processTree.ts';

// Runs commands under bash, each in its own process group and tagged with a unique environment
// marker. Stopping (abort, timeout, or the shell exiting with stragglers left behind) sends SIGTERM to
// the group and to every process carrying the marker — which also finds children that escaped the
// group with setsid — then SIGKILL after a grace period. Outside the OS sandbox the command also runs
// in a cgroup or PID namespace where the machine allows one (processTree.ts), which reaches children
// that shed both the group and the marker. stdin is /dev/null: an interactive program that slips
// through reads EOF instead of hanging. Output kept in memory is capped (head + tail).

export interface NodeShellOptions {
  /** Time between SIGTERM and SIGKILL. */
  readonly graceMs?: number;
  /** Per stream; beyond it the middle of the output is dropped (head and tail kept). */
  readonly maxBufferBytes?: number;
  /** After the shell exits, how long background children may keep the pipes open. */
  readonly lingerMs?: number;
  /** The session's OS sandbox: every command runs inside it unless a run asks for 'off'. */
  readonly sandbox?: SandboxPort;
}

export const RUN_MARKER = 'KEEL_RUN_ID';

const DEFAULTS = { graceMs: 2000, maxBufferBytes: 8 * 1024 * 1024, lingerMs: 200 };

/** Keeps the first and last half of a stream once it grows beyond the cap. */
function createCappedBuffer(cap: number) {
  let head = '';
  let tail = '';
  let dropped = 0;
  const half = Math.floor(cap / 2);
  return {
    push(chunk: string) {
      if (head.length < half) {
        const room = half - head.length;
        head += chunk.slice(0, room);
        chunk = chunk.slice(room);
      }
      if (chunk.length === 0) return;
      tail += chunk;
      if (tail.length > half) {
        dropped += tail.length - half;
        tail = tail.slice(tail.length - half);
      }
    },
    text(): string {
      if (dropped === 0) return head + tail;
      return `${head}\n[… ${dropped} characters dropped from the middle of this output …]\n${tail}`;
    },
  };
}

/** PIDs (other than ours) whose environment carries the marker. Linux only; elsewhere: none. */
export function findMarkedProcesses(marker: string): number[] {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const needle = Buffer.from(`${RUN_MARKER}=${marker}\0`);
  const found: number[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const env = fs.readFileSync(`/proc/${name}/environ`);
      if (env.includes(needle)) found.push(pid);
    } catch {
      // Gone, or not ours to read: either way not ours to kill.
    }
  }
  return found;
}

/** How often a long sandboxed command is checked for run-later files it left (see SandboxedArgv.sweep). */
const SWEEP_MS = 2000;

function signalAll(
  groupPid: number | undefined,
  marker: string,
  signal: NodeJS.Signals,
  tree: ProcessTree | undefined,
): void {
  tree?.signal(signal);
  if (groupPid !== undefined) {
    try {
      process.kill(-groupPid, signal);
    } catch {
      // The group is already gone.
    }
  }
  for (const pid of findMarkedProcesses(marker)) {
    try {
      process.kill(pid, signal);
    } catch {
      // Exited in the meantime.
    }
  }
}

export function createNodeShell(options: NodeShellOptions = {}): ShellPort {
  const { graceMs, maxBufferBytes, lingerMs } = { ...DEFAULTS, ...options };
  const sandbox = options.sandbox;
  return {
    ...(sandbox ? { sandbox } : {}),
    run(run: ShellRunOptions): Promise<ShellRunResult> {
      const started = Date.now();
      const marker = randomUUID();
      const mode = run.sandbox ?? 'on';
      if (sandbox && mode !== 'off' && sandbox.info.tier === 'none' && sandbox.info.failIfUnavailable) {
        return Promise.resolve({
          exitCode: 126,
          signal: null,
          stdout: '',
          stderr: `keel: not run — no OS sandbox is available (${sandbox.info.reason ?? 'unavailable'}) and keel.sandbox.failIfUnavailable is set.\n`,
          timedOut: false,
          aborted: false,
          durationMs: 0,
        });
      }
      // An argv array, never a re-quoted string: what was checked is exactly what runs. `--norc`:
      // bash runs ~/.bashrc for `-c` when its stdin is a socket (it takes it for rshd/sshd), and
      // Node's piped stdin (a hook's input) is a socketpair — the user's rc file (a pyenv init, a
      // prompt that waits) must not run, nor slow or hang every hook.
      const argv = ['/bin/bash', '--norc', '-c', run.command];
      const wrapped =
        sandbox && mode !== 'off'
          ? sandbox.wrap(argv, {
              cwd: run.cwd,
              network: mode === 'network',
              ...(run.writableRoots ? { roots: run.writableRoots } : {}),
            })
          : undefined;
      // bubblewrap already gives the command its own PID namespace, killed with it.
      const tree = wrapped ? undefined : processTreeFor(argv);
      return new Promise((resolve) => {
        let child: ReturnType<typeof spawn>;
        try {
          child = spawn(wrapped?.file ?? tree!.file, [...(wrapped?.args ?? tree!.args)], {
            cwd: run.cwd,
            env: { ...run.env, ...traceEnv(), ...wrapped?.env, ...tree?.env, [RUN_MARKER]: marker },
            detached: true,
            stdio: [run.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', ...(wrapped?.fds ?? [])],
          });
        } catch (error) {
          tree?.dispose();
          throw error;
        } finally {
          wrapped?.release();
        }
        tree?.attach(child.pid);
        if (run.stdin !== undefined && child.stdin) {
          // A command that never reads its input exits with the pipe full or closed: not an error.
          child.stdin.on('error', () => {});
          child.stdin.end(run.stdin);
        }
        const stdout = createCappedBuffer(maxBufferBytes);
        const stderr = createCappedBuffer(maxBufferBytes);
        let timedOut = false;
        let aborted = false;
        let exit: { code: number | null; signal: string | null } | undefined;
        let settled = false;
        const timers: NodeJS.Timeout[] = [];

        // A long command (a background job) is checked while it runs too: a `.vscode/settings.json`
        // it creates would otherwise be acted on by the editor before the command ends.
        const swept: SandboxDenial[] = [];
        if (wrapped?.sweep) {
          const sweep = wrapped.sweep.bind(wrapped);
          const timer = setInterval(() => {
            try {
              swept.push(...sweep());
            } catch {
              // The final settle() reports what went wrong.
            }
          }, SWEEP_MS);
          timer.unref();
          timers.push(timer);
        }

        let stopping = false;
        const stop = () => {
          if (stopping) return;
          stopping = true;
          signalAll(child.pid, marker, 'SIGTERM', tree);
          timers.push(
            setTimeout(() => {
              signalAll(child.pid, marker, 'SIGKILL', tree);
              // Something we could not kill may still hold the pipes: stop waiting for it.
              timers.push(setTimeout(() => finish(), 1000));
            }, graceMs),
          );
        };

        const finish = () => {
          if (settled) return;
          settled = true;
          for (const t of timers) clearTimeout(t);
          run.signal?.removeEventListener('abort', onAbort);
          child.stdout?.destroy();
          child.stderr?.destroy();
          // Nothing started by this command outlives it.
          signalAll(child.pid, marker, 'SIGKILL', tree);
          tree?.dispose();
          const out = stdout.text();
          const err = stderr.text();
          const denials: SandboxDenial[] = [...swept];
          if (wrapped && sandbox) {
            try {
              denials.push(...wrapped.settle({ failed: exit?.code !== 0 }));
            } catch (error) {
              denials.push({
                kind: 'write',
                target: '',
                detail: `could not check what the command left behind: ${String(error)}`,
              });
            }
            if (exit?.code !== 0)
              denials.push(
                ...sandbox.explain({
                  stdout: out,
                  stderr: err,
                  command: run.command,
                  cwd: run.cwd,
                  network: mode === 'network',
                }),
              );
          }
          resolve({
            exitCode: exit?.code ?? null,
            signal: exit?.signal ?? null,
            stdout: out,
            stderr: err,
            timedOut,
            aborted,
            durationMs: Date.now() - started,
            ...(wrapped ? { sandboxed: true } : {}),
            ...(denials.length > 0 ? { denials } : {}),
          });
        };

        const onAbort = () => {
          aborted = true;
          stop();
        };
        timers.push(
          setTimeout(() => {
            timedOut = true;
            stop();
          }, run.timeoutMs),
        );
        if (run.signal?.aborted) onAbort();
        else run.signal?.addEventListener('abort', onAbort, { once: true });

        child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
          stdout.push(chunk);
          run.onOutput?.(chunk, 'stdout');
        });
        child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
          stderr.push(chunk);
          run.onOutput?.(chunk, 'stderr');
        });
        child.on('error', (error) => {
          stderr.push(String(error));
          finish();
        });
        child.on('exit', (code, signal) => {
          exit = { code, signal };
          // Background children may hold the pipes open; give them a moment to flush, then stop them.
          timers.push(setTimeout(() => stop(), lingerMs));
        });
        child.on('close', () => finish());
      });
    },
  };
}
