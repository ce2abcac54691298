import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Feature } from '../../src/agent/task/featureList.ts';
import { inWorkOrder, parseFeatureList } from '../../src/agent/task/featureList.ts';
import { parseReverifyPolicy, selectForReverify } from '../../src/agent/task/reverify.ts';

// Which passing features a session start re-verifies, and the order features are worked on.

const f = (id: string, priority?: number): Feature => ({
  id,
  category: 'c',
  description: 'd',
  steps: [],
  verify: 'true',
  passes: true,
  ...(priority !== undefined ? { priority } : {}),
});

describe('re-verification selection', () => {
  test('default: every passing feature', () => {
    const all = ['A', 'B', 'C'].map((id) => f(id));
    assert.deepEqual(
      selectForReverify(all, [], 'all', 7).map((x) => x.id),
      ['A', 'B', 'C'],
    );
    assert.equal(parseReverifyPolicy(undefined), 'all');
    assert.equal(parseReverifyPolicy('all'), 'all');
  });

  test('a sample: always the last N passed, the others in turn so each is re-checked every few sessions', () => {
    const all = ['A', 'B', 'C', 'D', 'E'].map((id) => f(id));
    const order = ['A', 'B', 'C', 'D', 'E'];
    const policy = parseReverifyPolicy('2:1');
    assert.deepEqual(policy, { sample: 2, last: 1 });
    const seen = new Set<string>();
    for (let round = 0; round < 2; round++) {
      const ids: string[] = selectForReverify(all, order, policy, round).map((x) => x.id);
      assert.equal(ids[0], 'E', 'the most recently passed is always checked');
      assert.equal(ids.length, 3);
      for (const id of ids) seen.add(id);
    }
    assert.deepEqual([...seen].sort(), ['A', 'B', 'C', 'D', 'E'], 'two sessions cover all five');
    assert.throws(() => parseReverifyPolicy('some'), /KEEL_TASK_REVERIFY takes "all" or SAMPLE:LAST/);
  });

  test('priority orders the work; lower first, none last, ties in list order; only integers', () => {
    const list = { features: [f('A'), f('B', 2), f('C', 1), f('D', 2)] };
    assert.deepEqual(
      inWorkOrder(list).map((x) => x.id),
      ['C', 'B', 'D', 'A'],
    );
    assert.throws(
      () => parseFeatureList(JSON.stringify({ features: [{ ...f('A'), priority: 1.5 }] })),
      /priority/,
    );
  });
});
