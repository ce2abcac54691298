import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseModelRoute, platformModelId } from '../../src/agent/model/anthropicFamily.ts';
import { ModelError } from '../../src/agent/model/errors.ts';
import { isProfileFailure, isThinkingRejection, lowerEffort } from '../../src/agent/model/ladder.ts';
import { envProfile } from '../../src/agent/model/profiles.ts';

// What the ladder treats as a profile's fault (rotate), a rate limit (wait), or a thinking problem
// (think less): the services' own words, as they send them.

const err = (kind: ConstructorParameters<typeof ModelError>[0], status: number, text: string) =>
  new ModelError(kind, text, status);

test('out of credit or quota rotates; a rate limit waits; auth rotates', () => {
  const rotate = [
    err(
      'invalid_request',
      400,
      'Request rejected (400): Your credit balance is too low to access the Anthropic API.',
    ),
    err(
      'invalid_request',
      400,
      'Request rejected (400): You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.',
    ),
    err('rate_limited', 429, 'Rate limited (429): Usage credits are required for long context requests.'),
    err('invalid_request', 402, 'Request rejected (402): billing_error'),
    err('rate_limited', 429, 'Rate limited (429): Too many tokens per day, please wait before trying again.'),
  ];
  for (const e of rotate) assert.equal(isProfileFailure(e), 'quota', e.message);
  const wait = [
    err('rate_limited', 429, 'Rate limited (429): Rate limited'),
    err(
      'rate_limited',
      429,
      "Rate limited (429): This request would exceed your account's rate limit. Please try again later.",
    ),
    err(
      'rate_limited',
      429,
      'Rate limited (429): Quota exceeded for aiplatform.googleapis.com/online_prediction_tokens_per_minute_per_base_model',
    ),
    err('invalid_request', 400, 'Request rejected (400): messages.0: bad'),
  ];
  for (const e of wait) assert.equal(isProfileFailure(e), undefined, e.message);
  assert.equal(isProfileFailure(err('auth', 401, 'Authentication failed (401): invalid x-api-key')), 'auth');
  assert.equal(isProfileFailure(err('auth', 403, 'Authentication failed (403): forbidden')), 'auth');
});

test('thinking parameter errors lower thinking; thinking-block history errors never do', () => {
  for (const text of [
    'claude-3-5-haiku does not support thinking.',
    'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024',
    '`max_tokens` must be greater than `thinking.budget_tokens`',
    "output_config.effort: Input should be 'low', 'medium', 'high'",
  ])
    assert.ok(isThinkingRejection(err('invalid_request', 400, text)), text);
  for (const text of [
    'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block',
    'messages.3.content: thinking blocks in the latest assistant message cannot be modified.',
    'prompt is too long: 300000 tokens > 200000 maximum',
  ])
    assert.ok(!isThinkingRejection(err('invalid_request', 400, text)), text);
  assert.equal(lowerEffort('max'), 'high');
  assert.equal(lowerEffort('low'), undefined);
});

test('model names: provider prefixes and platform ids', () => {
  assert.deepEqual(parseModelRoute('bedrock:claude-sonnet-4-5', {}), {
    provider: 'bedrock',
    model: 'claude-sonnet-4-5',
  });
  assert.deepEqual(parseModelRoute('claude-opus-4-5', { CLAUDE_CODE_USE_VERTEX: '1' }), {
    provider: 'vertex',
    model: 'claude-opus-4-5',
  });
  assert.deepEqual(parseModelRoute('claude-opus-4-5', {}), { model: 'claude-opus-4-5' });
  assert.equal(platformModelId('bedrock', 'claude-sonnet-4-5'), 'anthropic.claude-sonnet-4-5-20250929-v1:0');
  assert.equal(
    platformModelId('bedrock', 'claude-haiku-4-5-20251001'),
    'anthropic.claude-haiku-4-5-20251001-v1:0',
  );
  assert.equal(platformModelId('bedrock', 'claude-opus-4-6'), 'anthropic.claude-opus-4-6-v1');
  assert.equal(platformModelId('bedrock', 'claude-sonnet-4-6'), 'anthropic.claude-sonnet-4-6');
  assert.equal(
    platformModelId('bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0'),
    'us.anthropic.claude-sonnet-4-5-20250929-v1:0',
  );
  assert.equal(platformModelId('vertex', 'claude-sonnet-4-5'), 'claude-sonnet-4-5@20250929');
  assert.equal(platformModelId('vertex', 'claude-opus-4-1-20250805'), 'claude-opus-4-1@20250805');
  assert.equal(platformModelId('vertex', 'claude-sonnet-4-6'), 'claude-sonnet-4-6');
  assert.equal(platformModelId('anthropic', 'claude-sonnet-4-5'), 'claude-sonnet-4-5');
});

test('ANTHROPIC_API_KEY and a stray ANTHROPIC_AUTH_TOKEN together: the key is the credential (the SDK takes one)', () => {
  const both = envProfile('anthropic', { ANTHROPIC_API_KEY: 'sk-1', ANTHROPIC_AUTH_TOKEN: 'tok' });
  assert.equal(both?.apiKey, 'sk-1');
  assert.equal(both?.authToken, undefined);
  assert.equal(envProfile('anthropic', { ANTHROPIC_AUTH_TOKEN: 'tok' })?.authToken, 'tok');
});
