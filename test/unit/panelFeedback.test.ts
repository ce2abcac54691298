import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { AgentEvent } from '../../src/agent/events.ts';
import { feedbackDir, recordAnswerFeedback } from '../../src/agent/eval/feedback.ts';
import { webviewMessageSchema } from '../../src/shared/webviewProtocol.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { cliEnv, readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// The panel's 👍/👎: the webview's message is validated, the host records it only for an answer of
// the current session, and what it writes is what `keel eval --from-feedback` reads — a thumbs-down
// (with its note) becomes a draft eval task of the built CLI.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

test('the webview→host feedback message is validated', () => {
  const ok = webviewMessageSchema.safeParse({ type: 'feedback', messageId: 'm1', rating: 'down', note: 'x' });
  assert.equal(ok.success, true);
  for (const bad of [
    { type: 'feedback', messageId: 'm1', rating: 'meh' },
    { type: 'feedback', messageId: 'm1', rating: 'down', note: 'x'.repeat(4001) },
    { type: 'feedback', messageId: 'm1', rating: 'up', extra: 1 },
    { type: 'feedback', rating: 'up' },
  ])
    assert.equal(webviewMessageSchema.safeParse(bad).success, false, JSON.stringify(bad).slice(0, 80));
});

test('a 👎 recorded by the host on a real answer makes keel eval --from-feedback draft the session', async () => {
  const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
  emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'The answer is 41.' }] }] });
  const run = await runKeel(['run', '--workspace', ws, 'What is six times seven?'], cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  const id = sessionIdFrom(run.stderr);
  const events = readLog(ws, id).filter((e) => typeof e.seq === 'number') as unknown as AgentEvent[];
  const session = { id, eventsSince: (n: number) => events.filter((e) => e.seq > n) };
  const answer = events.find((e) => e.type === 'message_appended' && e.message.role === 'assistant');
  assert.ok(answer?.type === 'message_appended');
  const state = path.join(ws, '.keel');

  // An id that is not an answer of this session is refused and nothing is written.
  const forged = recordAnswerFeedback(state, session, { messageId: 'usr_not_an_answer', rating: 'down' });
  assert.deepEqual(forged, { ok: false, error: 'That answer is not part of the current session.' });
  assert.equal(fs.existsSync(feedbackDir(state)), false);

  // 👎, then the note sent after it (a newer rating of the same answer).
  assert.equal(
    recordAnswerFeedback(state, session, { messageId: answer.message.id, rating: 'down' }).ok,
    true,
  );
  const noted = recordAnswerFeedback(state, session, {
    messageId: answer.message.id,
    rating: 'down',
    note: ' six times seven is 42 ',
  });
  assert.equal(noted.ok, true);

  const suite = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-panel-feedback-')), 'suite');
  const made = await runKeel(['eval', '--from-feedback', suite, '--workspace', ws], cliEnv(emu.url));
  assert.equal(made.code, 0, made.stderr);
  const tasks = fs.readdirSync(path.join(suite, 'tasks'));
  assert.equal(tasks.length, 1);
  const task = JSON.parse(fs.readFileSync(path.join(suite, 'tasks', tasks[0]!), 'utf8'));
  assert.equal(task.prompt, 'What is six times seven?');
  assert.match(task.description, /^Thumbs down: "six times seven is 42"\. /);

  // Changed to 👍: no longer a thumbs-down session.
  recordAnswerFeedback(state, session, { messageId: answer.message.id, rating: 'up' });
  const suite2 = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-panel-feedback-')), 'suite');
  const none = await runKeel(['eval', '--from-feedback', suite2, '--workspace', ws], cliEnv(emu.url));
  assert.equal(none.code, 0, none.stderr);
  assert.match(none.stdout, /No new thumbs-down session/);
});
