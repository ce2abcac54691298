import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { rgPath } from '@vscode/ripgrep';
import { toLlm } from '../../src/agent/messages.ts';
import { cutToolUse } from '../../src/agent/modelTurn.ts';
import {
  INTERLEAVED_THINKING_BETA,
  outputLimitFor,
  supportsThinking,
  thinkingPlan,
} from '../../src/agent/model/models.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { loadSession } from '../../src/agent/session/log.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import type { AgentSessionOptions } from '../../src/agent/session/types.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { tempWorkspace } from './helpers/cli.ts';

// Thinking and output limits end to end: the real SDK against the emulator, which signs thinking,
// rejects a history that lost or changed it (400, as the API), and cuts replies at max_tokens.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

function session(workspace: string, extra: Partial<AgentSessionOptions> = {}) {
  const host = createNodeHost({ workspace, approvals: createPolicyApprovals('all'), ripgrepPath: rgPath });
  return createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
    userMemoryFile: null,
    checkpoints: false,
    ...extra,
  });
}

const lines = (n: number, tag = 'line') =>
  Array.from({ length: n }, (_, i) => `${tag} ${i + 1}: const value${i} = compute(${i}) + offset;`).join(
    '\n',
  );

/** 20 tool calls (reads, greps, edits, commands), each reply opening with a short thought, then an answer. */
function toolSession(): ScriptedReply[] {
  const replies: ScriptedReply[] = [];
  for (let i = 0; i < 20; i++) {
    const m = i % 5;
    const call =
      i % 4 === 0
        ? { type: 'tool_use' as const, name: 'Read', input: { path: `src/m${m}.ts` } }
        : i % 4 === 1
          ? { type: 'tool_use' as const, name: 'Grep', input: { pattern: `value${i}\\b`, path: 'src' } }
          : i % 4 === 2
            ? {
                type: 'tool_use' as const,
                name: 'Edit',
                input: { path: `src/m${m}.ts`, old_string: `value${i} =`, new_string: `value${i}b =` },
              }
            : { type: 'tool_use' as const, name: 'Bash', input: { command: `echo step ${i}` } };
    replies.push({
      content: [
        { type: 'thinking', thinking: `Step ${i}: ${call.name} next, on module ${m}.` },
        ...(i % 3 === 0 ? [{ type: 'text' as const, text: `Working on module ${m}.` }] : []),
        call,
      ],
    });
  }
  replies.push({
    content: [
      { type: 'thinking', thinking: 'All done; summarise.' },
      { type: 'text', text: 'Done.' },
    ],
  });
  return replies;
}

function sourceFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let m = 0; m < 5; m++) files[`src/m${m}.ts`] = `${lines(120, `m${m}`)}\n`;
  return files;
}

// Each side on a fresh emulator: a cache warmed by the other side would flatter the second.
async function runToolSession(effort: 'medium' | 'off') {
  const own = await startEmulator({ scenario: { replies: toolSession() } });
  const workspace = tempWorkspace(sourceFiles());
  const s = session(workspace, { effort, baseURL: own.url });
  const outcome = await s.prompt('Update the modules.');
  s.dispose();
  await own.close();
  const sent = own.requests;
  let read = 0;
  let all = 0;
  for (const r of sent) {
    const u = r.usage;
    if (!u) continue;
    read += u.cache_read_input_tokens;
    all += u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
  }
  return { outcome, sent, hit: read / all, log: s.logPath, id: s.id, workspace };
}

test('a 20-call tool session with thinking on: 0 400s, signatures intact, cache hit within 0.01 of thinking off', async () => {
  const on = await runToolSession('medium');
  assert.equal(on.outcome.status, 'finished', on.outcome.error);
  assert.equal(on.outcome.finalText, 'Done.');
  assert.deepEqual(
    on.sent.filter((r) => r.status !== 200).map((r) => r.error?.message),
    [],
    'no request was refused',
  );
  assert.equal(on.sent.length, 21);
  const last = on.sent.at(-1)!.request!;
  assert.deepEqual(last.thinking, { type: 'adaptive' });
  assert.deepEqual(last.output_config, { effort: 'medium' });
  assert.equal(last.max_tokens, 128_000);
  // Every tool turn went back with its thinking block first (the emulator verified each signature).
  const assistantTurns = last.messages.filter((m) => m.role === 'assistant');
  assert.equal(assistantTurns.length, 20);
  for (const turn of assistantTurns) assert.equal((turn.content as { type: string }[])[0]?.type, 'thinking');

  const off = await runToolSession('off');
  assert.equal(off.outcome.status, 'finished', off.outcome.error);
  assert.equal(off.sent.filter((r) => r.status !== 200).length, 0);
  assert.equal(off.sent.at(-1)!.request!.thinking, undefined);
  assert.ok(
    off.sent.every((r) => !JSON.stringify(r.body).includes('"thinking"')),
    'no thinking without asking',
  );
  // The prefix (tools + system) is the same bytes with thinking on and off (P1).
  const prefix = (r: (typeof on.sent)[number]) => JSON.stringify([r.request!.tools, r.request!.system]);
  assert.equal(prefix(on.sent[0]!), prefix(off.sent[0]!));
  process.stdout.write(`# cache hit: thinking on ${on.hit.toFixed(4)}, off ${off.hit.toFixed(4)}\n`);
  assert.ok(Math.abs(on.hit - off.hit) <= 0.01, `on ${on.hit} vs off ${off.hit}`);

  // Thinking is output: the trace's output tokens are larger with it.
  const out = (r: typeof on) => r.sent.reduce((n, x) => n + (x.usage?.output_tokens ?? 0), 0);
  assert.ok(out(on) > out(off));

  // The log keeps the blocks with their signatures; a resumed session sends them back and is accepted.
  const logged = loadSession(on.log).messages.filter((m) => m.role === 'assistant');
  const thinking = logged.flatMap((m) => m.content.filter((b) => b.type === 'thinking'));
  assert.equal(thinking.length, 21);
  assert.ok(thinking.every((b) => b.type === 'thinking' && b.signature.length > 20));
  emu.setScenario({
    replies: [
      {
        content: [
          { type: 'thinking', thinking: 'Resumed.' },
          { type: 'text', text: 'ok' },
        ],
      },
    ],
  });
  const resumed = session(on.workspace, { resumeId: on.id });
  const again = await resumed.prompt('One more thing.');
  resumed.dispose();
  assert.equal(again.status, 'finished', again.error);
  assert.equal(emu.requests.at(-1)!.status, 200);
});

test('a Write of a 3,000-line file completes in one turn (max_tokens at the model limit)', async () => {
  const workspace = tempWorkspace({});
  const content = `${lines(3000)}\n`;
  emu.setScenario({
    replies: [
      { content: [{ type: 'tool_use', name: 'Write', input: { path: 'big.ts', content } }] },
      { expect: { toolResultIsError: false }, content: [{ type: 'text', text: 'written' }] },
    ],
  });
  const from = emu.requests.length;
  const s = session(workspace);
  const outcome = await s.prompt('Write big.ts');
  s.dispose();
  assert.equal(outcome.status, 'finished', outcome.error);
  assert.equal(fs.readFileSync(path.join(workspace, 'big.ts'), 'utf8'), content);
  const sent = emu.requests.slice(from);
  assert.equal(sent.length, 2, 'one turn for the Write, one for the answer');
  assert.equal(sent[0]!.usage!.output_tokens > 8192, true, 'more than the old fixed limit');
});

test('a reply cut at max_tokens mid-Write is retried once with the model limit, and only the whole call runs', async () => {
  const workspace = tempWorkspace({});
  const content = `${lines(600)}\n`;
  const write = { type: 'tool_use' as const, name: 'Write', input: { path: 'part.ts', content } };
  emu.setScenario({
    replies: [{ content: [write] }, { content: [write] }, { content: [{ type: 'text', text: 'written' }] }],
  });
  const from = emu.requests.length;
  const s = session(workspace, { maxTokens: 2048, effort: 'off' });
  const events: string[] = [];
  s.subscribe((e) => {
    if (e.type === 'discarded' || e.type === 'tool_start') events.push(e.type);
  });
  const outcome = await s.prompt('Write part.ts');
  s.dispose();
  assert.equal(outcome.status, 'finished', outcome.error);
  const sent = emu.requests.slice(from);
  assert.deepEqual(
    sent.map((r) => r.request?.max_tokens),
    [2048, 128_000, 2048],
  );
  assert.deepEqual(events, ['discarded', 'tool_start'], 'the cut call never started');
  assert.equal(fs.readFileSync(path.join(workspace, 'part.ts'), 'utf8'), content);
  // The cut reply never reached the transcript (P2): the model saw one Write, whole.
  const assistants = s.messages.filter((m) => m.role === 'assistant');
  assert.equal(assistants.length, 2);
  assert.equal(cutToolUse(assistants[0]!.role === 'assistant' ? assistants[0]!.content : []), undefined);
});

test('a reply cut at the model limit mid-Write is never run: the model is told its call was cut off', async () => {
  const workspace = tempWorkspace({ 'big.ts': 'original\n' });
  emu.setScenario({
    replies: [
      { content: [{ type: 'tool_use', name: 'Read', input: { path: 'big.ts' } }] },
      { content: [{ type: 'tool_use', name: 'Write', input: { path: 'big.ts', content: lines(3000) } }] },
      {
        expect: { toolResultIsError: true, toolResultContains: 'cut off' },
        content: [{ type: 'text', text: 'I will write it in parts.' }],
      },
    ],
  });
  const from = emu.requests.length;
  // Claude 3.5 Haiku's limit is 8,192 output tokens: no larger limit to retry with.
  const s = session(workspace, { model: 'claude-3-5-haiku-20241022' });
  const outcome = await s.prompt('Rewrite big.ts');
  s.dispose();
  assert.equal(outcome.status, 'finished', outcome.error);
  assert.equal(outcome.finalText, 'I will write it in parts.');
  assert.equal(fs.readFileSync(path.join(workspace, 'big.ts'), 'utf8'), 'original\n', 'file untouched');
  const sent = emu.requests.slice(from);
  assert.equal(sent[1]!.request!.max_tokens, 8192);
  assert.equal(sent[1]!.request!.thinking, undefined, 'a model without thinking gets none');
  const results = s.messages.filter((m) => m.role === 'tool_result');
  assert.equal(results.at(-1)?.role === 'tool_result' && results.at(-1)?.result.error?.code, 'TOO_LARGE');
});

test('the model table: output limits and thinking per model', () => {
  assert.equal(outputLimitFor('claude-sonnet-4-6'), 128_000);
  assert.equal(outputLimitFor('claude-opus-4-6'), 128_000);
  assert.equal(outputLimitFor('claude-sonnet-4-5-20250929'), 64_000);
  assert.equal(outputLimitFor('claude-opus-4-1-20250805'), 32_000);
  assert.equal(outputLimitFor('claude-opus-4-20250514'), 32_000);
  assert.equal(outputLimitFor('claude-sonnet-4-20250514'), 64_000);
  assert.equal(outputLimitFor('claude-3-5-haiku-20241022'), 8_192);
  assert.equal(outputLimitFor('anthropic.claude-sonnet-4-6'), 128_000);
  assert.equal(outputLimitFor('local-model'), 8_192);
  assert.equal(supportsThinking('local-model'), false);
  assert.deepEqual(thinkingPlan('claude-sonnet-4-6', 'high', 128_000), {
    thinking: { type: 'adaptive' },
    outputConfig: { effort: 'high' },
  });
  assert.deepEqual(thinkingPlan('claude-sonnet-4-5', 'medium', 64_000), {
    thinking: { type: 'enabled', budget_tokens: 8_192 },
    beta: INTERLEAVED_THINKING_BETA,
  });
  // Opus 4.5 takes effort but not 'max'; the budget still follows the level asked.
  assert.deepEqual(thinkingPlan('claude-opus-4-5', 'max', 64_000), {
    thinking: { type: 'enabled', budget_tokens: 48_000 },
    outputConfig: { effort: 'high' },
    beta: INTERLEAVED_THINKING_BETA,
  });
  // The budget leaves room for the reply, and too small a limit means no thinking at all.
  assert.deepEqual(thinkingPlan('claude-sonnet-4-5', 'high', 10_000), {
    thinking: { type: 'enabled', budget_tokens: 5_904 },
    beta: INTERLEAVED_THINKING_BETA,
  });
  assert.deepEqual(thinkingPlan('claude-sonnet-4-5', 'low', 4_096), {});
  assert.deepEqual(thinkingPlan('claude-sonnet-4-6', undefined, 128_000), {});
  assert.deepEqual(thinkingPlan('claude-3-5-haiku', 'max', 8_192), {});
});

test('a budget-thinking model gets budget_tokens from the effort and the interleaved-thinking beta', async () => {
  emu.setScenario({
    replies: [
      {
        content: [
          { type: 'thinking', thinking: 'Read first.' },
          { type: 'tool_use', name: 'Read', input: { path: 'a.txt' } },
        ],
      },
      {
        content: [
          { type: 'thinking', thinking: 'It says alpha.' },
          { type: 'text', text: 'alpha' },
        ],
      },
    ],
  });
  const from = emu.requests.length;
  const s = session(tempWorkspace({ 'a.txt': 'alpha\n' }), { model: 'claude-sonnet-4-5', effort: 'high' });
  const outcome = await s.prompt('What does a.txt say?');
  s.dispose();
  assert.equal(outcome.status, 'finished', outcome.error);
  const sent = emu.requests.slice(from);
  assert.deepEqual(
    sent.map((r) => r.status),
    [200, 200],
  );
  for (const r of sent) {
    assert.deepEqual(r.request!.thinking, { type: 'enabled', budget_tokens: 24_000 });
    assert.equal(r.request!.max_tokens, 64_000);
    assert.equal(r.request!.output_config, undefined, 'Sonnet 4.5 takes no effort parameter');
    assert.equal(r.headers['anthropic-beta'], INTERLEAVED_THINKING_BETA);
  }
});

test('redacted thinking goes back whole with its tool call; a changed one is a 400', async () => {
  emu.setScenario({
    replies: [
      {
        content: [
          { type: 'redacted_thinking', hidden: 'something the safety systems hid' },
          { type: 'thinking', thinking: 'Then read a.txt.' },
          { type: 'tool_use', name: 'Read', input: { path: 'a.txt' } },
        ],
      },
      { content: [{ type: 'text', text: 'alpha' }] },
    ],
  });
  const from = emu.requests.length;
  const s = session(tempWorkspace({ 'a.txt': 'alpha\n' }));
  const outcome = await s.prompt('Read a.txt');
  s.dispose();
  assert.equal(outcome.status, 'finished', outcome.error);
  const sent = emu.requests.slice(from);
  assert.deepEqual(
    sent.map((r) => r.status),
    [200, 200],
  );
  const turn = sent[1]!.request!.messages[1]!.content as { type: string; data?: string }[];
  assert.deepEqual(
    turn.map((b) => b.type),
    ['redacted_thinking', 'thinking', 'tool_use'],
  );
  const client = new Anthropic({ apiKey: 'k', baseURL: emu.url, maxRetries: 0 });
  const body = sent[1]!.request!;
  const changed = structuredClone(body.messages);
  (changed[1]!.content as { data?: string }[])[0]!.data = `x${turn[0]!.data}`;
  await assert.rejects(
    client.messages.create({ ...body, max_tokens: 1024, messages: changed, stream: false } as never),
    (e: unknown) =>
      e instanceof Anthropic.APIError && e.status === 400 && /redacted_thinking/.test(e.message),
  );
});

test('thinking goes back verbatim, except an unsigned block max_tokens cut before its signature', () => {
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  const llm = toLlm([
    { role: 'user', id: 'u1', ts: 0, text: 'hi' },
    {
      role: 'assistant',
      id: 'a1',
      ts: 0,
      model: 'm',
      stopReason: 'end_turn',
      usage,
      content: [
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'thinking', thinking: 'plan', signature: 'sig' },
        { type: 'text', text: 'ok' },
      ],
    },
    { role: 'user', id: 'u2', ts: 0, text: 'more' },
    {
      role: 'assistant',
      id: 'a2',
      ts: 0,
      model: 'm',
      stopReason: 'max_tokens',
      usage,
      content: [{ type: 'thinking', thinking: 'long thought cut of', signature: '' }],
    },
    { role: 'user', id: 'u3', ts: 0, text: 'go on' },
  ]);
  assert.deepEqual(llm[1], {
    role: 'assistant',
    content: [
      { type: 'redacted_thinking', data: 'opaque' },
      { type: 'thinking', thinking: 'plan', signature: 'sig' },
      { type: 'text', text: 'ok' },
    ],
  });
  assert.equal(llm.length, 3, 'the empty turn is left out; the user turns around it merge');
});
