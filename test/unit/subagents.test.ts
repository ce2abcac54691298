import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { computeMetrics } from '../../src/agent/context/metrics.ts';
import type { ModelCallRecord } from '../../src/agent/events.ts';
import type { ApprovalRequest } from '../../src/agent/host.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { listSessions } from '../../src/agent/session/log.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { parseAnswer } from '../../src/agent/subagents/prompt.ts';
import { firstUserText } from '../emulator/scenario.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';

// Sub-agents in the core, against the emulator: approvals name the sub-agent, steering reaches it,
// its answer is parsed into the structured result, and the trace keeps one prefix per agent.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const use = (name: string, input: Record<string, unknown>): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
});
const text = (t: string, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'text', text: t }],
  ...(expect ? { expect } : {}),
});

function workspace(): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-sub-')));
}

test('a sub-agent refused by a policy (nobody to ask) says no approval was possible, not that the user denied', async () => {
  emu.setScenario({
    replies: [
      use('Task', { description: 'Clean up', prompt: 'CHILD-RM: remove build', mode: 'general' }),
      text('ok', { toolResultContains: 'Nothing ran.' }),
    ],
    threads: [
      {
        firstUserContains: 'CHILD-RM',
        replies: [
          use('Bash', { command: 'rm -r build' }),
          text('## Summary\nNothing ran.', {
            toolResultContains: 'No approval was possible for running: rm -r build',
          }),
        ],
      },
    ],
  });
  const session = createAgentSession({
    host: createNodeHost({
      workspace: workspace(),
      approvals: createPolicyApprovals('never', 'no terminal; pass --approve all'),
    }),
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
  });
  const outcome = await session.prompt('clean up');
  // The child's summary comes back only if its Bash result had the policy wording (scripted expectation).
  assert.equal(outcome.status, 'finished', outcome.error);
});

test("a sub-agent's approval goes through the parent's dialog and names the sub-agent", async () => {
  const asked: ApprovalRequest[] = [];
  emu.setScenario({
    replies: [
      use('Task', { description: 'Fetch the page', prompt: 'CHILD-NET: fetch it', mode: 'general' }),
      text('ok', { toolResultContains: 'denied' }),
    ],
    threads: [
      {
        firstUserContains: 'CHILD-NET',
        replies: [
          use('Bash', { command: 'curl -s https://example.com/x' }),
          text('## Summary\nThe user denied the fetch.', { toolResultContains: 'DENIED_BY_USER' }),
        ],
      },
    ],
  });
  const ws = workspace();
  const session = createAgentSession({
    host: createNodeHost({
      workspace: ws,
      approvals: {
        ask: async (request) => {
          asked.push(request);
          return 'deny';
        },
      },
    }),
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
  });
  const outcome = await session.prompt('fetch example.com');
  assert.equal(outcome.status, 'finished', outcome.error);
  assert.equal(asked.length, 1);
  assert.match(asked[0]!.title, /^Sub-agent "Fetch the page": /);
  // The sub-agent's log sits beside the parent's but is not listed as a chat of its own.
  assert.equal(fs.readdirSync(path.join(ws, '.keel', 'sessions')).length, 2);
  assert.deepEqual(
    listSessions(path.join(ws, '.keel')).map((s) => s.id),
    [session.id],
  );
  session.dispose();
});

test('steering reaches a running sub-agent: it is asked to wrap up, and the parent gets the message next', async () => {
  const from = emu.requests.length;
  emu.setScenario({
    replies: [
      use('Task', { description: 'Long search', prompt: 'CHILD-STEER: search everything' }),
      text('stopped as asked', { lastUserContains: 'STEER-NOW' }),
    ],
    threads: [
      {
        firstUserContains: 'CHILD-STEER',
        replies: [
          {
            content: [
              { type: 'tool_use', name: 'Glob', input: { pattern: '**/*' } },
              { type: 'tool_use', name: 'Grep', input: { pattern: 'x' } },
            ],
          },
          text('## Summary\nStopped early.', { lastUserContains: 'Stop now and answer' }),
        ],
      },
    ],
  });
  const session = createAgentSession({
    host: createNodeHost({ workspace: workspace(), approvals: { ask: async () => 'deny' } }),
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
  });
  let steered = false;
  session.subscribe((e) => {
    // The user writes while the sub-agent's first call runs.
    if (!steered && e.type === 'subagent_tool' && e.phase === 'start') {
      steered = true;
      void session.prompt('STEER-NOW: stop searching');
    }
  });
  const outcome = await session.prompt('find it');
  assert.equal(outcome.status, 'finished', outcome.error);
  assert.equal(outcome.finalText, 'stopped as asked');
  assert.deepEqual(
    emu.requests
      .slice(from)
      .filter((r) => r.status !== 200)
      .map((r) => r.error?.message),
    [],
    'every scripted expectation held',
  );
  const child = emu.requests
    .slice(from)
    .flatMap((r) => (r.request && firstUserText(r.request).includes('CHILD-STEER') ? [r.request] : []));
  assert.equal(child.length, 2, 'the sub-agent wrapped up after its running call');
  const second = JSON.stringify(child[1]!.messages);
  assert.ok(!JSON.stringify(child[0]!.messages).includes('Stop now'), 'not asked before the user wrote');
  assert.match(second, /No files match/, 'the running call finished');
  assert.match(second, /\[Skipped\]/, 'its pending call was skipped');
  assert.match(second, /Stop now and answer/);
  session.dispose();
});

test("the sub-agent's answer becomes the structured result; free text is all summary", () => {
  const parsed = parseAnswer(
    '## Summary\nA is B.\n\n## Evidence\nsrc/a.ts:3 says so\n## Open questions\nWhy C?',
  );
  assert.deepEqual(parsed, { summary: 'A is B.', evidence: 'src/a.ts:3 says so', openQuestions: 'Why C?' });
  assert.deepEqual(parseAnswer('Just text.'), { summary: 'Just text.', evidence: '', openQuestions: '' });
});

test("prefix stability is judged per agent: a sub-agent's own prefix is not a break in the parent's", () => {
  const call = (hash: string, agent?: string): ModelCallRecord => ({
    stage: 0,
    message_count: 1,
    est_tokens: 1,
    prefix_hash: hash,
    cache_read: 0,
    cache_write: 0,
    input: 1,
    output: 1,
    latency_ms: 1,
    ttft_ms: 1,
    model: 'm',
    cost_usd: 0.5,
    context_window: 1000,
    ok: true,
    ...(agent ? { agent } : {}),
  });
  const m = computeMetrics([call('P'), call('S', 'sub1'), call('S', 'sub1'), call('P'), call('X')]);
  assert.equal(m.prefix_stability_ratio, 0.6667, 'P→P and S→S stable, P→X broken');
  assert.equal(m.calls, 5);
  assert.equal(m.cost_usd, 2.5, "the sub-agent's cost is in the totals");
});

test("the whole tree shares the run's turn limit", async () => {
  const from = emu.requests.length;
  const glob = use('Glob', { pattern: '*.md' });
  emu.setScenario({
    replies: [
      use('Task', { description: 'Wander', prompt: 'CHILD-TURNS: keep looking' }),
      text('out of turns', { toolResultContains: 'max_turns' }),
    ],
    threads: [{ firstUserContains: 'CHILD-TURNS', replies: [glob, glob, glob, glob, glob, text('found')] }],
  });
  const session = createAgentSession({
    host: createNodeHost({ workspace: workspace(), approvals: { ask: async () => 'deny' } }),
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
    maxTurns: 4,
  });
  const outcome = await session.prompt('look around');
  assert.equal(outcome.status, 'finished', outcome.error);
  const child = emu.requests
    .slice(from)
    .filter((r) => r.request && firstUserText(r.request).includes('CHILD-TURNS'));
  assert.equal(child.length, 2, 'the sub-agent got the turns left but one, kept for the parent to answer');
  assert.equal(emu.requests.length - from, 4, 'parent and sub-agent together made exactly --max-turns calls');
  session.dispose();
});

test("when sub-agents used the tree's turns, the parent stops at the limit instead of going on", async () => {
  const from = emu.requests.length;
  const glob = use('Glob', { pattern: '*.md' });
  const task = use('Task', { description: 'Wander', prompt: 'CHILD-POOL: keep looking' });
  emu.setScenario({
    replies: [task, task, task, text('never reached')],
    threads: [
      { firstUserContains: 'CHILD-POOL', replies: [glob, glob, glob, glob, glob, glob, text('found')] },
    ],
  });
  const session = createAgentSession({
    host: createNodeHost({ workspace: workspace(), approvals: { ask: async () => 'deny' } }),
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
    maxTurns: 6,
  });
  const outcome = await session.prompt('look around');
  assert.equal(outcome.status, 'max_turns', 'the tree ran out of turns');
  assert.ok(
    emu.requests.length - from <= 7,
    `at most one turn over the limit, got ${emu.requests.length - from}`,
  );
  session.dispose();
});
