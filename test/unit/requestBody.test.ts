import assert from 'node:assert/strict';
import { test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { countBreakpoints } from '../../src/agent/context/breakpoints.ts';
import { createContextEngine } from '../../src/agent/context/engine.ts';
import { isCompactionRequest } from '../../src/agent/context/summarizeRequest.ts';
import type { AgentMessage } from '../../src/agent/messages.ts';
import { replyText } from '../../src/agent/model/ask.ts';
import { createModelClient, type ModelRequest } from '../../src/agent/model/client.ts';
import { createBodyEncoder } from '../../src/agent/model/requestBody.ts';
import { startEmulator } from '../emulator/server.ts';

// The model client sends a pre-serialised body (only what is new since the previous call is
// stringified). What reaches the server must be, byte for byte, what JSON.stringify of the request
// gives — the body the SDK's own messages.create would send — on every call of a session whose
// context moves in every way the engine moves it: new turns, tool results, moving cache markers,
// volatile notes, pruning edits on a cold cache, a compaction (in-context summary request).

const MODEL = 'claude-sonnet-4-6';
const TOOLS: Anthropic.Tool[] = [
  {
    name: 'Read',
    description: 'Read a file. Use for source files — "quoted" text, unicode ✓ and emoji 🚀 survive.',
    input_schema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
  },
];
const MINUTE = 60_000;

function fileText(i: number): string {
  // Non-ASCII, escapes and a lone surrogate: JSON.stringify's escaping must be reproduced exactly.
  return Array.from(
    { length: 40 },
    (_, n) =>
      `${n}\tconst v${i}_${n} = "naïve ${'\u{1F600}'}" + '\\t' + \`\${x}\`; // ${n % 7 === 0 ? '\uD800' : 'ok'}`,
  ).join('\n');
}

test('the pre-serialised body is byte-identical to JSON.stringify of the request across a session with pruning and compaction', async () => {
  const emu = await startEmulator({
    contextWindow: 10_000_000,
    scenario: {
      respond: (req, index) =>
        isCompactionRequest(req as unknown as { messages: Anthropic.MessageParam[] })
          ? { content: [{ type: 'text', text: '## Decisions\n- Keep going with the refactor ✓.' }] }
          : {
              content: [
                {
                  type: 'text',
                  text: `Reading part ${index} — “next”. ${'Reasoning about the refactor. '.repeat(20)}`,
                },
                { type: 'tool_use', name: 'Read', input: { file_path: `src/part${index}.ts` } },
              ],
            },
    },
  });
  try {
    const client = createModelClient({ models: [MODEL], apiKey: 'test', baseURL: emu.url });
    const signal = new AbortController().signal;
    const expected: string[] = [];
    const sent: ModelRequest[] = [];
    const send = (request: ModelRequest) => {
      sent.push(request);
      expected.push(
        JSON.stringify({
          model: MODEL,
          max_tokens: request.maxTokens,
          system: request.system,
          tools: request.tools,
          messages: request.messages,
          stream: true,
        }),
      );
      return client.stream(request, signal);
    };
    let seq = 0;
    const engine = createContextEngine({
      tools: TOOLS,
      contextWindow: 9_000,
      longCacheTtl: 'stable',
      newId: () => `ctx${++seq}`,
      summarize: async () => '## Decisions\n- standalone summary',
      summarizeInContext: async (request) => replyText(await send({ ...request, maxTokens: 4096 })),
    });
    const transcript: AgentMessage[] = [
      { role: 'user', id: 'u0', ts: 0, text: 'Refactor the parts. Never touch migrations/.' },
    ];
    let now = 10 * MINUTE;
    let lastCallAt: number | undefined;
    const stages = new Set<number>();
    const markerSpots = new Set<string>();
    for (let call = 0; call < 40; call++) {
      // Mostly a warm cache; every 7th call comes after an idle gap, so the stages may run.
      now += call % 7 === 6 ? 6 * MINUTE : 5_000;
      if (call === 20)
        transcript.push({ role: 'user', id: 'u20', ts: now, text: 'Also rename «v» to “value”.' });
      const { request, appended } = await engine.prepare({
        transcript,
        now,
        lastCallAt,
        signal,
        ...(call % 3 === 0 ? { volatileTail: [`<runtime-note>call ${call}</runtime-note>`] } : {}),
      });
      transcript.push(...appended);
      stages.add(request.stage);
      request.messages.forEach((m, i) => {
        if (Array.isArray(m.content))
          m.content.forEach((b, j) => {
            if ((b as { cache_control?: unknown }).cache_control) markerSpots.add(`${i}:${j}`);
          });
      });
      assert.ok(countBreakpoints(request) <= 4);
      const reply = await send({ ...request, maxTokens: 2048 });
      lastCallAt = now;
      const assistantId = `a${call}`;
      transcript.push({
        role: 'assistant',
        id: assistantId,
        ts: now,
        model: reply.model,
        stopReason: reply.stopReason,
        usage: reply.usage,
        content: reply.content,
      });
      for (const block of reply.content) {
        if (block.type !== 'tool_use') continue;
        const content = fileText(call);
        transcript.push({
          role: 'tool_result',
          id: `r${call}`,
          ts: now,
          toolUseId: block.id,
          toolName: 'Read',
          content,
          isError: call % 11 === 5,
          result: { status: 'success', data: null, text: content, stats: { time_ms: 1 } },
        });
      }
    }
    // The session really moved in every way: pruning edits and a compaction, markers on many spots,
    // and the in-context summary request went through the same client.
    assert.ok(stages.has(3), `a compaction happened (stages seen: ${[...stages]})`);
    assert.ok(
      [...stages].some((s) => s === 1 || s === 2),
      'a pruning stage ran',
    );
    assert.ok(markerSpots.size > 10, 'cache markers moved');
    assert.ok(
      sent.some((r) => isCompactionRequest(r)),
      'the in-context summary request was sent',
    );
    assert.equal(emu.requests.length, expected.length);
    emu.requests.forEach((record, i) => {
      assert.equal(record.status, 200, `call ${i}: ${record.error?.message}`);
      assert.ok(record.raw === expected[i], `call ${i}: the body sent differs from JSON.stringify`);
    });
    // Nothing mutated a request after it was sent (the serialiser reuses bytes per message object).
    sent.forEach((request, i) => {
      const again = JSON.stringify({
        model: MODEL,
        max_tokens: request.maxTokens,
        system: request.system,
        tools: request.tools,
        messages: request.messages,
        stream: true,
      });
      assert.ok(again === expected[i], `call ${i}: the request objects changed after they were sent`);
    });
  } finally {
    await emu.close();
  }
});

test('the client sends the same headers as the SDK’s own messages.create for the same request', async () => {
  const emu = await startEmulator({
    scenario: { replies: [{ content: [{ type: 'text', text: 'ok' }] }], onExhausted: 'repeat_last' },
  });
  try {
    const request = {
      system: [{ type: 'text' as const, text: 'You are terse.' }],
      tools: TOOLS,
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hi ✓' }] }],
    };
    const client = createModelClient({ models: [MODEL], apiKey: 'test', baseURL: emu.url });
    await client.stream({ ...request, maxTokens: 100 }, new AbortController().signal);
    const sdk = new Anthropic({ apiKey: 'test', baseURL: emu.url, maxRetries: 0, timeout: 10 * 60 * 1000 });
    const stream = await sdk.messages.create({ model: MODEL, max_tokens: 100, ...request, stream: true });
    for await (const _ of stream) {
      // drain
    }
    const [ours, theirs] = emu.requests;
    assert.ok(ours && theirs);
    assert.equal(ours.raw, theirs.raw);
    assert.deepEqual(ours.headers, theirs.headers);
  } finally {
    await emu.close();
  }
});

test('only messages new since the previous call are serialised; the rest is reused as bytes', () => {
  const reads = new Map<string, number>();
  // A message whose content getter counts how often a serialiser reads it.
  const counted = (id: string, text: string): Anthropic.MessageParam => {
    const message = { role: 'user' as const } as Anthropic.MessageParam;
    Object.defineProperty(message, 'content', {
      enumerable: true,
      get: () => {
        reads.set(id, (reads.get(id) ?? 0) + 1);
        return [{ type: 'text', text }];
      },
    });
    return message;
  };
  const old = Array.from({ length: 50 }, (_, i) => counted(`m${i}`, `message ${i} ✓`));
  const params = (messages: Anthropic.MessageParam[]) => ({
    model: MODEL,
    max_tokens: 100,
    system: [{ type: 'text' as const, text: 'sys', cache_control: { type: 'ephemeral' as const } }],
    tools: TOOLS,
    messages,
    stream: true as const,
  });
  const encoder = createBodyEncoder();
  const first = encoder.encode(params(old));
  assert.equal(Buffer.from(first).toString(), JSON.stringify(params(old)));
  reads.clear();
  const next = [...old, counted('new', 'the newest message')];
  const body = Buffer.from(encoder.encode(params(next))).toString();
  assert.deepEqual([...reads.keys()], ['new'], 'only the new message was read');
  reads.clear();
  assert.equal(body, JSON.stringify(params(next)));
  // A copy of a middle message (a moved cache marker) is serialised again; what follows it too.
  const marked: Anthropic.MessageParam = {
    role: 'user',
    content: [{ type: 'text', text: 'message 25 ✓', cache_control: { type: 'ephemeral' } }],
  };
  const moved = [...next.slice(0, 25), marked, ...next.slice(26)];
  reads.clear();
  const movedBody = Buffer.from(encoder.encode(params(moved))).toString();
  assert.ok(!reads.has('m10'), 'messages before the change are reused');
  reads.clear();
  assert.equal(movedBody, JSON.stringify(params(moved)));
  // A different system (another session's prefix) starts over and is still exact.
  const other = { ...params(moved), system: [{ type: 'text' as const, text: 'other' }] };
  assert.equal(Buffer.from(encoder.encode(other)).toString(), JSON.stringify(other));
});

test('through the model client, a call serialises only the messages that are new since the previous one', async () => {
  const emu = await startEmulator({
    scenario: { replies: [{ content: [{ type: 'text', text: 'ok' }] }], onExhausted: 'repeat_last' },
  });
  try {
    const serialised: string[] = [];
    // toJSON is what JSON.stringify calls for an object: it counts who serialises the message, wherever.
    const message = (id: string, text: string): Anthropic.MessageParam => {
      const plain = { role: 'user' as const, content: [{ type: 'text' as const, text }] };
      Object.defineProperty(plain, 'toJSON', {
        enumerable: false,
        value: () => {
          serialised.push(id);
          return { role: plain.role, content: plain.content };
        },
      });
      return plain;
    };
    const assistant = (text: string): Anthropic.MessageParam => ({
      role: 'assistant',
      content: [{ type: 'text', text }],
    });
    const client = createModelClient({ models: [MODEL], apiKey: 'test', baseURL: emu.url });
    const signal = new AbortController().signal;
    const system = [{ type: 'text' as const, text: 'You are terse.' }];
    const first = [message('u1', 'first question')];
    await client.stream({ system, tools: TOOLS, messages: first, maxTokens: 100 }, signal);
    assert.deepEqual(serialised, ['u1']);
    serialised.length = 0;
    const second = [...first, assistant('ok'), message('u2', 'second question')];
    await client.stream({ system, tools: TOOLS, messages: second, maxTokens: 100 }, signal);
    assert.deepEqual(serialised, ['u2'], 'the first message was sent from its kept bytes');
    assert.equal(
      emu.requests[1]?.raw,
      JSON.stringify({ model: MODEL, max_tokens: 100, system, tools: TOOLS, messages: second, stream: true }),
    );
  } finally {
    await emu.close();
  }
});
