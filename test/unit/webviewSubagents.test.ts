import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEvent, AgentEventBody } from '../../src/agent/events.ts';
import { parseHostMessage, parseWebviewMessage } from '../../src/shared/webviewProtocol.ts';
import { initialState, type ToolItem, type ViewState } from '../../webview-ui/src/model.ts';
import { reduceMany } from '../../webview-ui/src/reducer.ts';

// The panel's view model for sub-agent cards and the background-job list, fed the events the core emits.

const stream = (bodies: AgentEventBody[]): AgentEvent[] =>
  bodies.map((b, i) => ({ ...b, sessionId: 's1', seq: i + 1, ts: 1000 + i }) as AgentEvent);

const record = (cost: number, agent?: string) => ({
  stage: 0,
  message_count: 1,
  est_tokens: 100,
  prefix_hash: agent ?? 'main',
  cache_read: 0,
  cache_write: 0,
  input: agent ? 5000 : 1200,
  output: 10,
  latency_ms: 1,
  ttft_ms: 1,
  model: 'm',
  cost_usd: cost,
  context_window: 200_000,
  ok: true,
  ...(agent ? { agent } : {}),
});

function task(state: ViewState): ToolItem {
  const item = state.items.find((i) => i.id === 'task1');
  assert.ok(item?.kind === 'tool');
  return item;
}

const taskEvents: AgentEventBody[] = [
  { type: 'model_call', record: record(0.01) },
  { type: 'tool_start', toolUseId: 'task1', name: 'Task', input: { description: 'Find auth', prompt: 'p' } },
  {
    type: 'subagent_start',
    toolUseId: 'task1',
    agentId: 's1-sub-1',
    description: 'Find auth',
    mode: 'explore',
    logPath: '.keel/sessions/s1-sub-1.jsonl',
  },
  {
    type: 'subagent_tool',
    toolUseId: 'task1',
    agentId: 's1-sub-1',
    phase: 'start',
    name: 'Grep',
    input: { pattern: 'token' },
  },
  { type: 'model_call', record: record(0.002, 's1-sub-1') },
  {
    type: 'subagent_tool',
    toolUseId: 'task1',
    agentId: 's1-sub-1',
    phase: 'end',
    name: 'Grep',
    status: 'success',
  },
  {
    type: 'subagent_tool',
    toolUseId: 'task1',
    agentId: 's1-sub-1',
    phase: 'start',
    name: 'Read',
    input: { path: 'a.ts' },
  },
];

test('a Task card carries its sub-agent: live calls, then status, turns and cost', () => {
  let state = reduceMany(initialState(), stream(taskEvents));
  const live = task(state).subagent;
  assert.ok(live);
  assert.equal(live.status, 'running');
  assert.deepEqual(
    live.calls.map((c) => [c.name, c.status]),
    [
      ['Grep', 'success'],
      ['Read', 'running'],
    ],
  );
  state = reduceMany(
    state,
    stream([
      ...taskEvents,
      {
        type: 'subagent_end',
        toolUseId: 'task1',
        agentId: 's1-sub-1',
        status: 'aborted',
        turns: 2,
        costUsd: 0.002,
      },
    ]).slice(taskEvents.length),
  );
  const ended = task(state).subagent;
  assert.equal(ended?.status, 'aborted');
  assert.equal(ended?.turns, 2);
  assert.equal(ended?.costUsd, 0.002);
  assert.equal(ended?.calls[1]?.status, 'cancelled', 'a call cut by the end is not left spinning');
});

test("a sub-agent's model calls add to the session cost but not to the context meter", () => {
  const state = reduceMany(initialState(), stream(taskEvents));
  assert.equal(state.usage.costUsd, 0.012);
  assert.equal(state.usage.calls, 2);
  assert.equal(state.usage.contextTokens, 1200, "the meter shows the main conversation, not the sub-agent's");
});

test('the job list follows job events: running, then ended', () => {
  const job = (status: 'running' | 'killed', exitCode: number | null) => ({
    type: 'job' as const,
    job: {
      id: 'job_abc123',
      command: 'npm run dev',
      status,
      exitCode,
      startedAt: 1,
      logPath: '/l',
      runId: 'r',
    },
  });
  let state = reduceMany(initialState(), stream([job('running', null)]));
  assert.deepEqual(state.jobs, [
    { id: 'job_abc123', command: 'npm run dev', status: 'running', exitCode: null },
  ]);
  state = reduceMany(state, stream([job('running', null), job('killed', null)]).slice(1));
  assert.equal(state.jobs.length, 1);
  assert.equal(state.jobs[0]?.status, 'killed');
});

test('the panel may ask the host to stop one job; a malformed request is refused', () => {
  assert.ok(parseWebviewMessage({ type: 'stopJob', id: 'job_abc123' }).ok);
  assert.equal(parseWebviewMessage({ type: 'stopJob' }).ok, false);
  assert.ok(parseHostMessage({ type: 'event', event: stream(taskEvents)[2] }).ok);
});
