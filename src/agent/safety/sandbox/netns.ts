import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

// The session's network namespace for sandboxed commands. One long-lived holder per session —
// `bwrap --unshare-user --unshare-net … socat TCP-LISTEN:127.0.0.1:PORT UNIX-CONNECT:proxy.sock` —
// owns a namespace with nothing in it but loopback and that bridge to Keel's proxy. Each command's
// own bwrap is started inside it (`nsenter --user --net` on descriptors of the holder's namespaces,
// so a recycled PID can never send a command into another namespace) instead of `--unshare-net`.
// Why not a bridge per command: the bridge needs AF_UNIX, which the command's seccomp filter
// refuses; a nested bwrap cannot mount /proc under bwrap's own /proc; so the bridge lives outside
// the commands' sandboxes, where no command can see (new PID namespace) or trace it.

export const PROXY_PORT = 3128;

export interface NetworkHolder {
  /** Waits (synchronously, once) until the bridge listens; undefined = ready, else why not. */
  ready(): string | undefined;
  /** Descriptors of the holder's user and network namespaces (valid after ready()). */
  readonly nsFds: readonly number[];
  dispose(): void;
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

const LISTEN_LINE = (port: number) =>
  new RegExp(`^\\s*\\d+: 0100007F:${port.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A`, 'm');

export function startNetworkHolder(options: {
  readonly bwrap: string;
  readonly socat: string;
  readonly socketPath: string;
  readonly dir: string;
  readonly timeoutMs?: number;
}): NetworkHolder {
  const infoFile = path.join(options.dir, 'netns-info.json');
  const logFile = path.join(options.dir, 'netns-bridge.log');
  const infoFd = fs.openSync(infoFile, 'w');
  const logFd = fs.openSync(logFile, 'w');
  let child: ChildProcess | undefined;
  let failure: string | undefined;
  try {
    child = spawn(
      options.bwrap,
      [
        '--unshare-user',
        // Root of its own user namespace: unprivileged bwrap would otherwise nest a second one for
        // the caller's uid, and the network namespace would belong to the outer one, which nsenter
        // (joining the inner) could not enter.
        '--uid',
        '0',
        '--gid',
        '0',
        '--unshare-net',
        '--unshare-pid',
        '--unshare-ipc',
        '--die-with-parent',
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        '--info-fd',
        '3',
        '--',
        options.socat,
        `TCP-LISTEN:${PROXY_PORT},bind=127.0.0.1,fork,reuseaddr`,
        `UNIX-CONNECT:${options.socketPath}`,
      ],
      { stdio: ['ignore', 'ignore', logFd, infoFd], detached: true },
    );
    child.on('error', (error) => {
      failure = `the network bridge could not start: ${error.message}`;
    });
    child.on('exit', (code, signal) => {
      failure ??= `the network bridge exited (${signal ?? `code ${code}`})`;
    });
    child.unref();
  } finally {
    fs.closeSync(infoFd);
    fs.closeSync(logFd);
  }
  const nsFds: number[] = [];
  let settled: { reason: string | undefined } | undefined;

  function waitReady(): string | undefined {
    const deadline = Date.now() + (options.timeoutMs ?? 5000);
    let pid: number | undefined;
    while (Date.now() < deadline) {
      if (failure) return failure;
      if (pid === undefined) {
        try {
          const info = JSON.parse(fs.readFileSync(infoFile, 'utf8')) as { 'child-pid'?: number };
          pid = info['child-pid'];
        } catch {
          // Not written yet.
        }
      }
      if (pid !== undefined) {
        try {
          if (LISTEN_LINE(PROXY_PORT).test(fs.readFileSync(`/proc/${pid}/net/tcp`, 'utf8'))) {
            nsFds.push(fs.openSync(`/proc/${pid}/ns/user`, 'r'), fs.openSync(`/proc/${pid}/ns/net`, 'r'));
            return undefined;
          }
        } catch (error) {
          return `the network bridge is gone (${(error as Error).message})`;
        }
      }
      sleepMs(2);
    }
    let log = '';
    try {
      log = fs.readFileSync(logFile, 'utf8').trim().split('\n')[0] ?? '';
    } catch {
      // No log.
    }
    return `the network bridge did not start in time${log ? ` (${log})` : ''}`;
  }

  return {
    nsFds,
    ready() {
      settled ??= { reason: waitReady() };
      return settled.reason;
    },
    dispose() {
      for (const fd of nsFds.splice(0)) fs.closeSync(fd);
      if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
    },
  };
}
