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

test('in zh-cn (the shipped bundle) the status bar item and its tooltip are Chinese', async () => {
  const fs = await import('node:fs');
  const path = await import('node:path');
  const { ENGLISH } = await import('../../src/extension/approvalText.ts');
  const file = path.resolve(import.meta.dirname, '..', '..', 'l10n', 'bundle.l10n.zh-cn.json');
  const bundle = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, string>;
  const zh = {
    t: (message: string, ...args: Array<string | number | boolean>) => {
      assert.ok(bundle[message], `no zh-cn text for ${JSON.stringify(message)}`);
      return ENGLISH.t(bundle[message], ...args);
    },
  };
  const { text, tooltip } = formatUsage({ ...usage, stage: 2 }, zh);
  assert.equal(text, '$(hubot) Keel 12% · 缓存 87% · 阶段 2');
  assert.match(tooltip, /上下文裁剪阶段 2（旧结果已清除）/);
  assert.match(tooltip, /费用 \$0\.0123/);
});
