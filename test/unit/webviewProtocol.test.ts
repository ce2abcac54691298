import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEvent, AgentEventBody } from '../../src/agent/events.ts';
import {
  AGENT_EVENT_TYPES,
  type HostMessage,
  parseAgentEvent,
  parseHostMessage,
  parseWebviewMessage,
  type WebviewMessage,
} from '../../src/shared/webviewProtocol.ts';

// Fixtures typed as the core's AgentEvent: if events.ts changes shape, this file stops compiling or
// a parse below fails, so the protocol cannot silently drift from the core.
const usage = { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 };
const bodies: AgentEventBody[] = [
  { type: 'agent_start', runId: 'r1', prompt: 'hi' },
  { type: 'turn_start', turn: 1 },
  { type: 'message_start', messageId: 'm1', model: 'claude-x' },
  { type: 'message_delta', messageId: 'm1', blockIndex: 0, kind: 'text', delta: 'Hel' },
  {
    type: 'message_end',
    message: {
      id: 'm1',
      ts: 1,
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 's' },
        { type: 'text', text: 'Hello' },
        { type: 'tool_use', id: 'tu1', name: 'Read', input: { path: 'a.ts' } },
      ],
      model: 'claude-x',
      stopReason: 'tool_use',
      usage,
    },
  },
  {
    type: 'user_message',
    message: { id: 'u1', ts: 1, role: 'user', text: 'look at @a.ts', mentions: ['a.ts'] },
    queued: false,
  },
  { type: 'tool_start', toolUseId: 'tu1', name: 'Read', input: { path: 'a.ts' } },
  { type: 'tool_update', toolUseId: 'tu1', text: 'line\n' },
  {
    type: 'tool_end',
    toolUseId: 'tu1',
    name: 'Read',
    durationMs: 12,
    result: {
      status: 'error',
      data: null,
      text: 'nope',
      error: { code: 'NOT_FOUND', message: 'nope', suggestion: 'Use Glob' },
      stats: { time_ms: 3 },
      ui: { diff: '--- a\n+++ b\n' },
    },
  },
  { type: 'turn_end', turn: 1, stopReason: 'end_turn' },
  { type: 'agent_end', runId: 'r1', status: 'finished', finalText: 'done' },
  { type: 'retry', attempt: 1, delayMs: 500, reason: '529', model: 'claude-x' },
  {
    type: 'model_call',
    record: {
      stage: 0,
      message_count: 3,
      est_tokens: 1200,
      prefix_hash: 'abc',
      cache_read: 800,
      cache_write: 100,
      input: 300,
      output: 50,
      latency_ms: 10,
      ttft_ms: 5,
      model: 'claude-x',
      cost_usd: 0.01,
      context_window: 200000,
      ok: true,
    },
  },
  { type: 'discarded', model: 'claude-x', content: [{ type: 'text', text: 'Hal' }], reason: 'stream reset' },
  { type: 'todo', todos: [{ id: '1', content: 'Write tests', status: 'in_progress' }] },
  { type: 'message_appended', message: { id: 'n1', ts: 1, role: 'notice', level: 'info', text: 'x' } },
  { type: 'notice', level: 'warn', text: 'careful' },
  { type: 'error', code: 'RATE_LIMIT', message: 'slow down' },
  {
    type: 'memory_changed',
    change: {
      id: 'mem_1',
      scope: 'workspace',
      file: '/w/.keel/memory/MEMORY.md',
      before: null,
      after: '# Memory\n\n## Notes\n- 2026-01-01: Use pnpm\n',
      origin: 'agent',
      summary: 'add: Use pnpm',
      ts: 1,
    },
  },
  {
    type: 'job',
    job: {
      id: 'job_abc123',
      command: 'npm run dev',
      status: 'running',
      exitCode: null,
      startedAt: 1,
      logPath: '/w/.keel/jobs/job_abc123.log',
      runId: 'run_1',
    },
  },
  {
    type: 'subagent_start',
    toolUseId: 't1',
    agentId: 's1-sub-abc',
    description: 'Find auth',
    mode: 'explore',
    logPath: '.keel/sessions/s1-sub-abc.jsonl',
  },
  {
    type: 'subagent_tool',
    toolUseId: 't1',
    agentId: 's1-sub-abc',
    phase: 'start',
    name: 'Read',
    input: { path: 'a' },
  },
  {
    type: 'subagent_tool',
    toolUseId: 't1',
    agentId: 's1-sub-abc',
    phase: 'end',
    name: 'Read',
    status: 'success',
  },
  {
    type: 'subagent_end',
    toolUseId: 't1',
    agentId: 's1-sub-abc',
    status: 'finished',
    turns: 2,
    costUsd: 0.01,
  },
  { type: 'plan', text: '## Plan\n1. Do it', steps: ['Do it'], file: '.keel/plans/s1.md' },
  { type: 'model_switch', model: 'claude-opus-4-5' },
  { type: 'effort_change', effort: 'high' },
  {
    type: 'session_reset',
    oldSessionId: 's1',
    newSessionId: 's2',
    reason: 'driven past 3 compactions',
    compactions: 3,
    logPath: '.keel/sessions/s2.jsonl',
  },
  {
    type: 'auto_classifier',
    toolUseId: 't2',
    command: 'npm install left-pad',
    decision: 'escalate',
    reason: 'The request did not ask for a new package.',
    model: 'claude-haiku-4-5',
    latencyMs: 120,
  },
];
const events: AgentEvent[] = bodies.map((b, i) => ({ ...b, sessionId: 's1', seq: i + 1, ts: 1000 + i }));

test('every AgentEvent type the core emits is accepted, with its fields intact', () => {
  assert.deepEqual(new Set(bodies.map((b) => b.type)), new Set(AGENT_EVENT_TYPES));
  for (const event of events) {
    const parsed = parseHostMessage({ type: 'event', event });
    assert.ok(parsed.ok, `${event.type}: ${parsed.ok ? '' : parsed.error}`);
    assert.deepEqual(parsed.value, { type: 'event', event });
  }
});

test('event bodies pass through fields the protocol does not list', () => {
  const event = { ...events[0], futureField: { nested: [1, 2] } };
  const parsed = parseAgentEvent(event);
  assert.ok(parsed.ok);
  assert.deepEqual((parsed.value as unknown as Record<string, unknown>)['futureField'], { nested: [1, 2] });
});

test('events with a broken envelope or unknown type are rejected with a readable reason', () => {
  const base = events[1] as AgentEvent;
  const bad: [string, unknown][] = [
    ['missing seq', { ...base, seq: undefined }],
    ['negative seq', { ...base, seq: -1 }],
    ['fractional seq', { ...base, seq: 1.5 }],
    ['string seq', { ...base, seq: '3' }],
    ['empty session', { ...base, sessionId: '' }],
    ['missing ts', { ...base, ts: undefined }],
    ['unknown type', { ...base, type: 'explode' }],
    ['delta without text', { ...events[3], delta: undefined }],
    ['bad tool status', { ...events[8], result: { status: 'ok', text: '', stats: {} } }],
  ];
  for (const [label, event] of bad) {
    const parsed = parseHostMessage({ type: 'event', event });
    assert.equal(parsed.ok, false, label);
    if (!parsed.ok) assert.ok(parsed.error.length > 0, label);
  }
});

test('a snapshot carries events, todos and session state', () => {
  const snapshot: HostMessage = {
    type: 'snapshot',
    sessionId: 's1',
    replace: true,
    events,
    todos: [{ id: '1', content: 'x', status: 'pending' }],
    running: true,
    model: 'claude-x',
    contextWindow: 200000,
  };
  const parsed = parseHostMessage(JSON.parse(JSON.stringify(snapshot)));
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
  assert.equal(parsed.value.type, 'snapshot');
  if (parsed.value.type === 'snapshot') assert.equal(parsed.value.events.length, events.length);
  const broken = parseHostMessage({ ...snapshot, events: [...events, { ...events[0], seq: 'x' }] });
  assert.equal(broken.ok, false);
});

test('host messages other than events are validated strictly', () => {
  const good: HostMessage[] = [
    {
      type: 'sessions',
      items: [{ id: 's1', title: 'Fix bug', updatedAt: 1, messageCount: 4 }],
      currentId: 's1',
    },
    { type: 'fileCompletions', query: 'src/a', items: ['src/a.ts', 'src/ab.ts'] },
    { type: 'review', files: [{ path: 'a.ts', hunks: [{ id: 'h1', startLine: 3, added: 2, removed: 1 }] }] },
    { type: 'usage', contextTokens: 1000, contextWindow: 200000, cacheHitPct: 80, costUsd: 0.02 },
    { type: 'submitResult', idempotencyKey: 'k', ok: false, error: 'No API key' },
    { type: 'submitReceived', idempotencyKey: 'k' },
    { type: 'setInput', text: 'Explain', mentions: ['a.ts'] },
    {
      type: 'hostNotice',
      level: 'error',
      text: 'No key',
      code: 'NO_API_KEY',
      suggestion: 'Run Keel: Set API Key',
    },
  ];
  for (const message of good) assert.ok(parseHostMessage(message).ok, message.type);
  const bad: unknown[] = [
    null,
    'snapshot',
    {},
    { type: 'nope' },
    { type: 'usage', contextTokens: 1, contextWindow: 2, cacheHitPct: 120, costUsd: 0 },
    { type: 'review', files: [{ path: 'a.ts', hunks: [{ id: 'h1', startLine: 0, added: 1, removed: 0 }] }] },
    { type: 'fileCompletions', query: 'a', items: ['a'], extra: true },
  ];
  for (const message of bad) assert.equal(parseHostMessage(message).ok, false, JSON.stringify(message));
});

test('webview messages: every kind parses, junk and extra keys do not', () => {
  const good: WebviewMessage[] = [
    { type: 'ready', afterSeq: 0 },
    { type: 'ready', afterSeq: 42, sessionId: 's1' },
    { type: 'submit', text: 'fix it', mentions: ['src/a.ts'], idempotencyKey: 'k1' },
    { type: 'stop' },
    { type: 'newChat' },
    { type: 'openSession', id: 's2' },
    { type: 'listSessions' },
    { type: 'accept', path: 'a.ts', hunkId: 'h1' },
    { type: 'reject', path: 'a.ts' },
    { type: 'acceptAll' },
    { type: 'rejectAll' },
    { type: 'openDiff', path: 'a.ts' },
    { type: 'restoreBefore', promptNumber: 2 },
    { type: 'openFile', path: 'a.ts', line: 3 },
    { type: 'copyCode', code: 'x' },
    { type: 'insertCode', code: 'x' },
    { type: 'requestFileCompletions', query: '' },
  ];
  for (const message of good) {
    const parsed = parseWebviewMessage(message);
    assert.ok(parsed.ok, message.type);
    assert.deepEqual(parsed.value, message);
  }
  const bad: unknown[] = [
    { type: 'submit', text: '', mentions: [], idempotencyKey: 'k' },
    { type: 'submit', text: 'x', mentions: [], idempotencyKey: '' },
    { type: 'submit', text: 'x', idempotencyKey: 'k' },
    { type: 'stop', force: true },
    { type: 'ready', afterSeq: -1 },
    { type: 'accept' },
    { type: 'runShell', command: 'rm -rf /' },
    undefined,
  ];
  for (const message of bad) assert.equal(parseWebviewMessage(message).ok, false, JSON.stringify(message));
});

test('mode picker and plan Start messages are validated both ways', () => {
  assert.ok(parseWebviewMessage({ type: 'setMode', mode: 'plan' }).ok);
  assert.ok(parseWebviewMessage({ type: 'setMode', mode: null }).ok);
  assert.ok(parseWebviewMessage({ type: 'startPlan', text: '## Plan\n1. A' }).ok);
  assert.equal(parseWebviewMessage({ type: 'startPlan', text: '' }).ok, false);
  assert.ok(
    parseHostMessage({ type: 'modes', modes: [{ name: 'plan', description: 'Read-only' }], current: null })
      .ok,
  );
});
