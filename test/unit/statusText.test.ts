import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatUsage } from '../../src/extension/usage.ts';

// The status bar item is read at a glance among others: it says whose it is, and no symbol needs decoding.

const usage = {
  contextTokens: 24_000,
  contextWindow: 200_000,
  cacheHitPct: 87.4,
  sessionCacheHitPct: 91.6,
  stage: 0,
  costUsd: 0.0123,
};

test('the status bar text is labelled "Keel" and shows no Σ', () => {
  const { text, tooltip } = formatUsage(usage);
  assert.match(text, /\bKeel\b/);
  assert.doesNotMatch(text, /Σ/);
  assert.equal(text, '$(hubot) Keel 12% · cache 87%');
  // The session ratio and the cost are still there, in words, in the tooltip.
  assert.match(tooltip, /92% this session/);
  assert.match(tooltip, /cost \$0\.0123/);
});

test('a pruning stage is named in the text and explained in the tooltip', () => {
  const { text, tooltip } = formatUsage({ ...usage, stage: 2 });
  assert.equal(text, '$(hubot) Keel 12% · cache 87% · stage 2');
  assert.match(tooltip, /stage 2 \(old results cleared\)/);
});
