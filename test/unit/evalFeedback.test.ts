import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { feedbackDir, recordFeedback, thumbsDownSessions } from '../../src/agent/eval/feedback.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// Evals from real use: ratings are kept beside their session; `keel eval --from-feedback OUT-DIR`
// drafts a task from every session whose latest rating of some answer is thumbs-down (the note goes
// into the task), skips sessions already drafted, and ignores records that are not what they claim.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const say = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });

async function session(ws: string, prompt: string): Promise<string> {
  emu.setScenario({
    replies: [
      { content: [{ type: 'tool_use', name: 'Write', input: { path: 'out.txt', content: `${prompt}\n` } }] },
      say('done'),
    ],
  });
  const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', prompt], cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  return sessionIdFrom(run.stderr);
}

test('the latest rating of each answer counts; records filed under another session or malformed are skipped', () => {
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-feedback-'));
  recordFeedback(state, { session: 's-a', message: 'm1', rating: 'down', note: 'wrong file', ts: 1 });
  recordFeedback(state, { session: 's-a', message: 'm1', rating: 'up', ts: 2 });
  recordFeedback(state, { session: 's-b', message: 'm1', rating: 'down', note: 'broke the build', ts: 3 });
  recordFeedback(state, { session: 's-b', message: 'm2', rating: 'up', ts: 4 });
  fs.appendFileSync(
    path.join(feedbackDir(state), 's-b.jsonl'),
    '{"v":1,"ts":5,"session":"s-c","rating":"down"}\nnot json\n',
  );
  assert.throws(() => recordFeedback(state, { session: '../x', rating: 'down' }), /not a session id/);
  const r = thumbsDownSessions(state);
  assert.deepEqual(r.sessions, [{ session: 's-b', notes: ['broke the build'] }]);
  assert.equal(r.skipped, 2);
  fs.rmSync(state, { recursive: true, force: true });
});

test('keel eval --from-feedback: a draft task per thumbs-down session, its note in the task; run again, nothing new', async () => {
  const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
  const liked = await session(ws, 'Write the first thing');
  const disliked = await session(ws, 'Write the second thing');
  const state = path.join(ws, '.keel');
  recordFeedback(state, { session: liked, rating: 'up' });
  recordFeedback(state, {
    session: disliked,
    message: 'a1',
    rating: 'down',
    note: 'it wrote to the wrong file',
  });
  const suite = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-from-feedback-')), 'suite');
  const made = await runKeel(['eval', '--from-feedback', suite, '--workspace', ws], cliEnv(emu.url));
  assert.equal(made.code, 0, made.stderr);
  const tasks = fs.readdirSync(path.join(suite, 'tasks'));
  assert.equal(tasks.length, 1);
  assert.ok(tasks[0]!.includes(disliked.replace(/[^A-Za-z0-9._-]/g, '-')));
  const task = JSON.parse(fs.readFileSync(path.join(suite, 'tasks', tasks[0]!), 'utf8'));
  assert.equal(task.prompt, 'Write the second thing');
  assert.match(task.description, /^Thumbs down: "it wrote to the wrong file"\. From session /);
  assert.match(made.stdout, /Next: replace each draft's placeholder command grader/);
  // The draft is refused by keel eval until a person writes its grader.
  const refused = await runKeel(['eval', suite, '--emulator'], cliEnv(emu.url));
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /still the placeholder written by --from-session/);
  const again = await runKeel(['eval', '--from-feedback', suite, '--workspace', ws], cliEnv(emu.url));
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /No new thumbs-down session/);
  assert.match(again.stderr, /skipped session .*already exists/);
});
