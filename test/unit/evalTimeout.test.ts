import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import type { EvalReport } from '../../src/agent/eval/runner.ts';
import { processesWith, runKeel, startKeel, waitFor } from './helpers/cli.ts';

// A trial that runs past its task's timeout_s is the model's failure (it did not finish in time), never
// an infrastructure error: it counts as failed and enters pass@k.

test('keel eval: a trial that exceeds timeout_s is failed, not infra_error', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-suite-timeout-'));
  const write = (name: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), typeof value === 'string' ? value : JSON.stringify(value));
  };
  write('suite.json', { name: 'timeout', defaults: { trials: 1 } });
  write('fixtures/f/a.txt', 'a\n');
  write('tasks/slow.json', {
    id: 'slow',
    prompt: 'Wait for the long command.',
    fixture: 'fixtures/f',
    timeout_s: 4,
    approve: 'all',
    graders: [{ type: 'file', path: 'a.txt', contains: 'a' }],
    emulator: { policy: 'succeeds', steps: [{ bash: 'sleep 60' }, { bash: 'sleep 60' }] },
  });
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-eval-timeout-out-'));
  const json = path.join(out, 'report.out.json');
  const { ANTHROPIC_API_KEY: _k, ANTHROPIC_BASE_URL: _u, ...env } = process.env;
  const run = await runKeel(['eval', dir, '--emulator', '--out', out, '--json', json], env);
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(fs.readFileSync(json, 'utf8')) as EvalReport;
  const slow = report.tasks.find((t) => t.id === 'slow');
  assert.ok(slow);
  assert.deepEqual(
    { trials: slow.trials, passed: slow.passed, failed: slow.failed, infra_errors: slow.infra_errors },
    { trials: 1, passed: 0, failed: 1, infra_errors: 0 },
  );
  assert.match(run.stderr, /slow #0: failed — timed out after 4 s/);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.rmSync(out, { recursive: true, force: true });
});

test('keel eval stopped by SIGTERM stops its trials (process groups of their own) and exits 143', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-suite-sigterm-'));
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-eval-sigterm-out-'));
  const marker = `${300 + Math.floor(Math.random() * 600)}.${process.pid}`;
  const write = (name: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), JSON.stringify(value));
  };
  write('suite.json', { name: 'sigterm', defaults: { trials: 1 } });
  write('fixtures/f/a.txt', 'a\n');
  write('tasks/slow.json', {
    id: 'slow',
    prompt: 'Wait for the long command.',
    fixture: 'fixtures/f',
    approve: 'all',
    graders: [{ type: 'file', path: 'a.txt', contains: 'a' }],
    emulator: { policy: 'succeeds', steps: [{ bash: `sleep ${marker}` }] },
  });
  const { ANTHROPIC_API_KEY: _k, ANTHROPIC_BASE_URL: _u, ...env } = process.env;
  try {
    const child = startKeel(['eval', dir, '--emulator', '--out', out], env);
    await waitFor(() => processesWith(`sleep ${marker}`).length > 0, 20_000, 'the trial command to start');
    child.kill('SIGTERM');
    const run = await child.result;
    assert.equal(run.code, 143, run.stderr);
    await waitFor(
      () => processesWith(`sleep ${marker}`).length === 0,
      10_000,
      'no trial process left behind',
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(out, { recursive: true, force: true });
  }
});
