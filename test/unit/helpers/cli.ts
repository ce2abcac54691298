import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// Drives the BUILT `keel` command (bin/keel.mjs → dist/cli.mjs) as a user or CI would.
export const KEEL_BIN = path.resolve('bin/keel.mjs');

export interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

// Workspaces are removed when the test file's process exits: under `npm test` TMPDIR is one folder
// removed afterwards anyway, but a direct `node --test` run used to leave every one of them in /tmp.
const made: string[] = [];
process.on('exit', () => {
  for (const dir of made) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // A child still writing there: the OS temp cleaner gets it.
    }
  }
});

export function tempWorkspace(files: Record<string, string> = {}): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-cli-')));
  made.push(dir);
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

export function cliEnv(baseURL: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ANTHROPIC_API_KEY: 'test-key',
    ANTHROPIC_BASE_URL: baseURL,
    KEEL_RETRY_BASE_MS: '5',
    // A test that gives keel a home of its own gets Keel's user folder there too.
    ...(extra.HOME && !extra.KEEL_HOME ? { KEEL_HOME: path.join(extra.HOME, '.keel') } : {}),
    ...extra,
  };
}

export function startKeel(
  args: string[],
  env: NodeJS.ProcessEnv,
): ChildProcess & { result: Promise<CliRun> } {
  const child = spawn(process.execPath, [KEEL_BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
  });
  child.stderr!.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const result = new Promise<CliRun>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return Object.assign(child, { result });
}

export function runKeel(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return startKeel(args, env).result;
}

export function sessionIdFrom(stderr: string): string {
  const m = /keel: session (\S+)/.exec(stderr);
  if (!m?.[1]) throw new Error(`no session id in stderr: ${stderr}`);
  return m[1];
}

/** Every line of a session log parses as JSON (the torn-line sidecar aside). */
export function readLog(workspace: string, id: string): Record<string, unknown>[] {
  const text = fs.readFileSync(path.join(workspace, '.keel', 'sessions', `${id}.jsonl`), 'utf8');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Pids of live processes whose command line contains `marker`. */
export function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(marker)) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}
