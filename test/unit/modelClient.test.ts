import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createModelClient, type ModelRequest } from '../../src/agent/model/client.ts';
import { type ModelError, retryDelayMs } from '../../src/agent/model/errors.ts';
import { createLimiter } from '../../src/agent/model/limiter.ts';
import { costUsd } from '../../src/agent/model/pricing.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';

// The model client's policies: backoff, fallback with cooldown, the global concurrency limit, and
// cost. The real SDK talks to the emulator over HTTP.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const request: ModelRequest = {
  system: [{ type: 'text', text: 'You are terse.' }],
  tools: [],
  messages: [{ role: 'user', content: 'hi' }],
  maxTokens: 256,
};
const text = (t: string, model?: string) => ({
  content: [{ type: 'text' as const, text: t }],
  ...(model ? { model } : {}),
});

describe('retry delays', () => {
  test('grow exponentially with ±25 % jitter, up to the cap', () => {
    for (let attempt = 0; attempt < 8; attempt++) {
      const nominal = Math.min(30_000, 1000 * 2 ** attempt);
      for (let i = 0; i < 50; i++) {
        const d = retryDelayMs(attempt);
        assert.ok(d >= nominal * 0.75 && d <= nominal * 1.25, `attempt ${attempt}: ${d} ms`);
      }
    }
    const spread = new Set(Array.from({ length: 50 }, () => retryDelayMs(3)));
    assert.ok(spread.size > 10, 'jitter spreads retries of many clients apart');
  });

  test("the server's retry-after wins, bounded to a minute", () => {
    assert.equal(retryDelayMs(0, 7000), 7000);
    assert.equal(retryDelayMs(5, 500), 500);
    assert.equal(retryDelayMs(0, 3_600_000), 60_000);
  });
});

describe('fallback and cooldown', () => {
  test('a model that exhausted its retries is skipped on the next call until it cools down', async () => {
    let clock = 1_000_000;
    const client = createModelClient({
      apiKey: 'k',
      baseURL: emu.url,
      models: ['main-model', 'backup-model'],
      maxRetries: 1,
      retryBaseMs: 1,
      cooldownMs: 60_000,
      now: () => clock,
    });
    // Replies scripted for backup-model make main-model look overloaded (the emulator's rule).
    emu.setScenario({ replies: [text('one', 'backup-model'), text('two', 'backup-model'), text('three')] });
    const start = emu.requests.length;
    const first = await client.stream(request, new AbortController().signal);
    assert.equal(first.model, 'backup-model');
    const models = () => emu.requests.slice(start).map((r) => (r.body as { model: string }).model);
    assert.deepEqual(models(), ['main-model', 'main-model', 'backup-model']);

    const second = await client.stream(request, new AbortController().signal);
    assert.equal(second.model, 'backup-model');
    assert.deepEqual(models().slice(3), ['backup-model'], 'the cooling model is not asked again');

    clock += 60_001;
    const third = await client.stream(request, new AbortController().signal);
    assert.equal(third.model, 'main-model', 'after the cooldown the primary is tried first again');
  });
});

describe('global concurrency limit', () => {
  test('never runs more than the limit at once, and an abort leaves the queue', async () => {
    const limiter = createLimiter(2);
    let running = 0;
    let peak = 0;
    const task = async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 20));
      running--;
      return 'done';
    };
    const abort = new AbortController();
    const aborted = limiter.run(task, abort.signal);
    const results = Promise.all([limiter.run(task), limiter.run(task), limiter.run(task)]);
    abort.abort();
    // The first two slots were taken synchronously; the aborted one had one of them, so it still runs.
    assert.deepEqual(await results, ['done', 'done', 'done']);
    assert.equal(await aborted, 'done');
    const queued = new AbortController();
    const blockers = [limiter.run(task), limiter.run(task)];
    const waiting = limiter.run(task, queued.signal);
    queued.abort();
    await assert.rejects(waiting, /Aborted while waiting/);
    await Promise.all(blockers);
    assert.equal(peak, 2);
    assert.equal(limiter.active, 0);
  });

  test('model calls through one client share the limit', async () => {
    const limiter = createLimiter(1);
    const client = createModelClient({ apiKey: 'k', baseURL: emu.url, models: ['m'], limiter });
    emu.setScenario({
      replies: [
        { fault: { type: 'slow', delayMs: 150 }, ...text('a') },
        { fault: { type: 'slow', delayMs: 150 }, ...text('b') },
      ],
    });
    const t0 = Date.now();
    const [a, b] = await Promise.all([
      client.stream(request, new AbortController().signal),
      client.stream(request, new AbortController().signal),
    ]);
    assert.deepEqual([a.content, b.content].map((c) => (c[0] as { text: string }).text).sort(), ['a', 'b']);
    assert.ok(Date.now() - t0 >= 300, 'the second call waited for the first');
  });
});

describe('cost', () => {
  test('prices 1-hour cache writes at 2× input and 5-minute writes at 1.25×', () => {
    const base = { input: 0, output: 0, cacheRead: 0 };
    assert.equal(costUsd('claude-sonnet-4-6', { ...base, cacheWrite: 1_000_000 }), 3.75);
    assert.equal(
      costUsd('claude-sonnet-4-6', { ...base, cacheWrite: 1_000_000, cacheWrite1h: 1_000_000 }),
      6,
    );
    assert.equal(costUsd('claude-sonnet-4-6', { ...base, cacheWrite: 0, cacheRead: 1_000_000 }), 0.3);
    assert.equal(
      costUsd('claude-opus-4-6', { input: 1_000_000, output: 1_000_000, cacheRead: 0, cacheWrite: 0 }),
      30,
    );
  });

  test('the 1-hour share reported by the API reaches the usage record', async () => {
    const client = createModelClient({ apiKey: 'k', baseURL: emu.url, models: ['m'] });
    emu.setScenario({ replies: [text('cached')] });
    const long = 'Stable instructions. '.repeat(400);
    const reply = await client.stream(
      {
        ...request,
        system: [{ type: 'text', text: long, cache_control: { type: 'ephemeral', ttl: '1h' } }],
      },
      new AbortController().signal,
    );
    assert.ok(reply.usage.cacheWrite > 0, 'the prefix was written to the cache');
    assert.equal(reply.usage.cacheWrite1h, reply.usage.cacheWrite, 'all of it with the 1-hour TTL');
  });
});

describe('configuration mistakes fail at once, naming what to set', () => {
  const attempt = async (options: { apiKey?: string; baseURL: string }) => {
    const client = createModelClient({ ...options, models: ['m'], maxRetries: 4, retryBaseMs: 1000 });
    let retries = 0;
    const error = await client
      .stream(request, new AbortController().signal, { onRetry: () => retries++ })
      .then(
        () => assert.fail('the call succeeded'),
        (e: unknown) => e as ModelError,
      );
    return { error, retries };
  };

  test('no API key: an auth error that names ANTHROPIC_API_KEY and the demo, not the SDK options', async () => {
    const saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    try {
      const { error, retries } = await attempt({ baseURL: emu.url });
      assert.equal(error.kind, 'auth');
      assert.match(error.message, /set ANTHROPIC_API_KEY/);
      assert.match(error.message, /keel run --demo/);
      assert.equal(retries, 0, 'no retries');
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
    }
  });

  test('a base URL that is not a URL, or not http(s), is named with the variable to fix', async () => {
    const bad = await attempt({ apiKey: 'k', baseURL: 'localhost-8080' });
    assert.equal(bad.error.kind, 'invalid_request');
    assert.match(bad.error.message, /not a valid URL \(localhost-8080.*\): check ANTHROPIC_BASE_URL/);
    const ftp = await attempt({ apiKey: 'k', baseURL: 'ftp://models.example' });
    assert.match(ftp.error.message, /must be an http\(s\) URL, not ftp:\/\/models\.example/);
    assert.equal(bad.retries + ftp.retries, 0, 'no retries');
  });
});
