import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { AgentEvent, AgentEventBody } from '../../src/agent/events.ts';
import type { AgentMessage } from '../../src/agent/messages.ts';
import {
  contextPercent,
  formatDuration,
  keyArgument,
  parseUnifiedDiff,
  samePath,
} from '../../webview-ui/src/format.ts';
import { createGeometry } from '../../webview-ui/src/virtual.ts';
import {
  insertMention,
  insertSlash,
  mentionAt,
  mentionsInText,
  slashAt,
} from '../../webview-ui/src/mentions.ts';
import { initialState, type ToolItem, type ViewState } from '../../webview-ui/src/model.ts';
import { MAX_SAVED_ITEMS, restoreSaved, toSaved } from '../../webview-ui/src/persist.ts';
import { itemsFromMessages } from '../../webview-ui/src/fromMessages.ts';
import {
  addPending,
  applyHostMessage,
  reduce,
  reduceMany,
  STREAM_TAIL_CHARS,
} from '../../webview-ui/src/reducer.ts';

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

function stream(bodies: AgentEventBody[], sessionId = 's1', firstSeq = 1): AgentEvent[] {
  return bodies.map((b, i) => ({ ...b, sessionId, seq: firstSeq + i, ts: 1000 + i }));
}

function assistantEnd(
  id: string,
  content: Extract<AgentEventBody, { type: 'message_end' }>['message']['content'],
) {
  return {
    type: 'message_end' as const,
    message: { id, ts: 1, role: 'assistant' as const, content, model: 'm', stopReason: 'end_turn', usage },
  };
}

function userMsg(id: string, text: string, queued: boolean, mentions?: string[]): AgentEventBody {
  return {
    type: 'user_message',
    message: { id, ts: 1, role: 'user', text, mentions, steering: queued },
    queued,
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

function tool(state: ViewState, id: string): ToolItem {
  const item = state.items.find((i) => i.id === id);
  assert.ok(item && item.kind === 'tool', `tool card ${id}`);
  return item;
}

// A realistic run: prompt, thinking + streamed text, a Bash call with live output that fails, an
// Edit with a diff, usage records, todos.
const run = stream([
  { type: 'agent_start', runId: 'r1', prompt: 'fix the test' },
  userMsg('u1', 'fix the test in @src/a.ts', false, ['src/a.ts']),
  { type: 'turn_start', turn: 1 },
  { type: 'message_start', messageId: 'm1', model: 'claude-x' },
  { type: 'message_delta', messageId: 'm1', blockIndex: 0, kind: 'thinking', delta: 'Let me ' },
  { type: 'message_delta', messageId: 'm1', blockIndex: 0, kind: 'thinking', delta: 'look.' },
  { type: 'message_delta', messageId: 'm1', blockIndex: 1, kind: 'text', delta: 'Running ' },
  { type: 'message_delta', messageId: 'm1', blockIndex: 1, kind: 'text', delta: 'the **tests**.' },
  { type: 'message_delta', messageId: 'm1', blockIndex: 2, kind: 'tool_input', delta: '{"comm' },
  assistantEnd('m1', [
    { type: 'thinking', thinking: 'Let me look.', signature: 'sig' },
    { type: 'text', text: 'Running the **tests**.' },
    { type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'npm test' } },
  ]),
  {
    type: 'model_call',
    record: {
      stage: 0,
      message_count: 2,
      est_tokens: 5000,
      prefix_hash: 'h',
      cache_read: 3000,
      cache_write: 1000,
      input: 1000,
      output: 100,
      latency_ms: 1,
      ttft_ms: 1,
      model: 'claude-x',
      cost_usd: 0.012,
      context_window: 200000,
      ok: true,
    },
  },
  { type: 'tool_start', toolUseId: 't1', name: 'Bash', input: { command: 'npm test' } },
  { type: 'tool_update', toolUseId: 't1', text: '> test\n' },
  { type: 'tool_update', toolUseId: 't1', text: '1 failing\n' },
  {
    type: 'tool_end',
    toolUseId: 't1',
    name: 'Bash',
    durationMs: 1500,
    result: {
      status: 'error',
      data: null,
      text: 'exit 1',
      error: {
        code: 'DENIED_BY_USER',
        message: 'The user denied the command.',
        suggestion: 'Ask the user why.',
      },
      stats: { time_ms: 1500 },
    },
  },
  { type: 'todo', todos: [{ id: '1', content: 'Fix a.ts', status: 'in_progress' }] },
  { type: 'message_start', messageId: 'm2', model: 'claude-x' },
  assistantEnd('m2', [
    { type: 'tool_use', id: 't2', name: 'Edit', input: { path: 'src/a.ts', old: 'a', new: 'b' } },
  ]),
  { type: 'tool_start', toolUseId: 't2', name: 'Edit', input: { path: 'src/a.ts', old: 'a', new: 'b' } },
  {
    type: 'tool_end',
    toolUseId: 't2',
    name: 'Edit',
    durationMs: 8,
    result: {
      status: 'success',
      data: null,
      text: 'Edited src/a.ts',
      stats: { time_ms: 8 },
      ui: { diff: '--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1 +1 @@\n-a\n+b\n' },
    },
  },
  {
    type: 'model_call',
    record: {
      stage: 0,
      message_count: 4,
      est_tokens: 6000,
      prefix_hash: 'h',
      cache_read: 4500,
      cache_write: 0,
      input: 500,
      output: 40,
      latency_ms: 1,
      ttft_ms: 1,
      model: 'claude-x',
      cost_usd: 0.003,
      context_window: 200000,
      ok: true,
    },
  },
  { type: 'agent_end', runId: 'r1', status: 'finished', finalText: 'done' },
]);

test('streamed deltas become one assistant message with thinking and text, finalised at message_end', () => {
  const midway = reduceMany(initialState(), run.slice(0, 8));
  const streaming = midway.items.find((i) => i.id === 'm1');
  assert.ok(streaming?.kind === 'assistant');
  assert.equal(streaming.streaming, true);
  assert.deepEqual(streaming.blocks, [
    { kind: 'thinking', text: 'Let me look.' },
    { kind: 'text', text: 'Running the **tests**.' },
  ]);
  const done = reduceMany(initialState(), run);
  const final = done.items.find((i) => i.id === 'm1');
  assert.ok(final?.kind === 'assistant');
  assert.equal(final.streaming, false);
  assert.deepEqual(
    final.blocks.map((b) => b.kind),
    ['thinking', 'text'],
  );
  assert.equal(done.running, false);
  assert.deepEqual(
    done.items.map((i) => i.kind),
    ['user', 'assistant', 'tool', 'assistant', 'tool'],
  );
});

test('tool cards track status, live output, duration and the error code with its suggestion', () => {
  const queued = reduceMany(initialState(), run.slice(0, 10));
  assert.equal(tool(queued, 't1').status, 'pending');
  const live = reduceMany(initialState(), run.slice(0, 14));
  assert.equal(tool(live, 't1').status, 'running');
  assert.equal(tool(live, 't1').stream, '> test\n1 failing\n');
  const done = reduceMany(initialState(), run);
  const bash = tool(done, 't1');
  assert.equal(bash.status, 'error');
  assert.equal(bash.durationMs, 1500);
  assert.deepEqual(bash.error, {
    code: 'DENIED_BY_USER',
    message: 'The user denied the command.',
    suggestion: 'Ask the user why.',
  });
  const edit = tool(done, 't2');
  assert.equal(edit.status, 'success');
  assert.equal(edit.path, 'src/a.ts');
  assert.match(edit.diff ?? '', /\+b/);
  assert.deepEqual(done.todos, [{ id: '1', content: 'Fix a.ts', status: 'in_progress' }]);
});

test('live tool output is bounded to its tail', () => {
  const chunk = 'x'.repeat(5000) + '\n';
  const events = stream([
    { type: 'tool_start', toolUseId: 't', name: 'Bash', input: { command: 'yes' } },
    ...Array.from(
      { length: 10 },
      (): AgentEventBody => ({ type: 'tool_update', toolUseId: 't', text: chunk }),
    ),
    { type: 'tool_update', toolUseId: 't', text: 'LAST LINE\n' },
  ]);
  const card = tool(reduceMany(initialState(), events), 't');
  assert.ok(card.stream.length <= STREAM_TAIL_CHARS);
  assert.ok(card.stream.endsWith('LAST LINE\n'));
  assert.equal(card.streamTruncated, true);
});

test('context meter and cost come from model_call records', () => {
  const state = reduceMany(initialState(), run);
  // Last call: prompt = 500 input + 4500 cache read = 5000 tokens, 90% from cache.
  assert.equal(state.usage.contextTokens, 5000);
  assert.equal(state.usage.contextWindow, 200000);
  assert.equal(state.usage.cacheHitPct, 90);
  // Session: (3000 + 4500) read of (5000 + 5000) prompt tokens sent.
  assert.equal(state.usage.sessionCacheHitPct, 75);
  assert.equal(state.usage.stage, 0);
  assert.ok(Math.abs(state.usage.costUsd - 0.015) < 1e-9);
  assert.equal(state.model, 'claude-x');
});

test('the meter keeps the highest pruning stage of the session, and the host usage message wins', () => {
  const records = run.flatMap((e) => (e.type === 'model_call' ? [e.record] : []));
  const pruned = stream([
    ...records.map((r) => ({ type: 'model_call' as const, record: { ...r, stage: 2 } })),
    ...records.map((r) => ({ type: 'model_call' as const, record: { ...r, stage: 0 } })),
  ]);
  const state = reduceMany(initialState(), pruned);
  assert.equal(state.usage.stage, 2);
  const fromHost = applyHostMessage(state, {
    type: 'usage',
    contextTokens: 10,
    contextWindow: 100,
    cacheHitPct: 50,
    sessionCacheHitPct: 60,
    stage: 3,
    costUsd: 0,
  });
  assert.equal(fromHost.usage.sessionCacheHitPct, 60);
  assert.equal(fromHost.usage.stage, 3);
});

test('reducers never mutate their input and re-delivered events are applied once', () => {
  const half = deepFreeze(reduceMany(initialState(), run.slice(0, 12)));
  const full = reduceMany(half, run);
  const again = reduceMany(full, run);
  assert.deepEqual(again, full);
  assert.equal(full.lastSeq, run.length);
  // Unchanged items keep their identity (the renderer relies on it to skip work).
  assert.equal(full.items[0], half.items[0]);
});

test('catching up after any seq gives the same view as watching live', () => {
  const live = run.reduce(reduce, initialState());
  fc.assert(
    fc.property(fc.integer({ min: 0, max: run.length }), (cut) => {
      const before = reduceMany(initialState(), run.slice(0, cut));
      const caughtUp = applyHostMessage(before, {
        type: 'snapshot',
        sessionId: 's1',
        replace: false,
        events: run.filter((e) => e.seq > before.lastSeq - 3), // overlap is harmless
        todos: live.todos,
        running: false,
        model: 'claude-x',
        contextWindow: 200000,
      });
      assert.deepEqual(caughtUp.items, live.items);
      assert.equal(caughtUp.lastSeq, live.lastSeq);
    }),
    { numRuns: 40 },
  );
});

test('a message sent while the agent works shows as queued until delivered, then joins the transcript', () => {
  let state = reduceMany(initialState(), run.slice(0, 13)); // running, Bash in progress
  state = addPending(state, 'also update the docs', 'key-1');
  assert.deepEqual(
    state.queue.map((q) => q.state),
    ['sending'],
  );
  state = applyHostMessage(state, { type: 'submitResult', idempotencyKey: 'key-1', ok: true });
  assert.deepEqual(
    state.queue.map((q) => q.state),
    ['queued'],
  );
  state = reduceMany(state, stream([userMsg('u2', 'also update the docs', true)], 's1', 100));
  assert.equal(state.queue.length, 1);
  assert.equal(state.queue[0]?.id, 'u2');
  assert.equal(
    state.items.some((i) => i.id === 'u2'),
    false,
  );
  state = reduceMany(state, stream([userMsg('u2', 'also update the docs', false)], 's1', 101));
  assert.equal(state.queue.length, 0);
  const last = state.items[state.items.length - 1];
  assert.ok(last?.kind === 'user');
  assert.equal(last.text, 'also update the docs');
});

test('a submission the host received stays shown as sending (not re-posted) until the transcript has it', () => {
  let state = addPending(initialState(), 'hello', 'k');
  assert.equal(state.queue[0]?.received, undefined);
  state = applyHostMessage(state, { type: 'submitReceived', idempotencyKey: 'k' });
  assert.deepEqual(
    state.queue.map((q) => [q.state, q.received]),
    [['sending', true]],
  );
  // Accepted while idle: still shown until its user_message arrives.
  state = applyHostMessage(state, { type: 'submitResult', idempotencyKey: 'k', ok: true });
  assert.equal(state.queue.length, 1);
  state = reduceMany(state, stream([userMsg('u1', 'hello', false)]));
  assert.equal(state.queue.length, 0);
  assert.ok(state.items.some((i) => i.kind === 'user' && i.text === 'hello'));
  // A receipt for a key this view does not hold changes nothing.
  assert.equal(applyHostMessage(state, { type: 'submitReceived', idempotencyKey: 'other' }), state);
});

test('a refused submission leaves the queue and shows why', () => {
  let state = addPending(initialState(), 'hello', 'k');
  state = applyHostMessage(state, {
    type: 'submitResult',
    idempotencyKey: 'k',
    ok: false,
    error: 'No API key set',
  });
  assert.equal(state.queue.length, 0);
  assert.equal(state.banner?.text, 'No API key set');
});

test('stopping a run cancels unfinished tool cards and says so', () => {
  const events = stream([
    { type: 'agent_start', runId: 'r', prompt: 'x' },
    { type: 'tool_start', toolUseId: 't', name: 'Bash', input: { command: 'sleep 100' } },
    { type: 'agent_end', runId: 'r', status: 'aborted', finalText: '' },
  ]);
  const state = reduceMany(initialState(), events);
  assert.equal(state.running, false);
  assert.equal(tool(state, 't').status, 'cancelled');
  const last = state.items[state.items.length - 1];
  assert.ok(last?.kind === 'notice');
  assert.equal(last.text, 'Stopped.');
});

test('ends of runs are reported once, and skipped calls settle their cards', () => {
  const aborted = reduceMany(
    initialState(),
    stream([
      { type: 'agent_start', runId: 'r', prompt: 'x' },
      userMsg('u', 'x', false),
      { type: 'notice', level: 'warn', text: 'Aborted.' },
      { type: 'agent_end', runId: 'r', status: 'aborted', finalText: '' },
    ]),
  );
  assert.deepEqual(
    aborted.items.map((i) => (i.kind === 'notice' ? i.text : i.kind)),
    ['user', 'Aborted.'],
  );
  const failed = reduceMany(
    initialState(),
    stream([
      userMsg('u', 'x', false),
      { type: 'error', code: 'overloaded', message: 'Overloaded' },
      { type: 'agent_end', runId: 'r', status: 'failed', finalText: '', error: 'Overloaded' },
    ]),
  );
  assert.deepEqual(
    failed.items.map((i) => i.kind),
    ['user', 'error'],
  );
  const limit = reduceMany(
    initialState(),
    stream([
      { type: 'agent_end', runId: 'r', status: 'max_turns', finalText: '', error: 'Stopped after 50 turns.' },
    ]),
  );
  assert.equal(limit.items[0]?.kind === 'notice' && limit.items[0].text, 'Stopped after 50 turns.');
  const skippedResult = {
    id: 'res',
    ts: 1,
    role: 'tool_result' as const,
    toolUseId: 'b',
    toolName: 'Read',
    result: { status: 'error' as const, data: null, text: '[Skipped]', stats: { time_ms: 0 } },
    content: '[Skipped]',
    isError: true,
  };
  const steered = reduceMany(
    initialState(),
    stream([
      { type: 'agent_start', runId: 'r', prompt: 'x' },
      assistantEnd('m', [
        { type: 'tool_use', id: 'a', name: 'Read', input: { path: 'a' } },
        { type: 'tool_use', id: 'b', name: 'Read', input: { path: 'b' } },
      ]),
      { type: 'message_appended', message: skippedResult },
    ]),
  );
  assert.equal(tool(steered, 'a').status, 'pending');
  assert.equal(tool(steered, 'b').status, 'error');
  assert.equal(tool(steered, 'b').resultText, '[Skipped]');
});

test('a discarded partial reply disappears; errors keep their code', () => {
  const events = stream([
    { type: 'message_start', messageId: 'bad', model: 'm' },
    { type: 'message_delta', messageId: 'bad', blockIndex: 0, kind: 'text', delta: 'Half a sen' },
    {
      type: 'discarded',
      model: 'm',
      content: [{ type: 'text', text: 'Half a sen' }],
      reason: 'stream reset',
    },
    { type: 'message_start', messageId: 'good', model: 'm' },
    { type: 'error', code: 'auth', message: 'invalid x-api-key' },
  ]);
  const state = reduceMany(initialState(), events);
  assert.deepEqual(
    state.items.map((i) => i.id),
    ['good', 'seq:5'],
  );
  const err = state.items[1];
  assert.ok(err?.kind === 'error');
  assert.equal(err.code, 'auth');
  assert.match(err.suggestion ?? '', /Set API Key/);
});

test('an event from another session asks for a resync; a replacing snapshot starts over', () => {
  const state = reduceMany(initialState(), run);
  const foreign = reduce(state, { type: 'turn_start', turn: 1, sessionId: 's2', seq: 1, ts: 1 });
  assert.equal(foreign.needsResync, true);
  assert.deepEqual(foreign.items, state.items);
  const fresh = applyHostMessage(foreign, {
    type: 'snapshot',
    sessionId: 's2',
    replace: true,
    events: stream([userMsg('x1', 'new chat', false)], 's2'),
    todos: [],
    running: false,
    model: 'claude-x',
    contextWindow: 100000,
  });
  assert.equal(fresh.sessionId, 's2');
  assert.equal(fresh.needsResync, false);
  assert.deepEqual(
    fresh.items.map((i) => i.id),
    ['x1'],
  );
  assert.equal(fresh.usage.costUsd, 0);
  assert.equal(fresh.usage.contextWindow, 100000);
});

test('a session reopened from its log renders from its messages', () => {
  const messages: AgentMessage[] = [
    { id: 'u', ts: 1, role: 'user', text: 'hi' },
    {
      id: 'a',
      ts: 2,
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading.' },
        { type: 'tool_use', id: 't', name: 'Read', input: { path: 'x.ts' } },
      ],
      model: 'm',
      stopReason: 'tool_use',
      usage,
    },
    {
      id: 'r',
      ts: 3,
      role: 'tool_result',
      toolUseId: 't',
      toolName: 'Read',
      result: { status: 'success', data: null, text: 'contents', stats: { time_ms: 4 } },
      content: 'contents',
      isError: false,
    },
    { id: 'rem', ts: 4, role: 'reminder', text: 'secret recap', source: 'recap' },
  ];
  const items = itemsFromMessages(messages);
  assert.deepEqual(
    items.map((i) => `${i.kind}:${i.id}`),
    ['user:u', 'assistant:a', 'tool:t'],
  );
  const card = items[2] as ToolItem;
  assert.equal(card.status, 'success');
  assert.equal(card.resultText, 'contents');
});

// Speed is bench/panel.ts's (first paint and per-delta cost of 5,000 events in Chromium); this
// checks that a long session comes out the same whether it is replayed at once or arrives live.
test('thousands of events: replayed at once or delivered one by one, the same transcript', () => {
  const bodies: AgentEventBody[] = [];
  for (let i = 0; i < 1500; i++) {
    bodies.push({ type: 'message_start', messageId: `m${i}`, model: 'm' });
    for (let d = 0; d < 5; d++)
      bodies.push({ type: 'message_delta', messageId: `m${i}`, blockIndex: 0, kind: 'text', delta: 'word ' });
    bodies.push({ type: 'tool_start', toolUseId: `t${i}`, name: 'Read', input: { path: `f${i}.ts` } });
    bodies.push({ type: 'tool_update', toolUseId: `t${i}`, text: 'x' });
    bodies.push({
      type: 'tool_end',
      toolUseId: `t${i}`,
      name: 'Read',
      durationMs: 1,
      result: { status: 'success', data: null, text: 'ok', stats: { time_ms: 1 } },
    });
  }
  const events = stream(bodies);
  const state = reduceMany(initialState(), events);
  assert.equal(state.items.length, 3000);
  assert.equal(state.lastSeq, events.length);
  // Live delivery, one event at a time, of the last 2000 events on top of a long transcript.
  const base = reduceMany(initialState(), events.slice(0, -2000));
  const live = events.slice(-2000).reduce(reduce, base);
  assert.equal(live.lastSeq, events.length);
  assert.deepEqual(live.items, state.items);
});

test('the virtual list renders only what a viewport needs, and keeps offsets from measured heights', () => {
  const g = createGeometry();
  const items = Array.from({ length: 5000 }, (_, i) => ({ id: `i${i}`, kind: i % 2 ? 'tool' : 'user' }));
  g.setItems(items, 0);
  // Unmeasured: kind estimates (user 70, tool 40).
  assert.equal(g.offset(2), 110);
  assert.equal(g.offset(5000), 2500 * 110);
  const bottom = g.range(g.offset(5000) - 800, 800, 400);
  assert.equal(bottom.end, 5000);
  assert.ok(5000 - bottom.start <= 31, `${5000 - bottom.start} items for an 800 px viewport`);
  // A measured item moves everything after it; an item's first measurement refines its kind's estimate.
  assert.equal(g.measure(0, 100), true);
  assert.equal(g.offset(1), 100);
  assert.equal(g.offset(3), 100 + 40 + 100, 'the other user items are now estimated at 100');
  assert.equal(g.measure(0, 100), false, 'unchanged');
  assert.equal(g.indexAt(0), 0);
  assert.equal(g.indexAt(99), 0);
  assert.equal(g.indexAt(100), 1);
  assert.equal(g.indexAt(1e9), 4999);
  // A growing last item (a streaming reply) changes only the end.
  g.measure(4999, 40);
  const total = g.offset(5000);
  g.measure(4999, 40 + 500);
  assert.equal(g.offset(5000), total + 500);
  // Appending keeps what was measured; a hidden item (height 0) takes no room.
  g.setItems([...items, { id: 'new', kind: 'assistant' }], 5000);
  assert.equal(g.offset(1), 100);
  g.measure(5000, 0);
  assert.equal(g.offset(5001), g.offset(5000));
  assert.deepEqual(createGeometry().range(0, 800, 100), { start: 0, end: 0 });
});

test('@ mentions: detect the query at the caret, insert the chosen path, send only those still present', () => {
  assert.deepEqual(mentionAt('look at @src/a', 14), { start: 8, query: 'src/a' });
  assert.deepEqual(mentionAt('@', 1), { start: 0, query: '' });
  assert.equal(mentionAt('mail me@example.com', 19), undefined);
  assert.equal(mentionAt('look at @src/a now', 18), undefined);
  const text = 'look at @sr and tell me';
  const m = mentionAt(text, 11)!;
  const next = insertMention(text, m, 11, 'src/app.ts');
  assert.equal(next.text, 'look at @src/app.ts and tell me');
  assert.equal(next.text.slice(0, next.caret), 'look at @src/app.ts ');
  assert.deepEqual(mentionsInText(next.text, ['src/app.ts', 'gone.ts']), ['src/app.ts']);
  assert.deepEqual(mentionsInText('check @a.ts.', ['a.ts']), ['a.ts']);
  assert.deepEqual(mentionsInText('check @a.tsx', ['a.ts']), []);
});

test('cards show the argument that matters and diffs are classified line by line', () => {
  assert.equal(keyArgument('Bash', { command: 'npm   test\n--watch' }), 'npm test --watch');
  assert.equal(keyArgument('Read', { path: 'src/a.ts', offset: 3 }), 'src/a.ts');
  assert.equal(keyArgument('Grep', { pattern: 'TODO', path: 'src' }), 'TODO');
  assert.equal(keyArgument('TodoWrite', { todos: [{}, {}] }), '2 items');
  assert.equal(keyArgument('Custom', { n: 1, q: 'why' }), 'why');
  assert.equal(keyArgument('Bash', { command: 'x'.repeat(300) }).length, 120);
  assert.deepEqual(
    parseUnifiedDiff('--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n').map((l) => l.kind),
    ['meta', 'meta', 'hunk', 'ctx', 'del', 'add'],
  );
  assert.equal(formatDuration(1500), '1.5 s');
  assert.equal(formatDuration(42), '42 ms');
  assert.equal(contextPercent(150_000, 200_000), 75);
  assert.equal(contextPercent(5, 0), 0);
  assert.ok(samePath('/work/ws/src/a.ts', 'src/a.ts'));
  assert.ok(samePath('./src/a.ts', 'src\\a.ts'));
  assert.equal(samePath('src/ba.ts', 'a.ts'), false);
});

test('saved state restores the view and draft; junk and oversized views are not trusted', () => {
  const state = reduceMany(initialState(), run);
  const saved = JSON.parse(
    JSON.stringify(toSaved(addPending(state, 'unsent', 'k'), { text: 'draft', mentions: ['a.ts'] })),
  );
  const restored = restoreSaved(saved);
  assert.ok(restored?.view);
  assert.equal(restored.view.lastSeq, state.lastSeq);
  assert.deepEqual(restored.view.items, JSON.parse(JSON.stringify(state.items)));
  // An unacknowledged submission is not resurrected as "sending" in the view …
  assert.equal(restored.view.queue.length, 0);
  assert.deepEqual(restored.draft, { text: 'draft', mentions: ['a.ts'] });
  // … but a recent one comes back to be resent (same key), an old one back into an empty input.
  assert.deepEqual(
    restored.unsent?.map((u) => [u.text, u.idempotencyKey]),
    [['unsent', 'k']],
  );
  const later = restoreSaved(saved, Date.now() + 10 * 60_000);
  assert.equal(later?.unsent, undefined);
  assert.deepEqual(later?.draft, { text: 'draft', mentions: ['a.ts'] }, 'a typed draft is not replaced');
  const noDraft = JSON.parse(
    JSON.stringify(toSaved(addPending(state, 'lost?', 'k2', ['b.ts']), { text: '', mentions: [] })),
  );
  assert.deepEqual(restoreSaved(noDraft, Date.now() + 10 * 60_000)?.draft, {
    text: 'lost?',
    mentions: ['b.ts'],
  });
  assert.equal(restoreSaved(null), undefined);
  assert.equal(restoreSaved({ v: 2 }), undefined);
  assert.equal(restoreSaved({ v: 1, view: { items: 'nope' }, draft: {} })?.view, undefined);
  const huge = {
    ...state,
    items: Array.from({ length: MAX_SAVED_ITEMS + 1 }, (_, i) => ({ ...state.items[0]!, id: `u${i}` })),
  };
  assert.equal(toSaved(huge, { text: '', mentions: [] }).view, undefined);
});

test('messages that start a run carry their prompt number (for "Restore to before this"); steering ones do not', () => {
  const state = reduceMany(
    initialState(),
    stream([
      { type: 'agent_start', runId: 'r1', prompt: 'one' },
      userMsg('u1', 'one', false),
      { type: 'agent_end', runId: 'r1', status: 'finished', finalText: '' },
      { type: 'agent_start', runId: 'r2', prompt: 'two' },
      userMsg('u2', 'two', false),
      userMsg('u3', 'steer', true),
      {
        type: 'user_message',
        message: { id: 'u3', ts: 1, role: 'user', text: 'steer', steering: true },
        queued: false,
      },
    ]),
  );
  const users = state.items.flatMap((i) => (i.kind === 'user' ? [[i.id, i.promptNumber]] : []));
  assert.deepEqual(users, [
    ['u1', 1],
    ['u2', 2],
    ['u3', undefined],
  ]);
});

test('a message accepted while the agent works survives a replacing snapshot until the transcript has it', () => {
  let state = reduceMany(initialState(), run.slice(0, 13)); // running
  state = addPending(state, 'also update the docs', 'key-1');
  state = applyHostMessage(state, { type: 'submitResult', idempotencyKey: 'key-1', ok: true });
  assert.deepEqual(
    state.queue.map((q) => q.state),
    ['queued'],
  );
  // The panel resyncs (a reload, a restored session): the typed message is still shown.
  state = applyHostMessage(state, {
    type: 'snapshot',
    sessionId: 's9',
    replace: true,
    events: [],
    todos: [],
    running: true,
    model: 'claude-x',
    contextWindow: 100000,
  });
  assert.deepEqual(
    state.queue.map((q) => q.text),
    ['also update the docs'],
  );
  state = reduceMany(state, stream([userMsg('u2', 'also update the docs', false)], 's9'));
  assert.equal(state.queue.length, 0);
});

test('"/" as the first word asks for slash commands; choosing one puts "/name " in front', () => {
  assert.deepEqual(slashAt('/rev', 4), { start: 0, query: '/rev' });
  assert.deepEqual(slashAt('/', 1), { start: 0, query: '/' });
  assert.equal(slashAt('see /usr', 8), undefined, 'only the first word');
  assert.equal(slashAt('/review now', 11), undefined, 'not once the arguments are being typed');
  assert.deepEqual(insertSlash('/rev', 4, '/review — review the working-tree changes'), {
    text: '/review ',
    caret: 8,
  });
  assert.deepEqual(insertSlash('/git:c 42', 6, '/git:commit — Commit'), {
    text: '/git:commit 42',
    caret: 12,
  });
});

test('plan mode: a plan event becomes an editable plan card; a model switch is said', () => {
  const state = reduceMany(
    initialState(),
    stream([
      { type: 'plan', text: '## Plan\n1. A\n2. B', steps: ['A', 'B'], file: '.keel/plans/s1.md' },
      { type: 'model_switch', model: 'claude-opus-4-5' },
    ]),
  );
  const plan = state.items.find((i) => i.kind === 'plan');
  assert.ok(plan && plan.kind === 'plan');
  assert.deepEqual(plan.steps, ['A', 'B']);
  assert.equal(plan.file, '.keel/plans/s1.md');
  assert.ok(state.items.some((i) => i.kind === 'notice' && /claude-opus-4-5 from now on/.test(i.text)));
});

test('a slash command leaves the queue when its expanded message arrives; a built-in answered at once leaves too', async () => {
  const { resolveSlash } = await import('../../src/agent/commands/expand.ts');
  const sent = resolveSlash({ name: 'review', args: 'the parser' }, { commands: [], problems: [] });
  assert.ok(sent.kind === 'prompt');
  let state = addPending(initialState(), '/review the parser', 'k1');
  state = applyHostMessage(state, { type: 'submitReceived', idempotencyKey: 'k1' });
  state = reduceMany(state, stream([userMsg('u1', sent.text, false)]));
  assert.deepEqual(state.queue, [], 'the expanded message is the one the user typed');
  // Typed text that only looks like the header's tail is not taken for it.
  state = addPending(state, '/review', 'k2');
  state = reduceMany(state, stream([userMsg('u2', 'see [/x; the user typed: /review]', false)], 's1', 50));
  assert.equal(state.queue.length, 1);
  // `/cost`: answered without a run.
  state = addPending(initialState(), '/cost', 'k3');
  state = applyHostMessage(state, { type: 'submitResult', idempotencyKey: 'k3', ok: true, settled: true });
  assert.deepEqual(state.queue, []);
});
