import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createModelClient } from '../../src/agent/model/client.ts';
import { ModelError } from '../../src/agent/model/errors.ts';
import { outputLimitFor } from '../../src/agent/model/models.ts';
import { costUsd } from '../../src/agent/model/pricing.ts';
import { createProviderLookup, parseModelRef } from '../../src/agent/model/providers/index.ts';
import { cachedTokens } from '../emulator/openai/cache.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';

// The provider seam with the real `openai` SDK against the emulator: errors as Keel's kinds, the
// prefix parser, and the emulator's caching rule (1024 tokens, then 128-token steps).

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const request = {
  system: [{ type: 'text' as const, text: 'You are terse.' }],
  tools: [],
  messages: [{ role: 'user' as const, content: 'hi' }],
  maxTokens: 100,
};

function client(apiKey: string) {
  return createModelClient({
    models: ['openai:gpt-4o'],
    maxRetries: 1,
    retryBaseMs: 1,
    providerFor: createProviderLookup({ env: { OPENAI_API_KEY: apiKey, OPENAI_BASE_URL: `${emu.url}/v1` } }),
  });
}

async function failure(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (error) {
    assert.ok(error instanceof ModelError, String(error));
    return error;
  }
  assert.fail('expected a failure');
}

describe('openai provider', () => {
  test('a rejected key is an auth error naming OPENAI_API_KEY, not retried', async () => {
    const from = emu.requests.length;
    const e = await failure(client('invalid-key').stream(request, new AbortController().signal));
    assert.equal(e.kind, 'auth');
    assert.match(e.message, /Incorrect API key provided.*Check OPENAI_API_KEY/);
    assert.equal(emu.requests.length - from, 1);
  });

  test('context_length_exceeded is prompt_too_long (the loop compacts); text streams back with usage', async () => {
    emu.setScenario({
      replies: [{ fault: { type: 'prompt_too_long' } }, { content: [{ type: 'text', text: 'hello' }] }],
    });
    const e = await failure(client('k').stream(request, new AbortController().signal));
    assert.equal(e.kind, 'prompt_too_long');
    const deltas: string[] = [];
    const reply = await client('k').stream(request, new AbortController().signal, {
      onDelta: (_i, kind, d) => kind === 'text' && deltas.push(d),
    });
    assert.equal(deltas.join(''), 'hello');
    assert.equal(reply.model, 'openai:gpt-4o');
    assert.equal(reply.stopReason, 'end_turn');
    assert.ok(reply.usage.input > 0 && reply.usage.output > 0);
  });

  test('model refs: bare is Anthropic, the first colon separates, unknown prefixes are refused', () => {
    assert.deepEqual(parseModelRef('claude-sonnet-4-6'), {
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      prefixed: false,
    });
    assert.deepEqual(parseModelRef('ollama:qwen3:8b'), {
      provider: 'ollama',
      model: 'qwen3:8b',
      prefixed: true,
    });
    assert.equal(parseModelRef('Azure:prod-gpt').provider, 'azure');
    assert.throws(() => parseModelRef('gemini:pro'), /Unknown model provider "gemini"/);
    assert.throws(() => parseModelRef('openai:'), /names no model/);
  });

  test('cost: cached input at the cached price, no write charge; a local Ollama model is free', () => {
    const u = { input: 1_000_000, output: 0, cacheRead: 1_000_000, cacheWrite: 0 };
    assert.equal(costUsd('openai:gpt-4o-2024-08-06', u), 3.75);
    assert.equal(costUsd('ollama:qwen3:8b', u), 0);
    assert.equal(outputLimitFor('openai:gpt-4.1'), 32_768);
  });

  test('the emulator caches from 1024 tokens, in 128-token steps', () => {
    assert.deepEqual([1023, 1024, 1151, 1152, 5000].map(cachedTokens), [0, 1024, 1024, 1152, 4992]);
  });
});
