import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { ForkedEarlierError, planRestore } from '../../src/agent/checkpoints/restore.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { ForkError, forkSession } from '../../src/agent/session/fork.ts';
import { listSessions, loadSession, sessionLogPath } from '../../src/agent/session/log.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { tempWorkspace } from './helpers/cli.ts';

// "Restore and edit this message": a new session starting with the old one's history before that
// prompt. The old log is never rewritten (P2), the fork names its parent, and its first request
// carries the same frozen prefix and the history up to (not including) the forked message.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

test('a fork before prompt 2 continues from prompt 1’s history in a new session; the old log is untouched', async () => {
  const ws = tempWorkspace({ 'a.txt': 'a\n' });
  const host = createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all') });
  const opts = { host, model: 'claude-sonnet-4-6', apiKey: 'test', baseURL: emu.url, userSkillsDir: null };
  emu.setScenario({ replies: [text('first answer'), text('second answer'), text('answer in the fork')] });
  const original = createAgentSession(opts);
  await original.prompt('first question');
  await original.prompt('second question, badly worded', { mentions: ['a.txt'] });
  original.dispose();
  const stateDir = path.join(ws, '.keel');
  const oldLog = sessionLogPath(stateDir, original.id);
  const oldBytes = fs.readFileSync(oldLog);

  const fork = forkSession({
    stateDir,
    storage: host.storage,
    sessionId: original.id,
    beforePrompt: 2,
    now: Date.now(),
  });
  assert.notEqual(fork.id, original.id);
  assert.equal(fork.text, 'second question, badly worded');
  assert.deepEqual(fork.mentions, ['a.txt']);
  assert.deepEqual(fs.readFileSync(oldLog), oldBytes, 'the old branch is kept byte for byte');

  const loaded = loadSession(sessionLogPath(stateDir, fork.id));
  assert.equal(loaded.header.forkOf, original.id);
  assert.equal(loaded.header.forkBeforePrompt, 2);
  assert.ok(loaded.events.every((e) => e.sessionId === fork.id));
  assert.deepEqual(
    loaded.messages.map((m) =>
      m.role === 'user' ? `user: ${m.text}` : m.role === 'reminder' ? `reminder: ${m.source}` : m.role,
    ),
    ['user: first question', 'reminder: runtime', 'assistant'],
  );
  assert.ok(
    listSessions(stateDir).some((s) => s.id === fork.id),
    'a fork is a chat of its own in the history list',
  );

  const resumed = createAgentSession({ ...opts, resumeId: fork.id });
  const requestsBefore = emu.requests.length;
  const outcome = await resumed.prompt('second question, better worded');
  assert.equal(outcome.status, 'finished');
  const sent = emu.requests[requestsBefore]!.body as { system: unknown; tools: unknown; messages: unknown[] };
  const firstSent = emu.requests[0]!.body as { system: unknown; tools: unknown };
  assert.deepEqual(sent.system, firstSent.system, 'same frozen system prompt: the prompt cache still hits');
  assert.deepEqual(sent.tools, firstSent.tools);
  const asText = JSON.stringify(sent.messages);
  assert.match(asText, /first question/);
  assert.match(asText, /first answer/);
  assert.doesNotMatch(asText, /badly worded|second answer/);
  assert.match(asText, /better worded/);
  // The fork's prompt numbering continues where it forked: its next prompt is number 2.
  const starts = resumed.eventsSince(0).filter((e) => e.type === 'agent_start');
  assert.equal(starts.at(-1)?.type === 'agent_start' ? starts.at(-1)?.promptNumber : undefined, 2);
  resumed.dispose();
  assert.deepEqual(fs.readFileSync(oldLog), oldBytes);

  // Prompt 1 is older than the fork: the fork cannot restore its files (the parent's changes), and says so.
  assert.throws(
    () => planRestore({ stateDir, root: ws, sessionId: fork.id, beforePrompt: 1 }),
    (e: unknown) =>
      e instanceof ForkedEarlierError && e.message.includes(`keel restore ${original.id} --before-prompt 1`),
  );
  assert.equal(planRestore({ stateDir, root: ws, sessionId: fork.id, beforePrompt: 2 }).items.length, 0);
});

test('forking at a prompt that does not exist is a clear error and writes nothing', async () => {
  const ws = tempWorkspace({});
  const host = createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all') });
  emu.setScenario({ replies: [text('only answer')] });
  const s = createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'test',
    baseURL: emu.url,
    userSkillsDir: null,
  });
  await s.prompt('only question');
  s.dispose();
  const stateDir = path.join(ws, '.keel');
  const before = fs.readdirSync(path.join(stateDir, 'sessions'));
  assert.throws(
    () => forkSession({ stateDir, storage: host.storage, sessionId: s.id, beforePrompt: 3, now: Date.now() }),
    (e: unknown) =>
      e instanceof ForkError && /has prompts 1\.\.1; prompt 3 is not one of them/.test(e.message),
  );
  assert.deepEqual(fs.readdirSync(path.join(stateDir, 'sessions')), before);
});
