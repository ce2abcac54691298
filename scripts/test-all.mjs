#!/usr/bin/env node
// `npm test`: every check Keel has, in order, with one closing line `N passed, N failed`.
// Stages: lint, typecheck, build, unit tests (node:test), `npm start` smoke, extension tests and E2E
// (real code-server).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const scripts = JSON.parse(fs.readFileSync('package.json', 'utf8')).scripts ?? {};
const skipSlow = process.env.KEEL_SKIP_VSCODE_TESTS === '1';
const stages = [
  { name: 'lint', cmd: ['npm', 'run', '-s', 'lint'] },
  { name: 'typecheck', cmd: ['npm', 'run', '-s', 'typecheck'] },
  { name: 'build', cmd: ['npm', 'run', '-s', 'build'] },
  { name: 'unit', cmd: ['npm', 'run', '-s', 'test:unit'], counts: true },
  // keel eval over eval/regression against the emulator's scripted policies (expected.json).
  { name: 'eval', cmd: ['npm', 'run', '-s', 'eval:regression'], counts: true },
  // The chat panel's DOM in headless Chromium under the real CSP (skips itself without Chromium).
  { name: 'webview', cmd: ['node', '--test', 'webview-ui/test/panel.browser.test.mjs'], counts: true },
  // The README's `npm start`, through npm, on a free port: the URL it prints serves VS Code with Keel.
  // On a machine without .cs/ this is where code-server gets installed (as a user's first start does).
  ...(!skipSlow ? [{ name: 'start', cmd: ['node', 'scripts/start-smoke.mjs'], counts: true }] : []),
  ...(scripts['test:ext'] && !skipSlow
    ? [{ name: 'extension', cmd: ['npm', 'run', '-s', 'test:ext'], counts: true }]
    : []),
  ...(scripts['test:e2e'] && !skipSlow
    ? [{ name: 'e2e', cmd: ['npm', 'run', '-s', 'test:e2e'], counts: true }]
    : []),
];

// Every stage's temp files (os.tmpdir() honours TMPDIR, in every child process) go into one folder
// that is removed at the end, so a test run leaves nothing behind in the system temp directory.
const testTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-test-'));
const removeTestTmp = () => fs.rmSync(testTmp, { recursive: true, force: true });
process.on('exit', removeTestTmp);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

function run(cmd) {
  return new Promise((resolve) => {
    const child = spawn(cmd[0], cmd.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TMPDIR: testTmp },
    });
    let out = '';
    const tee = (stream, target) =>
      stream.on('data', (chunk) => {
        out += chunk;
        target.write(chunk);
      });
    tee(child.stdout, process.stdout);
    tee(child.stderr, process.stderr);
    child.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

function countsOf(out) {
  // node:test summary ("ℹ pass 12" / "# pass 12") or a plain "N passed, N failed" line.
  const last = (re) => [...out.matchAll(re)].map((m) => Number(m[1])).at(-1);
  const pass = last(/^(?:ℹ|#) pass (\d+)/gm);
  const failed = last(/^(?:ℹ|#) fail (\d+)/gm);
  if (pass !== undefined) return { passed: pass, failed: failed ?? 0 };
  const plain = [...out.matchAll(/^(?:\w+: )?(\d+) passed, (\d+) failed/gm)].at(-1);
  return plain ? { passed: Number(plain[1]), failed: Number(plain[2]) } : undefined;
}

// The runner's own "failing tests" block (spec reporter), shortened: CI shows only the output's tail,
// so the summary must name what failed or a flaky failure cannot be found afterwards.
function failingTestsOf(out) {
  const at = out.lastIndexOf('✖ failing tests:');
  if (at < 0) return '';
  const lines = out.slice(at).split('\n').slice(1);
  const kept = lines.filter((line) => /^(test at |\s*✖ )/.test(line) || /^\s+(Error|\w*Error)\b/.test(line));
  return kept
    .slice(0, 40)
    .map((line) => `  ${line.trimEnd()}`)
    .join('\n');
}

let passed = 0;
let failed = 0;
const summary = [];
for (const stage of stages) {
  process.stdout.write(`\n=== ${stage.name}: ${stage.cmd.join(' ')}\n`);
  const started = Date.now();
  const { code, out } = await run(stage.cmd);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const counts = stage.counts ? countsOf(out) : undefined;
  if (counts) {
    passed += counts.passed;
    failed += counts.failed;
    if (code !== 0 && counts.failed === 0) failed += 1; // the runner itself failed
  } else if (code === 0) passed += 1;
  else failed += 1;
  summary.push(
    `${stage.name}: ${code === 0 ? 'ok' : `FAILED (exit ${code})`}${counts ? ` — ${counts.passed} passed, ${counts.failed} failed` : ''} in ${seconds} s`,
  );
  if (code !== 0) {
    const failing = failingTestsOf(out);
    if (failing) summary.push(failing);
  }
}
process.stdout.write(`\n=== summary\n${summary.join('\n')}\n`);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
