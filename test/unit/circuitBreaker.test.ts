import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  circuitOpenRefusal,
  cooldownFromEnv,
  createCircuitBreaker,
} from '../../src/agent/safety/guards/circuitBreaker.ts';
import { refused, renderForModel } from '../../src/agent/tools/protocol.ts';

function fakeClock(start = 1_000_000) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

test('3 consecutive failures open the circuit for 300 s; only that tool is affected', () => {
  const clock = fakeClock();
  const breaker = createCircuitBreaker({ now: clock.now });
  breaker.record('Bash', false);
  breaker.record('Bash', false);
  assert.deepEqual(breaker.check('Bash'), { open: false });
  breaker.record('Bash', false);
  assert.deepEqual(breaker.check('Bash'), { open: true, retryInMs: 300_000 });
  assert.deepEqual(breaker.check('Read'), { open: false });
  assert.equal(breaker.openCount, 1);

  clock.advance(120_000);
  assert.deepEqual(breaker.check('Bash'), { open: true, retryInMs: 180_000 });
  clock.advance(179_999);
  assert.deepEqual(breaker.check('Bash'), { open: true, retryInMs: 1 });
});

test('a success in between resets the failure count', () => {
  const clock = fakeClock();
  const breaker = createCircuitBreaker({ now: clock.now });
  for (const success of [false, false, true, false, false, true, false, false])
    breaker.record('Grep', success);
  assert.deepEqual(breaker.check('Grep'), { open: false });
  assert.equal(breaker.openCount, 0);
});

test('after the cooldown: one trial call; success closes the circuit', () => {
  const clock = fakeClock();
  const breaker = createCircuitBreaker({ now: clock.now });
  for (let i = 0; i < 3; i++) breaker.record('Bash', false);
  clock.advance(300_000);
  assert.deepEqual(breaker.check('Bash'), { open: false });
  // The trial is running: a second call waits for its outcome.
  assert.equal(breaker.check('Bash').open, true);
  breaker.record('Bash', true);
  for (let i = 0; i < 5; i++) assert.deepEqual(breaker.check('Bash'), { open: false });
  // Fully closed again: it takes 3 new consecutive failures to re-open.
  breaker.record('Bash', false);
  breaker.record('Bash', false);
  assert.deepEqual(breaker.check('Bash'), { open: false });
  breaker.record('Bash', false);
  assert.equal(breaker.check('Bash').open, true);
  assert.equal(breaker.openCount, 2);
});

test('after the cooldown: a failed trial re-opens the circuit for another full cooldown', () => {
  const clock = fakeClock();
  const breaker = createCircuitBreaker({ now: clock.now });
  for (let i = 0; i < 3; i++) breaker.record('Bash', false);
  clock.advance(300_001);
  assert.deepEqual(breaker.check('Bash'), { open: false });
  breaker.record('Bash', false);
  assert.deepEqual(breaker.check('Bash'), { open: true, retryInMs: 300_000 });
  assert.equal(breaker.openCount, 2);
  clock.advance(300_000);
  assert.deepEqual(breaker.check('Bash'), { open: false });
  breaker.record('Bash', true);
  assert.deepEqual(breaker.check('Bash'), { open: false });
});

test('a trial whose outcome is never recorded (e.g. denied by the user) frees its slot after the lease', () => {
  const clock = fakeClock();
  const breaker = createCircuitBreaker({ now: clock.now, trialLeaseMs: 10_000 });
  for (let i = 0; i < 3; i++) breaker.record('Bash', false);
  clock.advance(300_000);
  assert.deepEqual(breaker.check('Bash'), { open: false });
  clock.advance(4_000);
  assert.deepEqual(breaker.check('Bash'), { open: true, retryInMs: 6_000 });
  clock.advance(6_000);
  assert.deepEqual(breaker.check('Bash'), { open: false });
});

test('a late failure from a call started before the circuit opened does not extend the cooldown', () => {
  const clock = fakeClock();
  const breaker = createCircuitBreaker({ now: clock.now });
  for (let i = 0; i < 3; i++) breaker.record('Bash', false);
  clock.advance(100_000);
  breaker.record('Bash', false);
  assert.deepEqual(breaker.check('Bash'), { open: true, retryInMs: 200_000 });
  assert.equal(breaker.openCount, 1);
});

test('threshold and cooldown are configurable and validated', () => {
  const clock = fakeClock();
  const breaker = createCircuitBreaker({ now: clock.now, threshold: 1, cooldownMs: 5_000 });
  breaker.record('Edit', false);
  assert.deepEqual(breaker.check('Edit'), { open: true, retryInMs: 5_000 });
  clock.advance(5_000);
  assert.deepEqual(breaker.check('Edit'), { open: false });
  assert.throws(() => createCircuitBreaker({ now: clock.now, threshold: 0 }));
});

test('circuitOpenRefusal tells the model which tool is paused and for how long', () => {
  const result = refused(circuitOpenRefusal('Bash', 180_500));
  assert.equal(result.status, 'error');
  assert.equal(result.error?.code, 'CIRCUIT_OPEN');
  assert.equal(
    renderForModel(result),
    'Error [CIRCUIT_OPEN]: Bash failed 3 times in a row and is paused; it can be tried again in 181 s.\n' +
      'Suggestion: Do not call Bash again yet. Use another tool or approach, or tell the user what keeps failing.',
  );
});

test('KEEL_CIRCUIT_COOLDOWN_MS sets the default cooldown; an explicit option wins; junk is ignored', () => {
  assert.equal(cooldownFromEnv({ KEEL_CIRCUIT_COOLDOWN_MS: '1500' }), 1500);
  assert.equal(cooldownFromEnv({ KEEL_CIRCUIT_COOLDOWN_MS: ' 0 ' }), 0);
  assert.equal(cooldownFromEnv({ KEEL_CIRCUIT_COOLDOWN_MS: '-5' }), undefined);
  assert.equal(cooldownFromEnv({ KEEL_CIRCUIT_COOLDOWN_MS: 'soon' }), undefined);
  assert.equal(cooldownFromEnv({}), undefined);
  const saved = process.env.KEEL_CIRCUIT_COOLDOWN_MS;
  process.env.KEEL_CIRCUIT_COOLDOWN_MS = '2000';
  try {
    const clock = fakeClock();
    const fromEnv = createCircuitBreaker({ now: clock.now, threshold: 1 });
    fromEnv.record('Grep', false);
    assert.deepEqual(fromEnv.check('Grep'), { open: true, retryInMs: 2_000 });
    const explicit = createCircuitBreaker({ now: clock.now, threshold: 1, cooldownMs: 7_000 });
    explicit.record('Grep', false);
    assert.deepEqual(explicit.check('Grep'), { open: true, retryInMs: 7_000 });
  } finally {
    if (saved === undefined) delete process.env.KEEL_CIRCUIT_COOLDOWN_MS;
    else process.env.KEEL_CIRCUIT_COOLDOWN_MS = saved;
  }
});
