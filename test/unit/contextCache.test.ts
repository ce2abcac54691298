import assert from 'node:assert/strict';
import { test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import { chooseCut } from '../../src/agent/context/compaction.ts';
import {
  type ContextEngineOptions,
  createContextEngine,
  type InContextSummarizeRequest,
} from '../../src/agent/context/engine.ts';
import { isCompactionRequest } from '../../src/agent/context/summarizeRequest.ts';
import type {
  AgentMessage,
  AssistantMessage,
  SummaryMessage,
  ToolResultMessage,
  UserMessage,
} from '../../src/agent/messages.ts';
import { countInputTokens, createPromptCache } from '../emulator/cache.ts';
import type { MessagesRequest } from '../emulator/types.ts';
import { validateRequest } from '../emulator/validate.ts';

// What the prompt cache sees of emergency passes and compaction: one deep pass instead of several,
// a summary asked in the conversation (read from cache) with a fallback, and a tail that always keeps
// the newest turn.

let seq = 0;
const nextId = (p: string) => `${p}${++seq}`;
const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
const TOOLS: Anthropic.Tool[] = [
  {
    name: 'Read',
    description: 'Read a file.',
    input_schema: { type: 'object', properties: { file_path: { type: 'string' } } },
  },
];
const SECOND = 1000;
const RED_LINE = "Don't touch the migrations folder.";
const SUMMARY = '## Decisions\n- Keep the public names.\n## Progress\n- Modules read in order.';

function user(text: string): UserMessage {
  return { role: 'user', id: nextId('usr'), ts: 1, text };
}

function turn(i: number, lines: number): [AssistantMessage, ToolResultMessage] {
  const useId = nextId('toolu_');
  const content = Array.from(
    { length: lines },
    (_, n) => `f${i} line ${n}: const v${n} = compute(${n});`,
  ).join('\n');
  return [
    {
      role: 'assistant',
      id: nextId('msg'),
      ts: 1,
      model: 'm',
      stopReason: 'tool_use',
      usage,
      content: [
        { type: 'text', text: `Reading part ${i}.` },
        { type: 'tool_use', id: useId, name: 'Read', input: { file_path: `src/f${i}.ts` } },
      ],
    },
    {
      role: 'tool_result',
      id: nextId('res'),
      ts: 1,
      toolUseId: useId,
      toolName: 'Read',
      content,
      isError: false,
      result: { status: 'success', data: null, text: content, stats: { time_ms: 1 } },
    },
  ];
}

const asRequest = (r: { system: unknown; tools: unknown; messages: unknown }) =>
  ({ model: 'm', max_tokens: 10, system: r.system, tools: r.tools, messages: r.messages }) as MessagesRequest;

/** A warm session (a call every 15 s) against the emulator's cache until `stop` says so. */
async function warmSession(
  options: Partial<ContextEngineOptions>,
  stop: (stage: number, calls: number) => boolean,
) {
  const clock = { now: 0 };
  const cache = createPromptCache({ now: () => clock.now, ttlMs: 300 * SECOND, minCacheableTokens: 1 });
  const summarizeUsage: ReturnType<typeof cache.account>[] = [];
  const summarizeRequests: InContextSummarizeRequest[] = [];
  const engine = createContextEngine({
    tools: TOOLS,
    contextWindow: 20_000,
    newId: () => nextId('ctx'),
    summarizeInContext: async (request) => {
      summarizeRequests.push(request);
      summarizeUsage.push(cache.account(asRequest(request)));
      return SUMMARY;
    },
    ...options,
  });
  const transcript: AgentMessage[] = [user(`Read every module. ${RED_LINE}`)];
  const calls: { request: MessagesRequest; stage: number; usage: ReturnType<typeof cache.account> }[] = [];
  for (let i = 0; i < 200; i++) {
    clock.now += 15 * SECOND;
    const { request, appended } = await engine.prepare({
      transcript,
      now: clock.now,
      lastCallAt: clock.now - 15 * SECOND,
      signal: new AbortController().signal,
    });
    transcript.push(...appended);
    const req = asRequest(request);
    calls.push({ request: req, stage: request.stage, usage: cache.account(req) });
    if (stop(request.stage, calls.length)) break;
    transcript.push(...turn(i, 20 + ((i * 37) % 120)));
  }
  return { calls, transcript, summarizeUsage, summarizeRequests };
}

test('an emergency pass on a warm cache runs every stage at once, so the next pass is far away', async () => {
  const { calls, transcript } = await warmSession({}, (_stage, n) => n >= 120);
  assert.ok(
    transcript.some((m) => m.role === 'summary'),
    'compactions happened',
  );
  const passes = calls.flatMap((c, i) => (c.stage > 0 ? [i] : []));
  assert.ok(passes.length >= 2, `several emergency passes (${passes.length})`);
  for (const i of passes) {
    assert.equal(calls[i]!.stage, 3, 'each pass goes through compaction');
    const before = countInputTokens(calls[i - 1]!.request);
    const after = countInputTokens(calls[i]!.request);
    // The previous prompt plus one new turn crossed 95%: warm, nothing ran at 30, 50 or 70%.
    assert.ok(before >= 0.8 * 20_000, `the pass came near the top of the window (${before})`);
    assert.ok(after < 0.4 * 20_000, `one pass brings the prompt well down (${after})`);
  }
  for (let k = 1; k < passes.length; k++) {
    assert.ok(passes[k]! - passes[k - 1]! >= 8, 'passes are far apart');
  }
  // Never a skipped stage: each pass persisted stage 1 and 2 edits before its summary.
  const kinds = transcript.flatMap((m) =>
    m.role === 'context_edit' ? [`edit${m.stage}`] : m.role === 'summary' ? ['summary'] : [],
  );
  assert.equal(kinds[0], 'edit1');
  assert.deepEqual(kinds.slice(0, 3), ['edit1', 'edit2', 'summary']);
  for (const i of passes) {
    assert.ok(JSON.stringify(calls[i]!.request.messages).includes(RED_LINE), 'the red line stays in view');
  }
});

test('the summary is asked in the cached conversation: it reads the previous prompt and sends only the instruction', async () => {
  const { calls, summarizeUsage, summarizeRequests, transcript } = await warmSession(
    {},
    (stage) => stage === 3,
  );
  assert.equal(summarizeRequests.length, 1);
  const request = summarizeRequests[0]!;
  const previous = calls.at(-2)!.request;
  assert.equal(JSON.stringify(request.tools), JSON.stringify(previous.tools), 'same tools');
  assert.equal(JSON.stringify(request.system), JSON.stringify(previous.system), 'same system');
  assert.ok(isCompactionRequest(request), 'the instruction is the last user block');
  assert.equal(validateRequest(asRequest(request)).ok, true, 'a valid request (tool results answered)');
  const read = summarizeUsage[0]!;
  assert.equal(
    read.cache_read_input_tokens,
    countInputTokens(previous),
    'the whole previous prompt from cache',
  );
  assert.equal(read.cache_creation_input_tokens, 0, 'nothing written for a one-off request');
  assert.ok(read.input_tokens < 600, `only the instruction is uncached (${read.input_tokens})`);
  const summary = transcript.find((m): m is SummaryMessage => m.role === 'summary')!;
  assert.ok(summary.text.includes('Keep the public names.'), "the model's answer is the summary");
  assert.ok(summary.text.includes(RED_LINE));
});

test('the standalone prompt is the fallback: in-context failure, empty answer, and overflow', async () => {
  for (const inContext of [
    async () => {
      throw new Error('overloaded');
    },
    async () => '',
  ]) {
    const prompts: string[] = [];
    const { transcript } = await warmSession(
      {
        summarizeInContext: inContext,
        summarize: async (prompt) => {
          prompts.push(prompt);
          return '## Decisions\n- From the standalone prompt.';
        },
      },
      (stage) => stage === 3,
    );
    assert.equal(prompts.length, 1, 'the standalone prompt was sent once');
    assert.match(prompts[0]!, /<history>/);
    const summary = transcript.find((m): m is SummaryMessage => m.role === 'summary')!;
    assert.ok(summary.text.includes('From the standalone prompt.'));
  }

  // Overflow: the conversation did not fit, so it is not sent again.
  let inContextCalls = 0;
  let standalone = 0;
  const engine = createContextEngine({
    tools: TOOLS,
    contextWindow: 1e6,
    newId: () => nextId('ctx'),
    summarizeInContext: async () => {
      inContextCalls++;
      return SUMMARY;
    },
    summarize: async () => {
      standalone++;
      return SUMMARY;
    },
  });
  const transcript: AgentMessage[] = [user('Go.')];
  for (let i = 0; i < 12; i++) transcript.push(...turn(i, 40));
  const { request } = await engine.prepare({
    transcript,
    now: 1,
    lastCallAt: 0,
    overflow: true,
    signal: new AbortController().signal,
  });
  assert.equal(request.stage, 3);
  assert.deepEqual([inContextCalls, standalone], [0, 1]);
});

test('the kept tail always holds the newest turn, even when a reminder follows its results', () => {
  const transcript: AgentMessage[] = [user('Go.')];
  for (let i = 0; i < 6; i++) transcript.push(...turn(i, 10));
  const [call, result] = turn(99, 400); // far bigger than the tail budget
  transcript.push(call, result, {
    role: 'reminder',
    id: nextId('rem'),
    ts: 1,
    text: 'Todo recap.',
    source: 'recap',
  });
  const cut = chooseCut(transcript, 200);
  assert.equal(transcript[cut]!.id, call.id, 'the cut falls before the newest call, not after its result');
});

test('a compaction on a cold cache uses the standalone prompt (the conversation is not cached)', async () => {
  let inContextCalls = 0;
  let standalone = 0;
  const engine = createContextEngine({
    tools: TOOLS,
    contextWindow: 6_000,
    newId: () => nextId('ctx'),
    summarizeInContext: async () => {
      inContextCalls++;
      return SUMMARY;
    },
    summarize: async () => {
      standalone++;
      return SUMMARY;
    },
  });
  const transcript: AgentMessage[] = [user('Go.')];
  for (let i = 0; i < 30; i++) transcript.push(...turn(i, 8));
  const { request } = await engine.prepare({
    transcript,
    now: 3_600_000,
    lastCallAt: 0,
    signal: new AbortController().signal,
  });
  assert.ok(request.estTokens < 6_000, `compacted (${request.estTokens})`);
  assert.equal(request.stage, 3);
  assert.deepEqual([inContextCalls, standalone], [0, 1]);
});
