import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { passAtK, passHatK } from '../../src/agent/eval/passAtK.ts';
import type { EvalReport } from '../../src/agent/eval/runner.ts';
import { loadSuite, SuiteError } from '../../src/agent/eval/schema.ts';
import { runKeel } from './helpers/cli.ts';

// `keel eval` end to end: trials are separate `keel run` processes against the emulator's scripted
// policies; the report's counts and pass@k / pass^k are checked against hand-computed values.

function writeSuite(files: Record<string, unknown>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-suite-'));
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(
      path.join(dir, name),
      typeof content === 'string' ? content : JSON.stringify(content, null, 2),
    );
  }
  return dir;
}

const ADD_CHECK = { type: 'command', run: `node -e "process.exit(require('./add.js')(2,3)===5?0:1)"` };
const FIX_STEPS = [{ read: 'add.js' }, { edit: { path: 'add.js', old: 'a - b', new: 'a + b' } }];
const task = (id: string, emulator: unknown, graders: unknown[] = [ADD_CHECK]) => ({
  id,
  prompt: 'Fix add.js so that add(2, 3) returns 5.',
  fixture: 'fixtures/add',
  graders,
  emulator,
});

const env = () => {
  const { ANTHROPIC_API_KEY: _k, ANTHROPIC_BASE_URL: _u, ...rest } = process.env;
  return rest;
};

test('pass@k is the unbiased estimator and pass^k the all-k-pass chance (hand-computed values)', () => {
  // n = 4, c = 2: pass@2 = 1 - C(2,2)/C(4,2) = 5/6; pass^2 = C(2,2)/C(4,2) = 1/6.
  assert.equal(passAtK(4, 2, 1), 0.5);
  assert.ok(Math.abs(passAtK(4, 2, 2)! - 5 / 6) < 1e-12);
  assert.equal(passAtK(4, 2, 3), 1);
  assert.ok(Math.abs(passHatK(4, 2, 2)! - 1 / 6) < 1e-12);
  assert.equal(passHatK(4, 2, 3), 0);
  assert.equal(passAtK(4, 0, 4), 0);
  assert.equal(passHatK(4, 4, 4), 1);
  // n = 10, c = 3, k = 5: 1 - C(7,5)/C(10,5) = 1 - 21/252.
  assert.ok(Math.abs(passAtK(10, 3, 5)! - (1 - 21 / 252)) < 1e-12);
  assert.ok(Math.abs(passHatK(10, 3, 2)! - 3 / 45) < 1e-12);
  assert.equal(passAtK(2, 1, 3), null, 'k larger than the valid trials is undefined');
  assert.equal(passAtK(0, 0, 1), null);
  // Large n never overflows.
  assert.ok(Math.abs(passAtK(1000, 500, 1)! - 0.5) < 1e-9);
});

test('a bad suite gets one clear error per problem, naming the file and the field', () => {
  const dir = writeSuite({
    'suite.json': { name: 'bad', defaults: { trials: 0 } },
    'fixtures/add/add.js': 'module.exports = (a, b) => a - b;\n',
    'tasks/a.json': { id: 'a', prompt: 'x', fixture: 'fixtures/add', graders: [{ type: 'command' }] },
    'tasks/b.json': {
      id: 'a',
      prompt: '  ',
      fixture: 'nope',
      graders: [{ type: 'file', path: '../etc/passwd', contains: 'x' }, { type: 'smell' }],
    },
    'tasks/c.json': '{ not json',
  });
  assert.throws(
    () => loadSuite(dir),
    (error: unknown) => {
      assert.ok(error instanceof SuiteError);
      const p = error.problems.join('\n');
      assert.match(p, /suite\.json: defaults\.trials: /);
      assert.match(p, /tasks\/a\.json: graders\[0\]\.run: /);
      assert.match(p, /tasks\/b\.json: prompt: /);
      assert.match(p, /tasks\/b\.json: graders\[0\]\.path: path must stay inside/);
      assert.match(p, /tasks\/b\.json: graders\[1\]\.type: /);
      assert.match(p, /tasks\/c\.json: not valid JSON/);
      return true;
    },
  );
});

test('keel eval: always / flaky on trials 1 and 3 / never / persistent API fault report exactly the expected figures; trials never share files', async () => {
  const dir = writeSuite({
    'suite.json': { name: 'known', defaults: { trials: 4, max_turns: 10, timeout_s: 120 } },
    'fixtures/add/add.js': 'module.exports = (a, b) => a - b;\n',
    'tasks/always.json': task('always', { policy: 'succeeds', steps: FIX_STEPS }, [
      ADD_CHECK,
      { type: 'file', path: 'add.js', contains: 'a + b' },
      { type: 'transcript', must_call: ['Read', 'Edit'], max_tool_calls: 2 },
    ]),
    'tasks/flaky.json': task('flaky', { policy: 'flaky', steps: FIX_STEPS, fail_trials: [1, 3] }),
    'tasks/never.json': task('never', { policy: 'gives_up' }),
    'tasks/fault.json': task('fault', { policy: 'api_fault' }),
    // Each trial writes a file named after its own index; a shared directory would hold several.
    // …and sees a home directory of its own (user-level state cannot leak between trials either).
    'tasks/isolated.json': {
      ...task(
        'isolated',
        {
          policy: 'succeeds',
          steps: [
            { write: { path: 'seen/trial-{trial}.txt', content: 'trial {trial}\n' } },
            { bash: 'printf %s "$HOME" > home.txt' },
          ],
        },
        [
          { type: 'command', run: 'test "$(ls seen | wc -l)" -eq 1' },
          {
            type: 'command',
            run: `test "$(cat home.txt)" = "$HOME" && test "$HOME" != "${os.homedir()}" && case "$HOME" in */keel-eval-home-*) true;; *) false;; esac`,
          },
        ],
      ),
      approve: 'all',
    },
  });
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-eval-out-'));
  const json = path.join(out, 'report.out.json');
  const html = path.join(out, 'report.html');
  const run = await runKeel(
    ['eval', dir, '--emulator', '--out', out, '--json', json, '--html', html, '--concurrency', '2'],
    env(),
  );
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(fs.readFileSync(json, 'utf8')) as EvalReport;
  const byId = Object.fromEntries(report.tasks.map((t) => [t.id, t]));
  const figures = (id: string) => {
    const t = byId[id]!;
    return {
      trials: t.trials,
      passed: t.passed,
      failed: t.failed,
      infra_errors: t.infra_errors,
      pass_at_k: t.pass_at_k,
      pass_hat_k: t.pass_hat_k,
    };
  };
  const all = (v: number) => ({ 1: v, 2: v, 3: v, 4: v });
  assert.deepEqual(figures('always'), {
    trials: 4,
    passed: 4,
    failed: 0,
    infra_errors: 0,
    pass_at_k: all(1),
    pass_hat_k: all(1),
  });
  assert.deepEqual(figures('flaky'), {
    trials: 4,
    passed: 2,
    failed: 2,
    infra_errors: 0,
    pass_at_k: { 1: 0.5, 2: 0.833333, 3: 1, 4: 1 },
    pass_hat_k: { 1: 0.5, 2: 0.166667, 3: 0, 4: 0 },
  });
  assert.deepEqual(
    byId.flaky!.results.filter((r) => r.status === 'passed').map((r) => r.trial),
    [0, 2],
    'exactly the trials the policy lets succeed',
  );
  assert.deepEqual(figures('never'), {
    trials: 4,
    passed: 0,
    failed: 4,
    infra_errors: 0,
    pass_at_k: all(0),
    pass_hat_k: all(0),
  });
  const nulls = { 1: null, 2: null, 3: null, 4: null };
  assert.deepEqual(figures('fault'), {
    trials: 4,
    passed: 0,
    failed: 0,
    infra_errors: 4,
    pass_at_k: nulls,
    pass_hat_k: nulls,
  });
  assert.equal(byId.isolated!.passed, 4);
  const workspaces = report.tasks.flatMap((t) => t.results.map((r) => r.workspace));
  assert.equal(new Set(workspaces).size, workspaces.length, 'every trial had its own copy');
  for (const w of workspaces) assert.ok(!fs.existsSync(w), 'trial copies are removed afterwards');
  // Overall: the mean over the tasks with valid trials; fault trials never count.
  assert.equal(report.overall.infra_errors, 4);
  assert.equal(report.overall.passed, 4 + 2 + 0 + 4);
  assert.equal(report.overall.pass_at_1, round((1 + 0.5 + 0 + 1) / 4));
  // Every number is traceable: each trial names its session log, and that log exists.
  for (const t of report.tasks)
    for (const r of t.results) {
      if (t.id === 'fault') assert.match(r.reason, /overloaded|exhausted/i);
      assert.ok(r.log && fs.existsSync(path.join(out, r.log)), `log of ${t.id} #${r.trial}`);
    }
  const logged = fs.readFileSync(path.join(out, byId.always!.results[0]!.log!), 'utf8');
  assert.match(logged, /"type":"model_call"/);
  assert.match(run.stdout, /flaky\s+4\s+2\s+2\s+0\s+50\.0%/);
  const page = fs.readFileSync(html, 'utf8');
  assert.match(page, /Keel eval: known/);
  assert.doesNotMatch(page, /<script/);
  // Each trial links its own trace page, written next to its log.
  assert.match(page, /href="trials\/flaky\/1\/trace\.html"/);
  assert.match(fs.readFileSync(path.join(out, 'trials', 'flaky', '1', 'trace.html'), 'utf8'), /Keel trace/);
});

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

test('keel eval --retry-infra reruns infrastructure errors and keeps the failed attempts on record', async () => {
  const dir = writeSuite({
    'suite.json': { name: 'retry' },
    'fixtures/add/add.js': 'module.exports = (a, b) => a - b;\n',
    'tasks/fault.json': task('fault', { policy: 'api_fault' }),
  });
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-eval-out-'));
  const run = await runKeel(['eval', dir, '--emulator', '--out', out, '--retry-infra', '2'], env());
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8')) as EvalReport;
  const t = report.tasks[0]!;
  assert.equal(t.infra_errors, 1);
  assert.equal(t.results[0]!.attempt, 2);
  assert.deepEqual(
    t.retried.map((r) => r.attempt),
    [0, 1],
  );
});

test('keel eval refuses a suite with problems before running anything (exit 2, every problem listed)', async () => {
  const dir = writeSuite({
    'suite.json': { name: 'x' },
    'fixtures/add/add.js': '',
    'tasks/a.json': task('a', { policy: 'no_such_policy' }),
    'tasks/b.json': { ...task('b', undefined), graders: [] },
  });
  const run = await runKeel(['eval', dir, '--emulator', '--out', path.join(dir, 'out')], env());
  assert.equal(run.code, 2);
  assert.match(run.stderr, /tasks\/b\.json: graders: a task needs at least one grader/);
  assert.ok(!fs.existsSync(path.join(dir, 'out')), 'no trial ran');
});
