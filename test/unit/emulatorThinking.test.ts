import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { type Emulator, startEmulator } from '../emulator/server.ts';

// The emulator's thinking and max_tokens rules, through the real SDK: what makes the session tests in
// thinking.test.ts able to fail (a lost or changed thinking block is a 400, a long reply is cut).

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

test('the emulator answers 400 when a tool turn lost its thinking or a signature was tampered with', async () => {
  emu.setScenario({
    replies: [
      {
        content: [
          { type: 'thinking', thinking: 'I should read it.' },
          { type: 'tool_use', name: 'Read', input: { path: 'a' }, id: 'toolu_01AAAAAAAAAAAAAAAAAAAAAA' },
        ],
      },
      { content: [{ type: 'text', text: 'fine' }] },
    ],
    onExhausted: 'repeat_last',
  });
  const client = new Anthropic({ apiKey: 'k', baseURL: emu.url, maxRetries: 0 });
  const tools = [{ name: 'Read', input_schema: { type: 'object' as const, properties: {} } }];
  const base = {
    model: 'claude-sonnet-4-6',
    max_tokens: 4096,
    tools,
    thinking: { type: 'adaptive' },
  } as const;
  const first = await client.messages
    .stream({ ...base, messages: [{ role: 'user', content: 'read a' }] } as never)
    .finalMessage();
  const [thought, use] = first.content;
  assert.ok(thought?.type === 'thinking' && use?.type === 'tool_use');
  const next = (assistant: Anthropic.ContentBlockParam[]) =>
    client.messages.create({
      ...base,
      messages: [
        { role: 'user', content: 'read a' },
        { role: 'assistant', content: assistant },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'x' }] },
      ],
    } as never);
  await assert.rejects(next([use as Anthropic.ContentBlockParam]), (e: unknown) => {
    assert.ok(e instanceof Anthropic.APIError && e.status === 400);
    assert.match(e.message, /Expected `thinking` or `redacted_thinking`, but found `tool_use`/);
    return true;
  });
  await assert.rejects(
    next([
      { ...thought, signature: `${thought.signature.slice(0, -4)}AAA=` },
      use,
    ] as Anthropic.ContentBlockParam[]),
    (e: unknown) => e instanceof Anthropic.APIError && e.status === 400 && /signature/.test(e.message),
  );
  const ok = await next([thought, use] as Anthropic.ContentBlockParam[]);
  assert.equal(ok.content[0]?.type, 'text');
  // Without `thinking` the model does not think: scripted thinking is left out.
  const plain = await client.messages.create({
    model: 'claude-sonnet-4-6',
    max_tokens: 100,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.ok(plain.content.every((b) => b.type !== 'thinking'));
});

test('the emulator cuts a reply longer than max_tokens and says max_tokens', async () => {
  emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'word '.repeat(400) }] }] });
  const client = new Anthropic({ apiKey: 'k', baseURL: emu.url, maxRetries: 0 });
  const reply = await client.messages
    .stream({ model: 'claude-sonnet-4-6', max_tokens: 50, messages: [{ role: 'user', content: 'talk' }] })
    .finalMessage();
  assert.equal(reply.stop_reason, 'max_tokens');
  assert.equal(reply.usage.output_tokens, 50);
  assert.equal(reply.content[0]?.type === 'text' && reply.content[0].text.length, 200);
});
