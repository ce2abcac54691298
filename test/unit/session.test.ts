import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { rgPath } from '@vscode/ripgrep';
import type { AgentEvent } from '../../src/agent/events.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { loadSession } from '../../src/agent/session/log.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { tempWorkspace } from './helpers/cli.ts';

// The session API in-process (as the VS Code host drives it): lanes, steering, abort, idempotency.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

function session(files: Record<string, string> = { 'a.txt': 'alpha\n', 'b.txt': 'beta\n' }) {
  const host = createNodeHost({
    workspace: tempWorkspace(files),
    approvals: createPolicyApprovals('never'),
    ripgrepPath: rgPath,
  });
  return createAgentSession({ host, model: 'claude-sonnet-4-6', apiKey: 'k', baseURL: emu.url });
}

function userTexts(body: unknown): string {
  return JSON.stringify(body);
}

test('a prompt sent during a run steers it: the running tool finishes, the rest are [Skipped], the message comes next', async () => {
  const s = session();
  emu.setScenario({
    replies: [
      {
        content: [
          { type: 'tool_use', name: 'Read', input: { path: 'a.txt' } },
          { type: 'tool_use', name: 'Read', input: { path: 'b.txt' } },
        ],
      },
      {
        expect: { lastUserContains: 'actually, stop' },
        content: [{ type: 'text', text: 'stopping as asked' }],
      },
    ],
  });
  const events: AgentEvent[] = [];
  let steered: Promise<unknown> | undefined;
  s.subscribe((e) => {
    events.push(e);
    if (e.type === 'tool_start' && !steered) steered = s.prompt('actually, stop');
  });
  const outcome = await s.prompt('read both files');
  assert.equal(outcome.status, 'finished');
  assert.equal(outcome.finalText, 'stopping as asked');
  assert.equal(await steered, outcome, 'the steering prompt resolves with the run that handled it');
  const lastBody = userTexts(emu.requests.at(-1)?.body);
  assert.ok(lastBody.includes('alpha'), 'the running tool finished');
  assert.ok(lastBody.includes('[Skipped]'), 'the remaining call was skipped, still answered (P2)');
  assert.ok(!lastBody.includes('beta'), 'the skipped call never ran');
  const queued = events.filter((e) => e.type === 'user_message');
  assert.deepEqual(
    queued.map((e) => e.type === 'user_message' && e.queued),
    [false, true, false],
  );
});

test('abort ends a slow stream at once and the log stays parseable', async () => {
  const s = session();
  emu.setScenario({
    replies: [{ fault: { type: 'slow', delayMs: 30_000 }, content: [{ type: 'text', text: 'late' }] }],
  });
  const before = emu.requests.length;
  const run = s.prompt('go');
  while (emu.requests.length === before) await new Promise((r) => setTimeout(r, 10));
  const t0 = Date.now();
  s.abort('test');
  const outcome = await run;
  assert.equal(outcome.status, 'aborted');
  assert.ok(Date.now() - t0 < 10_000, 'the abort waited for the 30 s stream');
  const loaded = loadSession(s.logPath);
  assert.equal(loaded.tornLines, 0);
  assert.equal(loaded.events.at(-1)?.type, 'agent_end');
});

test('a double-send with the same idempotency key runs once', async () => {
  const s = session();
  emu.setScenario({
    replies: [{ content: [{ type: 'text', text: 'once' }] }, { content: [{ type: 'text', text: 'twice' }] }],
  });
  const before = emu.requests.length;
  const [a, b] = await Promise.all([
    s.prompt('hi', { idempotencyKey: 'k1' }),
    s.prompt('hi', { idempotencyKey: 'k1' }),
  ]);
  assert.equal(a, b);
  assert.equal(emu.requests.length - before, 1);
  assert.equal(s.messages.filter((m) => m.role === 'user').length, 1);
});

test('host notes reach the model at its next turn; eventsSince catches up from a seq', async () => {
  const s = session();
  emu.setScenario({
    replies: [
      { content: [{ type: 'text', text: 'first' }] },
      { expect: { lastUserContains: 'rejected hunk 2' }, content: [{ type: 'text', text: 'noted' }] },
    ],
  });
  await s.prompt('one');
  const mark = s.eventsSince(0).at(-1)!.seq;
  s.notify('The user rejected hunk 2 of a.txt.', 'edit-review');
  const outcome = await s.prompt('two');
  assert.equal(outcome.finalText, 'noted');
  const later = s.eventsSince(mark);
  assert.ok(later.length > 0 && later.every((e) => e.seq > mark));
  assert.ok(
    !later.some((e) => e.type === 'message_delta'),
    'catch-up carries complete messages, not fragments',
  );
});

test('@file mentions become a reminder to read the file, not its content', async () => {
  const s = session({ 'secret-plan.md': 'THE CONTENT ITSELF\n' });
  emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'ok' }] }] });
  await s.prompt('look at @secret-plan.md', { mentions: ['secret-plan.md'] });
  const body = userTexts(emu.requests.at(-1)?.body);
  assert.ok(body.includes('secret-plan.md'));
  assert.ok(!body.includes('THE CONTENT ITSELF'));
});

test('circuit breaker: 3 failures open the circuit for 300 s, then a trial call closes it', async () => {
  const ws = tempWorkspace({ 'x.ts': 'const needle = 1;\n' });
  // A ripgrep that starts and dies at once (a resource limit): Grep is UNAVAILABLE, no fallback hides it.
  const fakeRg = `${ws}/.keel/bin-rg`;
  const fs = await import('node:fs');
  fs.mkdirSync(`${ws}/.keel`, { recursive: true });
  fs.writeFileSync(fakeRg, '#!/bin/sh\nkill -KILL $$\n', { mode: 0o755 });
  let clock = 1_000_000;
  const base = createNodeHost({
    workspace: ws,
    approvals: createPolicyApprovals('never'),
    ripgrepPath: fakeRg,
  });
  const host = { ...base, clock: { now: () => clock } };
  const s = createAgentSession({ host, model: 'claude-sonnet-4-6', apiKey: 'k', baseURL: emu.url });
  const grep = (q: string) => ({
    content: [{ type: 'tool_use' as const, name: 'Grep', input: { pattern: q } }],
  });
  emu.setScenario({
    replies: [
      grep('needle'),
      grep('needle2'),
      grep('needle3'),
      grep('needle4'),
      { content: [{ type: 'text', text: 'paused' }] },
    ],
  });
  const codesOf = (events: AgentEvent[]) =>
    events.flatMap((e) => (e.type === 'tool_end' ? [e.result.error?.code ?? e.result.status] : []));
  const seen: AgentEvent[] = [];
  s.subscribe((e) => seen.push(e));
  await s.prompt('search');
  assert.deepEqual(codesOf(seen), ['UNAVAILABLE', 'UNAVAILABLE', 'UNAVAILABLE', 'CIRCUIT_OPEN']);

  // Still open a minute later; half-open after 300 s, and a successful trial closes it.
  clock += 60_000;
  seen.length = 0;
  emu.setScenario({ replies: [grep('needle'), { content: [{ type: 'text', text: 'still paused' }] }] });
  await s.prompt('again');
  assert.deepEqual(codesOf(seen), ['CIRCUIT_OPEN']);
  fs.rmSync(fakeRg);
  fs.symlinkSync(rgPath, fakeRg);
  clock += 300_000;
  seen.length = 0;
  emu.setScenario({
    replies: [grep('needle'), grep('needle'), { content: [{ type: 'text', text: 'found' }] }],
  });
  await s.prompt('retry');
  assert.deepEqual(codesOf(seen), ['success', 'success']);
});

test("a tool card's duration leaves out the time the approval question waited for the user", async () => {
  let clock = 1_000_000;
  const base = createNodeHost({
    workspace: tempWorkspace({}),
    // The user takes five minutes to answer (the clock moves while the question is open), then allows.
    approvals: {
      ask: async () => {
        clock += 300_000;
        return 'allow_once';
      },
    },
    ripgrepPath: rgPath,
  });
  const s = createAgentSession({
    host: { ...base, clock: { now: () => clock } },
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
  });
  emu.setScenario({
    replies: [
      { content: [{ type: 'tool_use', name: 'Bash', input: { command: 'rm -r nothing-here' } }] },
      { content: [{ type: 'text', text: 'done' }] },
    ],
  });
  const ends: number[] = [];
  s.subscribe((e) => {
    if (e.type === 'tool_end') ends.push(e.durationMs);
  });
  const outcome = await s.prompt('remove it');
  assert.equal(outcome.status, 'finished');
  assert.equal(ends.length, 1);
  assert.ok(ends[0]! >= 0 && ends[0]! < 300_000, `duration ${ends[0]} ms includes the approval wait`);
});
