#!/usr/bin/env node
// `npm test`'s "start" stage: the README's `npm start`, run THROUGH npm exactly as a user runs it (so
// npm's environment reaches code-server's install, as it does for a user), on a free PORT with no
// ANTHROPIC_API_KEY. Waits for the printed URL, fetches it (HTTP 200 with VS Code's workbench), checks
// the demo workspace is a git repo outside the repo, then stops `npm start` by PID and checks that
// code-server and the demo workspace are gone. On a machine without .cs/ this is the first install.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

const repo = path.resolve(import.meta.dirname, '..');
const failures = [];
const check = (ok, what) => {
  process.stdout.write(`${ok ? 'ok' : 'FAILED'}: ${what}\n`);
  if (!ok) failures.push(what);
};

const port = await new Promise((resolve, reject) => {
  const server = net.createServer().on('error', reject);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});
const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-start-'));
const env = { ...process.env, PORT: String(port), KEEL_START_RUN_DIR: runDir };
delete env.ANTHROPIC_API_KEY;
delete env.ANTHROPIC_BASE_URL;
// Its own process group, so that if `npm start` ignored SIGTERM the group could still be stopped.
const child = spawn('npm', ['start'], { cwd: repo, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
let output = '';
child.stdout.on('data', (c) => {
  output += c;
  process.stdout.write(c);
});
child.stderr.on('data', (c) => {
  output += c;
  process.stderr.write(c);
});
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));

const URL_LINE = /^\s+(http:\/\/127\.0\.0\.1:\d+\/\?folder=\S+)$/m;
const url = await Promise.race([
  new Promise((resolve) => {
    const poll = setInterval(() => {
      const m = URL_LINE.exec(output);
      if (m) {
        clearInterval(poll);
        resolve(m[1]);
      }
    }, 100);
  }),
  exited.then(({ code }) => {
    throw new Error(`npm start exited (${code}) before printing a URL`);
  }),
  // A fresh install compiles native modules: generous on a loaded 2-core machine.
  new Promise((_, reject) => setTimeout(() => reject(new Error('no URL after 15 min')), 15 * 60_000).unref()),
]).catch((error) => {
  check(false, error.message);
  return undefined;
});

if (url) {
  check(url.includes(`:${port}/`), `npm start used PORT=${port}: ${url}`);
  const response = await fetch(url);
  const html = await response.text();
  check(response.status === 200, `GET ${url} → ${response.status}`);
  check(/workbench/.test(html) && /vs\/code|vscode/i.test(html), 'the page is VS Code’s workbench');
  const folder = decodeURIComponent(new URL(url).searchParams.get('folder') ?? '');
  const rel = path.relative(repo, folder);
  check(rel.startsWith('..') || path.isAbsolute(rel), `the demo workspace is outside the repo: ${folder}`);
  check(fs.existsSync(path.join(folder, '.git')), 'the demo workspace is a git repo');
  check(/DEMO MODE/.test(output), 'without ANTHROPIC_API_KEY npm start says it is a demo');
  const installed = fs
    .readdirSync(path.join(runDir, 'extensions'))
    .some((d) => d.startsWith('keel-dev.keel-'));
  check(installed, 'Keel is installed into code-server');
  check(!/requires node v24|EBADENGINE/.test(output), 'no Node-version refusal or engine warning');
  const csPid = Number(fs.readFileSync(path.join(runDir, 'pid'), 'utf8'));

  child.kill('SIGTERM'); // the npm process, by PID; npm passes it on to `node scripts/start.mjs`
  const stopped = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), 30_000))]);
  check(stopped !== undefined, 'npm start stopped on SIGTERM');
  if (stopped === undefined) process.kill(-child.pid, 'SIGKILL');
  const csAlive = () => {
    try {
      process.kill(csPid, 0);
      return true;
    } catch {
      return false;
    }
  };
  // start.mjs stops code-server, then removes the demo workspace: give it a moment on a busy machine.
  for (let i = 0; i < 300 && (csAlive() || fs.existsSync(folder)); i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  check(!csAlive(), `code-server (pid ${csPid}) stopped with it`);
  check(!fs.existsSync(folder), 'the demo workspace is removed on stop');
} else if (child.exitCode === null) {
  process.kill(-child.pid, 'SIGTERM');
}
fs.rmSync(runDir, { recursive: true, force: true });
process.stdout.write(
  `start: ${failures.length === 0 ? 1 : 0} passed, ${failures.length === 0 ? 0 : 1} failed\n`,
);
process.exit(failures.length === 0 ? 0 : 1);
