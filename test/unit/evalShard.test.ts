import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type { EvalReport } from '../../src/agent/eval/runner.ts';
import { loadSuite } from '../../src/agent/eval/schema.ts';
import { parseShard, planTrials, shardOf, suiteHash } from '../../src/agent/eval/shard.ts';
import { parseCli, UsageError } from '../../src/cli/args.ts';
import { runKeel } from './helpers/cli.ts';

// `keel eval --shard I/N` and `keel eval merge`: the split is a pure function of the plan (every
// machine computes the same one), the shards cover the plan exactly once, and the merged report of a
// sharded run has the figures of one unsharded run of the same suite. Merging reports that do not
// make one whole (another suite, a missing or doubled shard, a trial twice) is refused, by name.

const tmp: string[] = [];
after(() => {
  for (const d of tmp) fs.rmSync(d, { recursive: true, force: true });
});
function dir(files: Record<string, unknown> = {}): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-shard-')));
  tmp.push(d);
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(d, name)), { recursive: true });
    fs.writeFileSync(path.join(d, name), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return d;
}

const ADD_CHECK = { type: 'command', run: `node -e "process.exit(require('./add.js')(2,3)===5?0:1)"` };
const FIX = [{ read: 'add.js' }, { edit: { path: 'add.js', old: 'a - b', new: 'a + b' } }];
const task = (id: string, emulator: unknown, trials: number) => ({
  id,
  prompt: 'Fix add.js so that add(2, 3) returns 5.',
  fixture: 'fixtures/add',
  graders: [ADD_CHECK],
  emulator,
  trials,
});
const SUITE = {
  'suite.json': { name: 'sharded', defaults: { max_turns: 6, timeout_s: 120 } },
  'fixtures/add/add.js': 'module.exports = (a, b) => a - b;\n',
  'tasks/flaky.json': task('flaky', { policy: 'flaky', steps: FIX, fail_trials: [1, 2] }, 5),
  'tasks/always.json': task('always', { policy: 'succeeds', steps: FIX }, 2),
  'tasks/never.json': task('never', { policy: 'gives_up' }, 2),
};

test('--shard I/N: parsed strictly; the split covers the plan exactly once, balanced, the same on every machine', () => {
  assert.deepEqual(parseShard('2/4'), { index: 2, count: 4 });
  for (const bad of ['0/4', '5/4', '1/0', '2', 'a/b', '1/1001'])
    assert.equal(typeof parseShard(bad), 'string', bad);
  assert.deepEqual((parseCli(['eval', 'suite', '--shard', '3/3']) as { shard: unknown }).shard, {
    index: 3,
    count: 3,
  });
  assert.throws(() => parseCli(['eval', 'suite', '--shard', '4/3']), /--shard 4\/3: I must be 1…3/);
  assert.throws(() => parseCli(['eval', 'merge']), UsageError);
  assert.throws(() => parseCli(['eval', 'merge', 'a.json', '--trials', '2']), /takes only --json and --html/);
  assert.deepEqual(
    (parseCli(['eval', 'merge', 'a.json', 'b.json', '--json', 'm.json']) as { merge: unknown }).merge,
    ['a.json', 'b.json'],
  );

  const suite = loadSuite(dir(SUITE));
  const trials = (t: { trials: number | undefined }) => t.trials ?? 1;
  const plan = planTrials(suite.tasks, trials).map((p) => `${p.task.id}#${p.trial}`);
  // Canonical order: task ids by code unit, then trial index, whatever order the files load in.
  assert.deepEqual(plan, [
    'always#0',
    'always#1',
    'flaky#0',
    'flaky#1',
    'flaky#2',
    'flaky#3',
    'flaky#4',
    'never#0',
    'never#1',
  ]);
  const shards = [1, 2, 3].map((index) => shardOf(plan, { index, count: 3 }));
  assert.deepEqual(shards[0], ['always#0', 'flaky#1', 'flaky#4']);
  assert.deepEqual(shards.flat().sort(), [...plan].sort(), 'every trial in exactly one shard');
  assert.deepEqual(
    shards.map((s) => s.length),
    [3, 3, 3],
  );
  // The same plan from reversed task order splits the same way.
  const reversed = planTrials([...suite.tasks].reverse(), trials).map((p) => `${p.task.id}#${p.trial}`);
  assert.deepEqual(shardOf(reversed, { index: 1, count: 3 }), shards[0]);
});

test('the suite hash: equal for a copy elsewhere, different when a fixture byte or a task changes', () => {
  const a = suiteHash(loadSuite(dir(SUITE)));
  assert.match(a, /^sha256:[0-9a-f]{64}$/);
  assert.equal(suiteHash(loadSuite(dir(SUITE))), a);
  assert.notEqual(
    suiteHash(loadSuite(dir({ ...SUITE, 'fixtures/add/add.js': 'module.exports = (a, b) => a * b;\n' }))),
    a,
  );
  assert.notEqual(
    suiteHash(loadSuite(dir({ ...SUITE, 'tasks/never.json': task('never', { policy: 'gives_up' }, 3) }))),
    a,
  );
});

const env = () => {
  const { ANTHROPIC_API_KEY: _k, ANTHROPIC_BASE_URL: _u, ...rest } = process.env;
  return rest;
};
const figures = (r: EvalReport) => ({
  tasks: r.tasks.map((t) => ({
    id: t.id,
    trials: t.trials,
    passed: t.passed,
    failed: t.failed,
    infra_errors: t.infra_errors,
    pass_at_k: t.pass_at_k,
    pass_hat_k: t.pass_hat_k,
    outcomes: t.results.map((x) => `${x.trial}:${x.status}`),
  })),
  overall: {
    trials: r.overall.trials,
    passed: r.overall.passed,
    pass_at_1: r.overall.pass_at_1,
    pass_at_k: r.overall.pass_at_k,
    pass_hat_k: r.overall.pass_hat_k,
  },
});

test('three shards on three "machines", merged: the same pass@k / pass^k as one run; a broken set is refused', async () => {
  const suite = dir(SUITE);
  const out = dir();
  const run = (args: string[]) =>
    runKeel(['eval', suite, '--emulator', '--concurrency', '3', ...args], env());
  const [whole, ...shards] = await Promise.all([
    run(['--out', path.join(out, 'whole')]),
    ...[1, 2, 3].map((i) =>
      run(['--shard', `${i}/3`, '--out', path.join(out, `s${i}`), '--json', path.join(out, `s${i}.json`)]),
    ),
  ]);
  assert.equal(whole!.code, 0, whole!.stderr);
  for (const s of shards) assert.equal(s.code, 0, s.stderr);
  assert.match(shards[0]!.stdout, /Suite sharded \(shard 1\/3\): .* 3 trial\(s\)/);
  const one = JSON.parse(fs.readFileSync(path.join(out, 'whole', 'report.json'), 'utf8')) as EvalReport;
  const shard1 = JSON.parse(fs.readFileSync(path.join(out, 's1.json'), 'utf8')) as EvalReport;
  assert.deepEqual(shard1.shard, { index: 1, count: 3 });
  assert.equal(shard1.suite_hash, one.suite_hash);
  assert.deepEqual(shard1.plan, [
    { task: 'always', trials: 2 },
    { task: 'flaky', trials: 5 },
    { task: 'never', trials: 2 },
  ]);

  const files = [3, 1, 2].map((i) => path.join(out, `s${i}.json`));
  const merged = await runKeel(
    [
      'eval',
      'merge',
      ...files,
      '--json',
      path.join(out, 'merged.json'),
      '--html',
      path.join(out, 'merged.html'),
    ],
    env(),
  );
  assert.equal(merged.code, 0, merged.stderr);
  assert.match(merged.stdout, /Suite sharded \(merged from 3 report\(s\)\): 3 task\(s\), 9 trial\(s\)/);
  const m = JSON.parse(fs.readFileSync(path.join(out, 'merged.json'), 'utf8')) as EvalReport;
  assert.deepEqual(figures(m), figures(one));
  // The figures themselves, by hand: flaky passes 3 of 5 (trials 1 and 2 give up).
  const flaky = m.tasks.find((t) => t.id === 'flaky')!;
  assert.deepEqual(flaky.pass_at_k, { 1: 0.6, 2: 0.9, 3: 1, 4: 1, 5: 1 });
  assert.deepEqual(flaky.pass_hat_k, { 1: 0.6, 2: 0.3, 3: 0.1, 4: 0, 5: 0 });
  assert.deepEqual(
    m.merged_from?.map((x) => x.shard.index),
    [1, 2, 3],
  );
  // Each trial's log is named where its shard wrote it, and exists.
  for (const t of m.tasks) for (const r of t.results) assert.ok(r.log && fs.existsSync(r.log), r.log);
  assert.match(
    fs.readFileSync(path.join(out, 'merged.html'), 'utf8'),
    /href="s\d\/trials\/flaky\/\d\/trace\.html"/,
  );

  const refuse = async (args: string[], pattern: RegExp) => {
    const r = await runKeel(['eval', 'merge', ...args], env());
    assert.equal(r.code, 2, r.stdout);
    assert.match(r.stderr, pattern);
  };
  await refuse([files[0]!, files[1]!], /shard 2\/3 is missing/);
  await refuse([...files, files[1]!], /shard 1\/3 is given twice/);
  const write = (name: string, report: unknown) => {
    fs.writeFileSync(path.join(out, name), JSON.stringify(report));
    return path.join(out, name);
  };
  const s2 = JSON.parse(fs.readFileSync(path.join(out, 's2.json'), 'utf8')) as EvalReport;
  const other = write('other.json', { ...s2, suite_hash: 'sha256:0000' });
  await refuse([files[1]!, other, files[0]!], /other\.json is of another suite or another version of it/);
  // Shard 2's file holding a trial of shard 1 too: the overlap is named.
  const overlap = write('overlap.json', {
    ...s2,
    tasks: [...s2.tasks, { ...shard1.tasks[0]!, results: shard1.tasks[0]!.results.slice(0, 1) }],
  });
  await refuse([files[1]!, overlap, files[0]!], /trial always #0 is in both .*s1\.json and .*overlap\.json/);
  await refuse([files[1]!, path.join(out, 'whole', 'report.json')], /not one split/);
  await refuse([write('junk.json', { suite: 'x' })], /junk\.json: not a keel eval report: suite_hash: /);
});
