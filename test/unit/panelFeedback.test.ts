import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { AgentEvent } from '../../src/agent/events.ts';
import { feedbackDir, recordAnswerFeedback, recordFeedback } from '../../src/agent/eval/feedback.ts';
import { answerRatings } from '../../src/agent/eval/feedbackRatings.ts';
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

test('a reopened chat gets each answer’s latest rating; a hostile feedback file changes nothing else', () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-ratings-'));
  try {
    const id = '20261127-101010-abcdef';
    const other = '20261127-101010-fedcba';
    assert.deepEqual(Object.entries(answerRatings(state, id)), [], 'no file: no ratings');
    recordFeedback(state, { session: id, message: 'ast_1', rating: 'down', note: 'wrong file' });
    recordFeedback(state, { session: id, message: 'ast_2', rating: 'down' });
    recordFeedback(state, { session: id, message: 'ast_2', rating: 'up' });
    recordFeedback(state, { session: id, rating: 'down' }); // the session as a whole: no answer
    const file = path.join(feedbackDir(state), `${id}.jsonl`);
    // Planted lines: another session's rating, garbage, a wrong shape, a prototype key.
    fs.appendFileSync(
      file,
      [
        JSON.stringify({ v: 1, ts: 1, session: other, message: 'ast_3', rating: 'up' }),
        '{not json',
        JSON.stringify({ v: 1, ts: 1, session: id, message: 'ast_4', rating: 'meh' }),
        JSON.stringify({ v: 1, ts: 1, session: id, message: '__proto__', rating: 'up' }),
        '',
      ].join('\n'),
    );
    const ratings = answerRatings(state, id);
    assert.deepEqual(Object.entries(ratings).sort(), [
      ['__proto__', 'up'],
      ['ast_1', 'down'],
      ['ast_2', 'up'],
    ]);
    assert.equal(Object.getPrototypeOf(ratings), null, 'a "__proto__" answer id is only a key');
    assert.deepEqual(Object.entries(answerRatings(state, '../../etc/passwd')), [], 'not a session id');
    // Too large to be a real rating file, or not a regular file: not read.
    fs.appendFileSync(file, 'x'.repeat(1024 * 1024));
    assert.deepEqual(Object.entries(answerRatings(state, id)), []);
    fs.rmSync(file);
    fs.symlinkSync('/etc/hostname', file);
    assert.deepEqual(Object.entries(answerRatings(state, id)), []);
  } finally {
    fs.rmSync(state, { recursive: true, force: true });
  }
});
