import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import Anthropic, { APIConnectionError, APIError } from '@anthropic-ai/sdk';
import { type Emulator, type EmulatorOptions, type Scenario, startEmulator } from '../emulator/server.ts';
import { waitFor } from './helpers/cli.ts';
import { png } from './helpers/png.ts';

type CreateParams = Anthropic.MessageCreateParamsNonStreaming;
const MODEL = 'claude-emulated';

async function withEmu(options: EmulatorOptions, fn: (emu: Emulator, client: Anthropic) => Promise<void>) {
  const emu = await startEmulator(options);
  try {
    await fn(emu, new Anthropic({ apiKey: 'test', baseURL: emu.url, maxRetries: 0 }));
  } finally {
    await emu.close();
  }
}

function params(messages: Anthropic.MessageParam[], extra: Partial<CreateParams> = {}): CreateParams {
  return { model: MODEL, max_tokens: 1024, messages, ...extra };
}
const hello = (extra: Partial<CreateParams> = {}) => params([{ role: 'user', content: 'hello' }], extra);

/** Raw SSE, to see what the SDK hides (pings, the exact split of deltas). */
async function rawEvents(
  emu: Emulator,
  body: unknown,
): Promise<Array<{ event: string; data: Record<string, unknown> }>> {
  const res = await fetch(`${emu.url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((chunk) => {
      const [ev, data] = chunk.split('\n');
      return { event: ev!.replace('event: ', ''), data: JSON.parse(data!.replace('data: ', '')) };
    });
}

function reply(text: string): Scenario {
  return { replies: [{ content: [{ type: 'text', text }] }] };
}

async function rejectsWith(p: Promise<unknown>, check: (e: unknown) => boolean) {
  await assert.rejects(p, (e) => {
    assert.ok(
      check(e),
      `unexpected error: ${e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e)}`,
    );
    return true;
  });
}
const apiError = (status: number | undefined, pattern?: RegExp) => (e: unknown) =>
  e instanceof APIError && e.status === status && (!pattern || pattern.test(e.message));

test('streamed text reassembles exactly, in the API event order, split into many deltas', async () => {
  const text = 'Héllo wörld — 𝄞 emoji 🎉 and a longer sentence to force several pieces. '.repeat(4);
  await withEmu(
    { scenario: { replies: [{ content: [{ type: 'text', text }] }, { content: [{ type: 'text', text }] }] } },
    async (emu, client) => {
      const seen: string[] = [];
      const stream = client.messages.stream(hello()).on('text', (delta) => seen.push(delta));
      const final = await stream.finalMessage();
      assert.equal(final.content[0]?.type === 'text' && final.content[0].text, text);
      assert.equal(seen.join(''), text);
      assert.ok(seen.length > 10, `expected many deltas, got ${seen.length}`);
      assert.match(final.id, /^msg_01[A-Za-z0-9]{22}$/);
      assert.equal(final.stop_reason, 'end_turn');

      const events = await rawEvents(emu, { ...hello(), stream: true });
      assert.deepEqual(
        [...new Set(events.map((e) => e.event))],
        [
          'message_start',
          'content_block_start',
          'ping',
          'content_block_delta',
          'content_block_stop',
          'message_delta',
          'message_stop',
        ],
      );
      assert.equal(events.at(-1)?.event, 'message_stop');
      assert.equal(events.at(-2)?.event, 'message_delta');
    },
  );
});

test('delta splitting is deterministic per seed and differs across seeds', async () => {
  const text = 'The quick brown fox jumps over the lazy dog, again and again and again.';
  const splits = async (seed: number) => {
    const emu = await startEmulator({ scenario: reply(text), chunkSeed: seed });
    try {
      const events = await rawEvents(emu, { ...hello(), stream: true });
      return events
        .filter((e) => e.event === 'content_block_delta')
        .map((e) => (e.data['delta'] as { text: string }).text);
    } finally {
      await emu.close();
    }
  };
  const [a, b, c] = [await splits(7), await splits(7), await splits(8)];
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
  assert.equal(c.join(''), text);
});

test('tool_use input arrives parsed (streaming and not), with toolu_ ids and stop_reason tool_use', async () => {
  const input = { path: 'src/ä.ts', nested: { list: [1, 2, 3], flag: true, s: 'quote " and \\ backslash' } };
  const scenario: Scenario = {
    replies: [
      {
        content: [
          { type: 'text', text: 'Reading.' },
          { type: 'tool_use', name: 'Read', input },
        ],
      },
      { content: [{ type: 'tool_use', name: 'Read', input, id: 'toolu_fixed' }] },
    ],
  };
  await withEmu({ scenario }, async (_emu, client) => {
    const streamed = await client.messages.stream(hello()).finalMessage();
    const block = streamed.content[1];
    assert.equal(block?.type, 'tool_use');
    assert.deepEqual(block?.type === 'tool_use' && block.input, input);
    assert.match(block?.type === 'tool_use' ? block.id : '', /^toolu_01[A-Za-z0-9]{22}$/);
    assert.equal(streamed.stop_reason, 'tool_use');

    const { data, response } = await client.messages.create(hello()).withResponse();
    assert.deepEqual(data.content[0], {
      type: 'tool_use',
      id: 'toolu_fixed',
      name: 'Read',
      input,
      caller: { type: 'direct' },
    });
    assert.match(response.headers.get('request-id') ?? '', /^req_/);
  });
});

test('thinking blocks stream with a signature the emulator later verifies', async () => {
  const scenario: Scenario = {
    replies: [
      {
        content: [
          { type: 'thinking', thinking: 'Let me think.' },
          { type: 'text', text: 'Done.' },
        ],
      },
      { content: [{ type: 'text', text: 'ok' }] },
    ],
  };
  await withEmu({ scenario }, async (_emu, client) => {
    const thinking = { type: 'enabled', budget_tokens: 2000 } as const;
    const first = await client.messages.stream(hello({ max_tokens: 4000, thinking })).finalMessage();
    const block = first.content[0];
    assert.ok(
      block?.type === 'thinking' && block.thinking === 'Let me think.' && block.signature.length > 20,
    );
    const history = (content: Anthropic.ContentBlockParam[]) =>
      params(
        [
          { role: 'user', content: 'hello' },
          { role: 'assistant', content },
          { role: 'user', content: 'go on' },
        ],
        {
          max_tokens: 4000,
          thinking,
        },
      );
    const tampered = { ...(block as Anthropic.ThinkingBlock), thinking: 'edited' };
    await rejectsWith(client.messages.create(history([tampered])), apiError(400, /Invalid `signature`/));
    const ok = await client.messages.create(history(first.content as Anthropic.ContentBlockParam[]));
    assert.equal(ok.content[0]?.type, 'text');
  });
});

test('a non-streaming create returns the whole message with usage', async () => {
  await withEmu({}, async (emu, client) => {
    const msg = await client.messages.create(hello());
    assert.deepEqual(msg.content, [{ type: 'text', text: 'OK', citations: null }]);
    assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens >= 1);
    assert.deepEqual(emu.requests[0]?.usage?.input_tokens, msg.usage.input_tokens);
    // SDK 1.x sends the key as a bearer token; the emulator accepts it there or in x-api-key.
    const h = emu.requests[0]?.headers ?? {};
    assert.ok(h['x-api-key'] === 'test' || h['authorization'] === 'Bearer test');
  });
});

test('HTTP faults surface as the SDK errors of the real API, one request per fault', async () => {
  const scenario: Scenario = {
    replies: [
      { fault: { type: 'overloaded' } },
      { fault: { type: 'rate_limit', retryAfterSeconds: 7 } },
      { fault: { type: 'server_error' } },
      { fault: { type: 'server_error', status: 503 } },
      { fault: { type: 'prompt_too_long' } },
      { content: [{ type: 'text', text: 'recovered' }] },
    ],
  };
  await withEmu({ scenario }, async (_emu, client) => {
    await rejectsWith(
      client.messages.create(hello()),
      (e) => e instanceof Anthropic.APIError && e.status === 529,
    );
    await rejectsWith(
      client.messages.create(hello()),
      (e) => e instanceof Anthropic.RateLimitError && e.headers?.get('retry-after') === '7',
    );
    await rejectsWith(client.messages.stream(hello()).finalMessage(), apiError(500, /Internal server error/));
    await rejectsWith(client.messages.create(hello()), apiError(503));
    await rejectsWith(
      client.messages.create(hello()),
      apiError(400, /prompt is too long: \d+ tokens > 200000 maximum/),
    );
    const ok = await client.messages.create(hello());
    assert.equal(ok.content[0]?.type === 'text' && ok.content[0].text, 'recovered');
  });
});

test('the SDK retry loop gets through "529 then success"', async () => {
  const scenario: Scenario = {
    replies: [{ fault: { type: 'overloaded' } }, { content: [{ type: 'text', text: 'second try' }] }],
  };
  await withEmu({ scenario }, async (emu) => {
    const client = new Anthropic({ apiKey: 'test', baseURL: emu.url, maxRetries: 1 });
    const msg = await client.messages.create(hello(), { timeout: 10_000 });
    assert.equal(msg.content[0]?.type === 'text' && msg.content[0].text, 'second try');
    assert.deepEqual(
      emu.requests.map((r) => r.status),
      [529, 200],
    );
  });
});

test('stream faults: mid-stream error event, cut connection, invalid tool JSON', async () => {
  const text = 'a fairly long reply that is split into several deltas before anything goes wrong';
  const scenario: Scenario = {
    replies: [
      { content: [{ type: 'text', text }], fault: { type: 'mid_stream_error', afterEvents: 5 } },
      { content: [{ type: 'text', text }], fault: { type: 'cut_stream' } },
      {
        content: [{ type: 'tool_use', name: 'Read', input: { path: 'a.ts' } }],
        fault: { type: 'invalid_tool_json' },
      },
    ],
  };
  await withEmu({ scenario }, async (emu, client) => {
    const got: string[] = [];
    const s1 = client.messages.stream(hello()).on('text', (t) => got.push(t));
    await rejectsWith(
      s1.finalMessage(),
      (e) => e instanceof APIError && e.status === undefined && /overloaded_error/.test(e.message),
    );
    const partial = got.join('');
    assert.ok(partial.length > 0 && partial.length < text.length && text.startsWith(partial), partial);

    // undici reports the dropped connection as "terminated"; the SDK wraps it.
    await rejectsWith(
      client.messages.stream(hello()).finalMessage(),
      (e) => e instanceof Anthropic.AnthropicError && /terminated/.test(e.message),
    );
    assert.equal(emu.requests[1]?.finished, undefined);
    assert.equal(emu.requests[1]?.eventsWritten, 4);
    assert.equal(emu.requests[1]?.clientDisconnected, undefined);

    // The SDK parses the tool input at content_block_stop and fails the whole stream.
    await rejectsWith(
      client.messages.stream(hello()).finalMessage(),
      (e) => e instanceof Anthropic.AnthropicError && /not valid JSON/.test(e.message),
    );
  });
});

test('a reply scripted for another model is not consumed: 529 for the primary, answer for the fallback', async () => {
  const scenario: Scenario = {
    replies: [{ model: 'fallback-model', content: [{ type: 'text', text: 'from fallback' }] }],
  };
  await withEmu({ scenario }, async (_emu, client) => {
    await rejectsWith(client.messages.create(hello()), apiError(529));
    const msg = await client.messages.create(hello({ model: 'fallback-model' }));
    assert.equal(msg.content[0]?.type === 'text' && msg.content[0].text, 'from fallback');
    assert.equal(msg.model, 'fallback-model');
  });
});

test('scenario expectations, exhaustion, repeat_last and function scenarios', async () => {
  const toolTurn = (isError: boolean): Anthropic.MessageParam[] => [
    { role: 'user', content: 'list' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'LS', input: {} }] },
    {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'README.md', is_error: isError }],
    },
  ];
  const expecting: Scenario = {
    replies: [
      {
        expect: { toolResultContains: 'README.md', toolResultIsError: false },
        content: [{ type: 'text', text: 'seen' }],
      },
    ],
  };
  await withEmu({ scenario: expecting }, async (emu, client) => {
    await rejectsWith(
      client.messages.create(params(toolTurn(true))),
      apiError(400, /scenario expectation failed: .*is_error/),
    );
    const ok = await client.messages.create(params(toolTurn(false)));
    assert.equal(ok.content[0]?.type === 'text' && ok.content[0].text, 'seen');
    await rejectsWith(client.messages.create(hello()), apiError(400, /scenario exhausted/));
    emu.setScenario({
      replies: [{ fault: { type: 'overloaded' } }, { content: [{ type: 'text', text: 'again' }] }],
      onExhausted: 'repeat_last',
    });
    await rejectsWith(client.messages.create(hello()), apiError(529));
    for (let i = 0; i < 3; i++) {
      const m = await client.messages.create(hello());
      assert.equal(m.content[0]?.type === 'text' && m.content[0].text, 'again');
    }
    emu.setScenario({
      respond: (req, i) => ({ content: [{ type: 'text', text: `#${i} ${req.messages.length}` }] }),
    });
    const m = await client.messages.create(params(toolTurn(false)));
    assert.equal(m.content[0]?.type === 'text' && m.content[0].text, '#0 3');
  });
});

test('validation errors mirror the API for each rule', async () => {
  const tu = (id: string): Anthropic.ToolUseBlockParam => ({ type: 'tool_use', id, name: 'LS', input: {} });
  const tr = (id: string): Anthropic.ToolResultBlockParam => ({
    type: 'tool_result',
    tool_use_id: id,
    content: 'x',
  });
  const cc = { type: 'ephemeral' } as const;
  const cases: Array<[string, unknown, RegExp]> = [
    [
      'model required',
      { max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
      /^model: Field required$/,
    ],
    [
      'max_tokens required',
      { model: MODEL, messages: [{ role: 'user', content: 'hi' }] },
      /max_tokens: Field required/,
    ],
    ['messages non-empty', params([]), /at least one message/],
    [
      'first message user',
      params([{ role: 'assistant', content: 'hi' }]),
      /first message must use the "user" role/,
    ],
    [
      'empty text block',
      params([{ role: 'user', content: [{ type: 'text', text: '' }] }]),
      /text content blocks must be non-empty/,
    ],
    [
      'tool_use without result',
      params([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [tu('toolu_a')] },
        { role: 'user', content: 'b' },
      ]),
      /messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a/,
    ],
    [
      'tool_result must come first',
      params([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [tu('toolu_a')] },
        { role: 'user', content: [{ type: 'text', text: 'note' }, tr('toolu_a')] },
      ]),
      /`tool_result` blocks must come first/,
    ],
    [
      'tool_result without tool_use',
      params([{ role: 'user', content: [tr('toolu_x')] }]),
      /unexpected `tool_use_id`.*toolu_x/,
    ],
    [
      'duplicate tool_use ids',
      params([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [tu('toolu_d'), tu('toolu_d')] },
        { role: 'user', content: [tr('toolu_d')] },
      ]),
      /`tool_use` ids must be unique/,
    ],
    [
      'more than 4 cache_control blocks',
      params([
        {
          role: 'user',
          content: [1, 2, 3, 4, 5].map((n) => ({ type: 'text' as const, text: `t${n}`, cache_control: cc })),
        },
      ]),
      /A maximum of 4 blocks with cache_control may be provided\. Found 5\./,
    ],
    [
      'tool name pattern',
      hello({ tools: [{ name: 'bad name!', input_schema: { type: 'object' } }] }),
      /tools\.0\.custom\.name: String should match pattern/,
    ],
    [
      'input_schema type object',
      { ...hello(), tools: [{ name: 'ok', input_schema: { type: 'array' } }] },
      /input_schema\.type: Input should be 'object'/,
    ],
    [
      'thinking only in assistant messages',
      {
        ...hello(),
        messages: [{ role: 'user', content: [{ type: 'thinking', thinking: 'x', signature: 's' }] }],
      },
      /thinking blocks may only appear in assistant messages/,
    ],
    [
      'an image in a tool_result is checked like any image',
      params([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [tu('toolu_i')] },
        {
          role: 'user',
          content: [{ ...tr('toolu_i'), content: [pngBlock(Buffer.from('not a png at all'))] }],
        },
      ]),
      /messages\.2\.content\.0\.content\.0: Image does not match the provided media type image\/png/,
    ],
    [
      'an image over 8000 px is refused',
      params([{ role: 'user', content: [pngBlock(png(8001, 1))] }]),
      /image dimensions exceed max allowed size: 8000 pixels/,
    ],
    [
      'a tool_result holds text, images, documents and search results only',
      params([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [tu('toolu_j')] },
        {
          role: 'user',
          content: [
            { ...tr('toolu_j'), content: [{ type: 'tool_use', id: 'x', name: 'y', input: {} } as never] },
          ],
        },
      ]),
      /content\.0: Input tag 'tool_use' found using 'type' does not match any of the expected tags/,
    ],
  ];
  await withEmu({}, async (_emu, client) => {
    for (const [name, body, pattern] of cases) {
      await rejectsWith(client.messages.create(body as CreateParams), (e) => {
        assert.ok(e instanceof Anthropic.BadRequestError, `${name}: expected 400, got ${String(e)}`);
        const body = (e.error as { error?: { type?: string; message?: string } }).error;
        assert.equal(body?.type, 'invalid_request_error');
        assert.match(body?.message ?? '', pattern, name);
        return true;
      });
    }
    // Consecutive same-role messages are merged by the API, so pairing spans them.
    const merged = await client.messages.create(
      params([
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
        { role: 'assistant', content: [tu('toolu_m')] },
        { role: 'user', content: [tr('toolu_m')] },
        { role: 'user', content: 'and then' },
      ]),
    );
    assert.equal(merged.type, 'message');
    // A real image inside a tool result is accepted, as the API accepts it.
    const withImage = await client.messages.create(
      params([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [tu('toolu_k')] },
        {
          role: 'user',
          content: [{ ...tr('toolu_k'), content: [{ type: 'text', text: 'shot' }, pngBlock(png(4, 4))] }],
        },
      ]),
    );
    assert.equal(withImage.type, 'message');
  });
});

function pngBlock(bytes: Buffer): Anthropic.ImageBlockParam {
  return {
    type: 'image',
    source: { type: 'base64', media_type: 'image/png', data: bytes.toString('base64') },
  };
}

test('authentication and anthropic-version headers are required; count_tokens works', async () => {
  await withEmu({}, async (emu, client) => {
    const post = (headers: Record<string, string>) =>
      fetch(`${emu.url}/v1/messages`, { method: 'POST', headers, body: JSON.stringify(hello()) });
    const noKey = await post({ 'anthropic-version': '2023-06-01' });
    assert.equal(noKey.status, 401);
    assert.equal(((await noKey.json()) as { error: { type: string } }).error.type, 'authentication_error');
    const noVersion = await post({ authorization: 'Bearer x' });
    assert.equal(noVersion.status, 400);
    assert.match(noVersion.headers.get('request-id') ?? '', /^req_/);
    const counted = await client.messages.countTokens({
      model: MODEL,
      messages: [{ role: 'user', content: 'hello' }],
    });
    const msg = await client.messages.create(hello());
    assert.equal(counted.input_tokens, msg.usage.input_tokens);
  });
});

test('a prompt larger than the context window is rejected with the real wording', async () => {
  await withEmu({ contextWindow: 50 }, async (_emu, client) => {
    await client.messages.create(hello());
    await rejectsWith(
      client.messages.create(params([{ role: 'user', content: 'x'.repeat(400) }])),
      apiError(400, /prompt is too long: \d+ tokens > 50 maximum/),
    );
  });
});

test('prompt cache: each call reads what the previous one wrote, through the 20-block lookback', async () => {
  const system: Anthropic.TextBlockParam[] = [
    { type: 'text', text: 'You are careful. '.repeat(400), cache_control: { type: 'ephemeral' } },
  ];
  const convo: Anthropic.MessageParam[] = [];
  const call = async (client: Anthropic, userText: string) => {
    convo.push({ role: 'user', content: userText });
    // Only the newest message carries the moving breakpoint, as a client following the API docs does.
    const messages = convo.map((m, i) =>
      i === convo.length - 1
        ? {
            ...m,
            content: [
              { type: 'text' as const, text: userText, cache_control: { type: 'ephemeral' as const } },
            ],
          }
        : m,
    );
    const res = await client.messages.create(params(messages, { system }));
    convo.push({ role: 'assistant', content: res.content as Anthropic.ContentBlockParam[] });
    const { input_tokens } = await client.messages.countTokens({ model: MODEL, system, messages });
    const u = res.usage;
    assert.equal(
      u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
      input_tokens,
    );
    return u;
  };
  await withEmu({ scenario: { replies: [], onExhausted: 'echo' } }, async (_emu, client) => {
    const u1 = await call(client, 'first question');
    assert.equal(u1.cache_read_input_tokens, 0);
    assert.ok((u1.cache_creation_input_tokens ?? 0) > 1024);
    assert.equal(u1.input_tokens, 0);
    const u2 = await call(client, 'second question');
    assert.equal(u2.cache_read_input_tokens, u1.cache_creation_input_tokens);
    assert.ok((u2.cache_creation_input_tokens ?? 0) > 0);
    const u3 = await call(client, 'third question');
    assert.equal(
      u3.cache_read_input_tokens,
      (u2.cache_read_input_tokens ?? 0) + (u2.cache_creation_input_tokens ?? 0),
    );
    // 21 appended blocks put the previous breakpoint out of lookback reach: only the system prefix is read.
    convo.push({
      role: 'user',
      content: Array.from({ length: 20 }, (_, i) => ({ type: 'text' as const, text: `note ${i}` })),
    });
    const u4 = await call(client, 'fourth question');
    const count = async (sys?: Anthropic.TextBlockParam[]) =>
      (
        await client.messages.countTokens({
          model: MODEL,
          messages: [{ role: 'user', content: 'x' }],
          ...(sys ? { system: sys } : {}),
        })
      ).input_tokens;
    assert.equal(u4.cache_read_input_tokens, (await count(system)) - (await count()));
  });
});

test('prompt cache: 5-minute TTL refreshed by reads, expiry with the injected clock, 1024-token minimum', async () => {
  let now = 1_000_000;
  const big = 'stable prefix text. '.repeat(400);
  const req = hello({ system: [{ type: 'text', text: big, cache_control: { type: 'ephemeral' } }] });
  await withEmu({ now: () => now }, async (_emu, client) => {
    const first = (await client.messages.create(req)).usage;
    assert.ok((first.cache_creation_input_tokens ?? 0) > 1024 && first.cache_read_input_tokens === 0);
    now += 299_000;
    assert.equal(
      (await client.messages.create(req)).usage.cache_read_input_tokens,
      first.cache_creation_input_tokens,
    );
    now += 299_000; // 598 s after the write, but only 299 s after the read that refreshed it
    assert.equal(
      (await client.messages.create(req)).usage.cache_read_input_tokens,
      first.cache_creation_input_tokens,
    );
    now += 300_001;
    const expired = (await client.messages.create(req)).usage;
    assert.equal(expired.cache_read_input_tokens, 0);
    assert.equal(expired.cache_creation_input_tokens, first.cache_creation_input_tokens);

    const small = hello({ system: [{ type: 'text', text: 'short', cache_control: { type: 'ephemeral' } }] });
    for (let i = 0; i < 2; i++) {
      const u = (await client.messages.create(small)).usage;
      assert.equal(u.cache_creation_input_tokens, 0);
      assert.equal(u.cache_read_input_tokens, 0);
    }
  });
});

test('aborting a slow stream ends quickly on the client and the server stops writing', async () => {
  // Hundreds of events 50 ms apart: the whole stream would take over 20 s.
  const text = 'slow words '.repeat(200);
  await withEmu(
    { scenario: { replies: [{ content: [{ type: 'text', text }], fault: { type: 'slow', delayMs: 50 } }] } },
    async (emu, client) => {
      const stream = client.messages.stream(hello());
      const started = Date.now();
      let texts = 0;
      stream.on('text', () => {
        if (++texts === 2) stream.abort();
      });
      await rejectsWith(stream.finalMessage(), (e) => e instanceof Anthropic.APIUserAbortError);
      assert.ok(Date.now() - started < 10_000, 'the abort waited for the stream');
      const rec = emu.requests[0]!;
      // The server learns of the closed socket asynchronously (a moment later on a loaded machine).
      await waitFor(() => rec.clientDisconnected === true, 5000, 'the server to see the client leave');
      const written = rec.eventsWritten ?? 0;
      await sleep(300);
      assert.equal(rec.eventsWritten, written, 'server kept writing after the client left');
      assert.ok(written < 40, `${written} events written`);
    },
  );
});

test('the demo repertoire is keyed on what the user typed, and the CLI serves it on the URL it prints', async () => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/emulator/cli.ts', '--scenario', 'demo', '--port', '0'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const lines = createInterface({ input: child.stdout! });
    const [url] = (await once(lines, 'line')) as [string];
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const client = new Anthropic({ apiKey: 'test', baseURL: url, maxRetries: 0 });
    const tools: Anthropic.Tool[] = ['LS', 'Read', 'Edit', 'Bash'].map((name) => ({
      name,
      input_schema: { type: 'object' },
    }));
    // One conversation, several prompts: each new prompt starts its own script.
    const convo: Anthropic.MessageParam[] = [];
    const ask = async (prompt: string, result: (name: string) => string) => {
      convo.push({ role: 'user', content: prompt });
      const calls: string[] = [];
      for (let turn = 0; turn < 8; turn++) {
        const msg = await client.messages.stream(params(convo, { tools })).finalMessage();
        convo.push({ role: 'assistant', content: msg.content as Anthropic.ContentBlockParam[] });
        const use = msg.content.find((b) => b.type === 'tool_use');
        if (!use) return { calls, text: msg.content.map((b) => (b.type === 'text' ? b.text : '')).join('') };
        calls.push(use.name === 'Bash' ? `Bash ${(use.input as { command: string }).command}` : use.name);
        const denied = use.name === 'Bash' && (use.input as { command: string }).command.startsWith('rm');
        convo.push({
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: use.id,
              content: denied ? 'DENIED_BY_USER: The user denied running it' : result(use.name),
              ...(denied ? { is_error: true } : {}),
            },
          ],
        });
      }
      throw new Error('the demo script did not end');
    };
    const ok = (name: string) =>
      name === 'Bash' ? '{"exit_code":0,"stdout":"# pass 1\\n# fail 0"}' : '1\texport function greet(name) {';
    const explained = await ask('Explain src/greet.js', ok);
    assert.deepEqual(explained.calls, ['Read']);
    assert.match(explained.text, /src\/greet\.js:3/);
    const added = await ask('add a farewell function', ok);
    assert.deepEqual(added.calls, ['Read', 'Edit', 'Bash npm test']);
    assert.match(added.text, /the tests pass[\s\S]*pending review/);
    // Keel's own Bash result, with node's spec reporter (the default of newer Node versions).
    const keelBash = (code: number) => (name: string) =>
      name === 'Bash'
        ? `Exit code: ${code}\nstdout:\n<command-output source="bash" stream="stdout" trust="untrusted">\n> node --test\n\nℹ tests 1\nℹ pass ${1 - code}\nℹ fail ${code}\n</command-output>`
        : '1\texport function greet(name) {';
    assert.match((await ask('add a farewell function', keelBash(0))).text, /the tests pass/);
    assert.match((await ask('add a farewell function', keelBash(1))).text, /the tests did not pass/);
    const deleted = await ask('delete the build folder', ok);
    assert.deepEqual(deleted.calls, ['Bash rm -r build']);
    assert.match(deleted.text, /You declined/);
    const toured = await ask('hello there', ok);
    assert.deepEqual(toured.calls, ['LS', 'Read', 'Read', 'Edit']);
    assert.match(toured.text, /demo|scripted/i);
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
});

test('cut stream on a non-streaming request drops the connection', async () => {
  await withEmu(
    { scenario: { replies: [{ fault: { type: 'cut_stream' }, content: [{ type: 'text', text: 'x' }] }] } },
    async (_emu, client) => {
      await rejectsWith(client.messages.create(hello()), (e) => e instanceof APIConnectionError);
    },
  );
});

test('scenario threads: a conversation is routed by its first user message, each with its own replies', async () => {
  const { parseScenario } = await import('../emulator/scenario.ts');
  const scenario = parseScenario({
    replies: [
      { content: [{ type: 'text', text: 'main 1' }] },
      { content: [{ type: 'text', text: 'main 2' }] },
    ],
    threads: [{ firstUserContains: 'CHILD', replies: [{ content: [{ type: 'text', text: 'child 1' }] }] }],
  });
  await withEmu({ scenario }, async (_emu, client) => {
    const ask = async (first: string, more: Anthropic.MessageParam[] = []) => {
      const m = await client.messages.create(params([{ role: 'user', content: first }, ...more]));
      return m.content[0]?.type === 'text' ? m.content[0].text : '';
    };
    assert.equal(await ask('parent task'), 'main 1');
    // The child's first user message decides, not its latest one.
    assert.equal(await ask('CHILD: look'), 'child 1');
    assert.equal(
      await ask('parent task', [
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'CHILD mentioned later' },
      ]),
      'main 2',
    );
    await rejectsWith(ask('CHILD again'), apiError(400, /scenario exhausted/));
  });
  assert.throws(
    () => parseScenario({ replies: [], threads: [{ firstUserContains: '', replies: [] }] }),
    /threads/,
  );
});
