import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createModelClient } from '../../src/agent/model/client.ts';
import { ModelError } from '../../src/agent/model/errors.ts';
import { outputLimitFor } from '../../src/agent/model/models.ts';
import { costUsd } from '../../src/agent/model/pricing.ts';
import { createProviderLookup, parseModelRef } from '../../src/agent/model/providers/index.ts';
import { readChatStream } from '../../src/agent/model/providers/openaiStream.ts';
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

  test('parallel calls whose fragments interleave (some servers do) come apart by index; a cut call is never run', async () => {
    const chunk = (delta: unknown, finish: string | null = null) => ({
      id: 'c1',
      model: 'm',
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    async function* chunks(finish: string) {
      yield chunk({ role: 'assistant', content: null });
      yield chunk({
        tool_calls: [{ index: 0, id: 'call_a', function: { name: 'Read', arguments: '{"pa' } }],
      });
      yield chunk({
        tool_calls: [{ index: 1, id: 'call_b', function: { name: 'Grep', arguments: '{"pattern"' } }],
      });
      yield chunk({ tool_calls: [{ index: 0, function: { arguments: 'th":"a.txt"}' } }] });
      yield chunk({ tool_calls: [{ index: 1, function: { arguments: ':"x"}' } }] });
      yield chunk({}, finish);
      yield {
        id: 'c1',
        model: 'm',
        choices: [],
        usage: { prompt_tokens: 2000, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 1920 } },
      };
    }
    const options = (partial: never[] = []) => ({
      qualify: (m: string) => `openai:${m}`,
      wireModel: 'm',
      maxTokens: 100,
      callbacks: {},
      partial,
      signal: new AbortController().signal,
      started: performance.now(),
    });
    const reply = await readChatStream(chunks('tool_calls'), options());
    assert.deepEqual(
      reply.content.map((b) => (b.type === 'tool_use' ? [b.id, b.name, b.input] : b.type)),
      [
        ['call_a', 'Read', { path: 'a.txt' }],
        ['call_b', 'Grep', { pattern: 'x' }],
      ],
    );
    assert.equal(reply.stopReason, 'tool_use');
    assert.deepEqual(reply.usage, { input: 80, output: 9, cacheRead: 1920, cacheWrite: 0 });
    const cut = await readChatStream(chunks('length'), options());
    const last = cut.content.at(-1);
    assert.ok(last?.type === 'tool_use' && last.truncated === true, 'the call cut at the limit is marked');
  });

  test('the emulator caches from 1024 tokens, in 128-token steps', () => {
    assert.deepEqual([1023, 1024, 1151, 1152, 5000].map(cachedTokens), [0, 1024, 1024, 1152, 4992]);
  });
});
