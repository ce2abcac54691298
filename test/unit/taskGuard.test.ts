import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFeatureList, serializeFeatureList, withFlips } from '../../src/agent/task/featureList.ts';
import { commandTouchesTaskFiles } from '../../src/agent/task/guard.ts';

// The long-task guard, in isolation: which commands count as touching the feature list.

test('commands that name the feature list or the task folder are refused; progress.md and init.sh are not', () => {
  for (const command of [
    "sed -i 's/false/true/' keel-task/feature_list.json",
    'echo {} > keel-task/feature_list.json',
    'mv keel-task/feature_list.json /tmp/x',
    'rm -rf keel-task',
    'git checkout HEAD -- keel-task/',
    'cp other.json keel-task/f*',
    "python3 -c \"open('feature_list.json','w')\"",
    'cd keel-task && rm sessions.jsonl',
    'cat keel-task/progress.md.bak > keel-task/feature_list.json',
  ])
    assert.equal(commandTouchesTaskFiles(command), true, command);
  for (const command of [
    'sh keel-task/init.sh',
    'bash keel-task/init.sh && npm test',
    'tail -5 keel-task/progress.md',
    'npm test',
  ])
    assert.equal(commandTouchesTaskFiles(command), false, command);
});

test('the harness serialisation is stable and flips change only `passes`', () => {
  const text = JSON.stringify({
    features: [{ passes: false, verify: 'true', steps: ['s'], description: 'd', category: 'c', id: 'A' }],
  });
  const list = parseFeatureList(text);
  const once = serializeFeatureList(list);
  assert.equal(serializeFeatureList(parseFeatureList(once)), once);
  const flipped = serializeFeatureList(withFlips(list, new Set(['A'])));
  assert.equal(flipped, once.replace('"passes": false', '"passes": true'));
  assert.throws(() => parseFeatureList('{"features":[{"id":"A"}]}'), /not a valid feature list/);
  assert.throws(() => parseFeatureList('{"features":[]}'), /at least one feature/);
});
