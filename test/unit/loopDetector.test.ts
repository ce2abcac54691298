import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  canonicalJson,
  createLoopDetector,
  type LoopDetector,
  type LoopVerdict,
} from '../../src/agent/safety/guards/loopDetector.ts';

// Drives the detector the way the tool registry does: check → (execute unless blocked/stopped) → record.
interface Outcome {
  readonly executed: boolean;
  readonly verdict: LoopVerdict;
}

function simulate(
  detector: LoopDetector,
  calls: ReadonlyArray<{
    tool: string;
    input: unknown;
    result: string;
    status?: 'success' | 'partial' | 'error';
  }>,
): { outcomes: Outcome[]; executed: number; stoppedAt: number | undefined } {
  const outcomes: Outcome[] = [];
  let executed = 0;
  let stoppedAt: number | undefined;
  for (const [i, call] of calls.entries()) {
    const before = detector.check(call.tool, call.input);
    if (before.action === 'block' || before.action === 'stop') {
      outcomes.push({ executed: false, verdict: before });
      if (before.action === 'stop') {
        stoppedAt = i + 1;
        break;
      }
      continue;
    }
    executed += 1;
    const after = detector.record(call.tool, call.input, call.result, call.status ?? 'success');
    outcomes.push({ executed: true, verdict: after });
    if (after.action === 'stop') {
      stoppedAt = i + 1;
      break;
    }
  }
  return { outcomes, executed, stoppedAt };
}

const actions = (outcomes: readonly Outcome[]): string[] => outcomes.map((o) => o.verdict.action);

const message = (v: LoopVerdict): string => (v.action === 'allow' ? '' : v.message);
const detectorOf = (v: LoopVerdict): string | undefined => (v.action === 'allow' ? undefined : v.detector);

const repeat = <T>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));

test('30 identical calls: warned from the 10th, blocked from the 20th (not executed), run stopped at the 30th', () => {
  const detector = createLoopDetector();
  const calls = repeat(40, () => ({
    tool: 'Read',
    input: { path: 'src/a.ts' },
    result: 'export const a = 1;',
  }));
  const { outcomes, executed, stoppedAt } = simulate(detector, calls);

  assert.equal(executed, 19);
  assert.ok(executed <= 20, `executed ${executed}`);
  assert.deepEqual(
    outcomes.slice(0, 9).map((o) => o.verdict.action),
    repeat(9, () => 'allow'),
  );
  for (const o of outcomes.slice(9, 19)) {
    assert.equal(o.verdict.action, 'warn');
  }
  const warn = outcomes[9]!.verdict;
  assert.equal(warn.action, 'warn');
  assert.match(message(warn), /same result 10 times/);
  for (const o of outcomes.slice(19, 29)) {
    assert.equal(o.executed, false);
    assert.equal(o.verdict.action, 'block');
  }
  const block = outcomes[19]!.verdict;
  assert.equal(block.action, 'block');
  assert.match(message(block), /Read call was already made 19 times/);
  assert.equal(stoppedAt, 30);
  const stop = outcomes[29]!.verdict;
  assert.equal(stop.action, 'stop');
  assert.match(message(stop), /attempted 30 times/);
  assert.deepEqual(detector.stats, { warnings: 10, blocks: 10, stops: 1 });
  // Once stopped, nothing else runs until reset.
  assert.equal(detector.check('Grep', { pattern: 'x' }).action, 'stop');
  detector.reset();
  assert.equal(detector.check('Read', { path: 'src/a.ts' }).action, 'allow');
});

test('key order in the input does not disguise an identical call', () => {
  const detector = createLoopDetector({ warnAt: 2, blockAt: 3, stopAt: 10 });
  detector.record('Grep', { pattern: 'foo', path: 'src' }, 'src/a.ts:1:foo', 'success');
  assert.equal(
    detector.record('Grep', { path: 'src', pattern: 'foo' }, 'src/a.ts:1:foo', 'success').action,
    'warn',
  );
  assert.equal(detector.check('Grep', { path: 'src', pattern: 'foo' }).action, 'block');
});

test('polling whose result changes is progress; polling whose result never changes is blocked', () => {
  const changing = createLoopDetector();
  const progressing = simulate(
    changing,
    repeat(200, (i) => ({ tool: 'Bash', input: { command: 'npm test' }, result: `${i} passing` })),
  );
  assert.equal(progressing.executed, 200);
  assert.deepEqual(
    actions(progressing.outcomes),
    repeat(200, () => 'allow'),
  );

  const stuck = createLoopDetector();
  const polling = simulate(
    stuck,
    repeat(25, () => ({
      tool: 'Bash',
      input: { command: 'curl -s localhost:3000/health' },
      result: 'starting',
    })),
  );
  assert.equal(polling.executed, 19);
  assert.equal(polling.outcomes[19]!.verdict.action, 'block');
});

test('a result change restarts the count: npm test after an edit that changed its output', () => {
  const detector = createLoopDetector();
  const test1 = { tool: 'Bash', input: { command: 'npm test' } };
  const failing = simulate(
    detector,
    repeat(15, () => ({ ...test1, result: '1 failing' })),
  );
  assert.equal(failing.outcomes[14]!.verdict.action, 'warn');
  // The model edits a file, and the test output changes: that is progress, the counters restart.
  assert.equal(
    detector.record('Edit', { path: 'src/a.ts', old: 'a', new: 'b' }, 'Edited src/a.ts', 'success').action,
    'allow',
  );
  const after = simulate(
    detector,
    repeat(9, () => ({ ...test1, result: '0 failing' })),
  );
  assert.equal(after.executed, 9);
  assert.deepEqual(
    actions(after.outcomes),
    repeat(9, () => 'allow'),
  );
  // Another edit, and the old failing output comes back: its count restarts, it does not resume at 15.
  detector.record('Edit', { path: 'src/a.ts', old: 'b', new: 'c' }, 'Edited src/a.ts', 'success');
  const back = simulate(
    detector,
    repeat(9, () => ({ ...test1, result: '1 failing' })),
  );
  assert.deepEqual(
    actions(back.outcomes),
    repeat(9, () => 'allow'),
  );
});

test('A↔B ping-pong with unchanged results: warned at 10 alternating calls, blocked at 20, then stopped', () => {
  const detector = createLoopDetector();
  const a = { tool: 'Read', input: { path: 'src/a.ts' }, result: 'A' };
  const b = { tool: 'Grep', input: { pattern: 'foo' }, result: 'src/b.ts:3:foo' };
  const { outcomes, executed, stoppedAt } = simulate(
    detector,
    repeat(60, (i) => (i % 2 === 0 ? a : b)),
  );
  assert.deepEqual(
    outcomes.slice(0, 9).map((o) => o.verdict.action),
    repeat(9, () => 'allow'),
  );
  const warn = outcomes[9]!.verdict;
  assert.equal(warn.action, 'warn');
  assert.match(message(warn), /alternated between the same two calls \(Read ↔ Grep\)/);
  assert.equal(detectorOf(warn), 'ping_pong');
  assert.equal(executed, 19);
  const block = outcomes[19]!;
  assert.equal(block.executed, false);
  assert.equal(block.verdict.action, 'block');
  assert.equal(detectorOf(block.verdict), 'ping_pong');
  // Insisting on the loop ends the run instead of spinning forever.
  assert.ok(stoppedAt !== undefined && stoppedAt <= 40, `stopped at ${stoppedAt}`);
  assert.equal(outcomes[outcomes.length - 1]!.verdict.action, 'stop');
});

test('A↔B alternation whose results keep changing is not a loop', () => {
  const detector = createLoopDetector();
  const calls = repeat(200, (i) =>
    i % 2 === 0
      ? { tool: 'Bash', input: { command: 'npm run build' }, result: `build ${i}` }
      : { tool: 'Read', input: { path: 'out/log.txt' }, result: `log ${i}` },
  );
  const { outcomes } = simulate(detector, calls);
  assert.deepEqual(
    actions(outcomes),
    repeat(200, () => 'allow'),
  );
  assert.deepEqual(detector.stats, { warnings: 0, blocks: 0, stops: 0 });
});

test('global breaker: a cycle of three unproductive calls stops the run at 30 calls without progress', () => {
  const detector = createLoopDetector();
  const cycle = [
    { tool: 'Read', input: { path: 'a.ts' }, result: 'a' },
    { tool: 'Read', input: { path: 'b.ts' }, result: 'b' },
    { tool: 'Bash', input: { command: 'npm test' }, result: '1 failing' },
  ];
  const { outcomes, executed, stoppedAt } = simulate(
    detector,
    repeat(90, (i) => cycle[i % 3]!),
  );
  // 3 productive first calls, then 30 calls that only repeat what is already known.
  assert.equal(stoppedAt, 33);
  assert.equal(executed, 33);
  const stop = outcomes[32]!.verdict;
  assert.equal(stop.action, 'stop');
  assert.match(message(stop), /last 30 tool calls made no progress/);
  assert.equal(detectorOf(stop), 'global');
  // The model was told before the run was ended.
  assert.deepEqual(
    actions(outcomes.slice(12, 32)),
    repeat(20, () => 'warn'),
  );
  assert.equal(detector.check('Read', { path: 'new.ts' }).action, 'stop');
});

test('noteProgress (e.g. a user message) resets the global counter', () => {
  const detector = createLoopDetector({ warnAt: 5, blockAt: 50, stopAt: 50 });
  const cycle = [
    { tool: 'Read', input: { path: 'a.ts' }, result: 'a' },
    { tool: 'Read', input: { path: 'b.ts' }, result: 'b' },
    { tool: 'Read', input: { path: 'c.ts' }, result: 'c' },
  ];
  const first = simulate(
    detector,
    repeat(8, (i) => cycle[i % 3]!),
  );
  assert.equal(first.outcomes[7]!.verdict.action, 'warn');
  detector.noteProgress();
  assert.equal(detector.record('Read', { path: 'c.ts' }, 'c', 'success').action, 'allow');
});

test('thresholds are configurable and validated', () => {
  const detector = createLoopDetector({ warnAt: 2, blockAt: 4, stopAt: 6 });
  const { outcomes, executed, stoppedAt } = simulate(
    detector,
    repeat(10, () => ({ tool: 'LS', input: { path: '.' }, result: 'a b c' })),
  );
  assert.deepEqual(
    outcomes.map((o) => o.verdict.action),
    ['allow', 'warn', 'warn', 'block', 'block', 'stop'],
  );
  assert.equal(executed, 3);
  assert.equal(stoppedAt, 6);
  assert.throws(() => createLoopDetector({ warnAt: 30, blockAt: 20 }), /warnAt <= blockAt <= stopAt/);
  assert.throws(() => createLoopDetector({ stopAt: 0 }));
});

test('a realistic, varied session of 200 calls never triggers anything', () => {
  const detector = createLoopDetector();
  const calls: Array<{ tool: string; input: unknown; result: string; status?: 'success' | 'error' }> = [];
  let testFailures = 12;
  for (let step = 0; calls.length < 200; step++) {
    const file = `src/module${step % 17}.ts`;
    calls.push({
      tool: 'Grep',
      input: { pattern: `fn${step}`, path: 'src' },
      result: `${file}:${step}:fn${step}`,
    });
    calls.push({ tool: 'Read', input: { path: file }, result: `// ${file} revision ${step}` });
    if (step % 3 === 0)
      calls.push({ tool: 'Glob', input: { pattern: `**/*${step % 5}.ts` }, result: `${file}` });
    calls.push({
      tool: 'Edit',
      input: { path: file, old_string: `v${step}`, new_string: `v${step + 1}` },
      result: 'ok',
    });
    if (step % 4 === 0) {
      calls.push({
        tool: 'TodoWrite',
        input: { todos: [{ id: '1', content: `step ${step}`, status: 'in_progress' }] },
        result: `[>] 1. step ${step}`,
      });
    }
    // Tests are run often; the output only changes when the number of failures changes.
    if (step % 2 === 1) testFailures = Math.max(0, testFailures - 1);
    calls.push({ tool: 'Bash', input: { command: 'npm test' }, result: `${testFailures} failing` });
    // A small, harmless repeat: re-checking git status twice.
    if (step % 7 === 0) {
      calls.push({ tool: 'Bash', input: { command: 'git status --short' }, result: ` M ${file}` });
      calls.push({ tool: 'Bash', input: { command: 'git status --short' }, result: ` M ${file}` });
    }
    if (step % 11 === 5) {
      calls.push({
        tool: 'Read',
        input: { path: 'missing.ts' },
        result: 'Error [NOT_FOUND]',
        status: 'error',
      });
    }
  }
  const { outcomes, executed } = simulate(detector, calls.slice(0, 200));
  assert.equal(executed, 200);
  const triggered = outcomes.filter((o) => o.verdict.action !== 'allow');
  assert.deepEqual(triggered, []);
  assert.deepEqual(detector.stats, { warnings: 0, blocks: 0, stops: 0 });
});

test('identical repeats far apart (outside the recent window) do not accumulate', () => {
  const detector = createLoopDetector({ window: 20 });
  const calls = [];
  for (let i = 0; i < 15; i++) {
    calls.push({ tool: 'Read', input: { path: 'README.md' }, result: 'same' });
    for (let j = 0; j < 20; j++) calls.push({ tool: 'Read', input: { path: `f${i}-${j}` }, result: 'x' });
  }
  const { outcomes } = simulate(detector, calls);
  assert.deepEqual(
    actions(outcomes),
    repeat(calls.length, () => 'allow'),
  );
});

test('canonicalJson: sorted keys at every depth, arrays keep their order, JSON semantics otherwise', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [3, 1], c: 'x' } }), '{"a":{"c":"x","d":[3,1]},"b":1}');
  assert.equal(canonicalJson({ a: undefined, b: [undefined, Number.NaN] }), '{"b":[null,null]}');
  assert.equal(canonicalJson(new Date(0)), '"1970-01-01T00:00:00.000Z"');
  assert.equal(canonicalJson(undefined), 'null');
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  assert.equal(canonicalJson(cyclic), '{"a":1,"self":"[Circular]"}');

  const shuffle = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(shuffle);
    if (value && typeof value === 'object') {
      const entries = Object.entries(value).reverse();
      return Object.fromEntries(entries.map(([k, v]) => [k, shuffle(v)]));
    }
    return value;
  };
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const text = canonicalJson(value);
      assert.equal(canonicalJson(shuffle(value)), text);
      assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(value)));
    }),
    { numRuns: 300 },
  );
});
