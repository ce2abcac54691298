import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { SandboxPort } from '../host.ts';

// Every stdio MCP server process starts here, in `spawnMcpServer` — one function, so an OS sandbox
// can wrap it (the command sandbox does the same for Bash). The transport below speaks the MCP stdio
// framing (one JSON-RPC message per line) over that process. It only imports SDK *types*: this file
// is loaded by the lazily imported connection module.

export interface McpSpawnSpec {
  readonly command: string;
  readonly args: readonly string[];
  /** The config's `env`, added to a minimal inherited environment. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
}

// What a server inherits from Keel's own environment (as the MCP SDK does): enough to find programs
// and a home, never Keel's API keys or the user's other secrets. The config's `env` adds the rest.
const INHERITED_ENV = ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'LANG', 'TMPDIR'];

export function serverEnvironment(extra: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of INHERITED_ENV) {
    const value = process.env[key];
    if (value !== undefined && !value.startsWith('()')) env[key] = value;
  }
  return { ...env, ...extra };
}

// Servers run in their own process group (so a stop kills their helpers too), which also means they
// would outlive a Keel that exits without stopping them: the last resort below kills what is left.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Where sandboxed servers keep npm's cache (`npx -y some-server` must write one): Keel's own, never the
 * user's `~/.npm`, which unsandboxed npm runs would later trust.
 */
export function sandboxedNpmCache(home: string = os.homedir()): string {
  return path.join(home, '.keel', 'npm-cache');
}

/**
 * The one place a stdio MCP server process is created. With an OS sandbox it runs confined like a
 * command: writes only in the workspace, its temp dir and Keel's npm cache; network only through the
 * domain proxy (or none); secrets unreadable.
 */
export function spawnMcpServer(spec: McpSpawnSpec, sandbox?: SandboxPort): ChildProcess {
  if (sandbox?.info.tier === 'none' && sandbox.info.failIfUnavailable)
    throw new Error(
      `not started: no OS sandbox is available (${sandbox.info.reason ?? 'unavailable'}) and keel.sandbox.failIfUnavailable is set`,
    );
  const env = serverEnvironment(spec.env);
  let wrapped: ReturnType<SandboxPort['wrap']>;
  if (sandbox && sandbox.info.tier !== 'none') {
    const npmCache = sandboxedNpmCache();
    fs.mkdirSync(npmCache, { recursive: true });
    wrapped = sandbox.wrap([spec.command, ...spec.args], { cwd: spec.cwd, writable: [npmCache] });
    if (wrapped) Object.assign(env, { npm_config_cache: npmCache }, wrapped.env);
  }
  let child: ChildProcess;
  try {
    child = spawn(wrapped?.file ?? spec.command, [...(wrapped?.args ?? spec.args)], {
      cwd: spec.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe', ...(wrapped?.fds ?? [])],
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
  } finally {
    wrapped?.release();
  }
  live.add(child);
  child.on('close', () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const c of live) killTree(c, 'SIGKILL');
    });
  }
  return child;
}

const STDERR_TAIL_CHARS = 4000;

/** Kills the server's whole process group (it may have started helpers of its own). */
function killTree(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    if (process.platform !== 'win32') process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

export interface StdioServerTransport extends Transport {
  /** The last few KB the server wrote to stderr (for "failed to start" and "crashed" errors). */
  stderrTail(): string;
  readonly pid: number | undefined;
  /** How the process ended, once it has. */
  exitDescription(): string | undefined;
}

export function createStdioServerTransport(
  spec: McpSpawnSpec,
  spawnServer: (spec: McpSpawnSpec) => ChildProcess = spawnMcpServer,
): StdioServerTransport {
  // (A sandboxed server: pass `(s) => spawnMcpServer(s, sandbox)`.)
  let child: ChildProcess | undefined;
  let buffer = '';
  let stderr = '';
  let exit: string | undefined;
  let closed = false;

  const transport: StdioServerTransport = {
    get pid() {
      return child?.pid;
    },
    stderrTail: () => stderr,
    exitDescription: () => exit,
    start() {
      return new Promise<void>((resolve, reject) => {
        let started = false;
        child = spawnServer(spec);
        child.on('error', (error) => {
          exit = `could not be started: ${error.message}`;
          if (!started) reject(new Error(`${spec.command}: ${error.message}`));
          else transport.onerror?.(error);
        });
        child.on('spawn', () => {
          started = true;
          resolve();
        });
        child.on('exit', (code, signal) => {
          exit = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        });
        child.on('close', () => {
          if (!closed) {
            closed = true;
            transport.onclose?.();
          }
        });
        child.stdin?.on('error', (error) => transport.onerror?.(error));
        child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
          stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
        });
        child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
          buffer += chunk;
          for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
            const line = buffer.slice(0, nl).replace(/\r$/, '');
            buffer = buffer.slice(nl + 1);
            if (!line.trim()) continue;
            let message: JSONRPCMessage;
            try {
              message = JSON.parse(line) as JSONRPCMessage;
            } catch {
              // Servers sometimes log to stdout; that is noise, not a protocol message.
              stderr = `${stderr}${line}\n`.slice(-STDERR_TAIL_CHARS);
              continue;
            }
            transport.onmessage?.(message);
          }
        });
      });
    },
    send(message) {
      return new Promise<void>((resolve, reject) => {
        const stdin = child?.stdin;
        if (!stdin || stdin.destroyed) {
          reject(new Error('the server is not running'));
          return;
        }
        stdin.write(`${JSON.stringify(message)}\n`, (error) => (error ? reject(error) : resolve()));
      });
    },
    async close() {
      const proc = child;
      if (!proc) return;
      proc.stdin?.end();
      if (proc.exitCode === null && proc.signalCode === null) {
        const gone = new Promise<void>((resolve) => proc.once('close', () => resolve()));
        killTree(proc, 'SIGTERM');
        const timer = setTimeout(() => killTree(proc, 'SIGKILL'), 2000);
        await gone;
        clearTimeout(timer);
      }
    },
  };
  return transport;
}
