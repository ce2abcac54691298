import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { loadSuite } from '../../src/agent/eval/schema.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// `keel eval --from-session`: a real two-prompt session (the real SDK against the emulator) becomes
// a task whose fixture is the workspace as it was before the session (checkpoint pre-images), whose
// prompt is the first prompt, and whose placeholder grader `keel eval` refuses until it is replaced.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const call = (name: string, input: unknown): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
});
const say = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });

async function prompt(ws: string, text: string, replies: ScriptedReply[], resume?: string) {
  emu.setScenario({ replies });
  const args = ['run', '--workspace', ws, '--approve', 'all', ...(resume ? ['--resume', resume] : []), text];
  const run = await runKeel(args, cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  return sessionIdFrom(run.stderr);
}

test('keel eval --from-session: first prompt, pre-session fixture, a placeholder grader eval refuses', async () => {
  const ws = tempWorkspace({ 'a.txt': 'alpha\n', 'b.txt': 'bravo\n', 'src/keep.txt': 'untouched\n' });
  const id = await prompt(ws, 'Uppercase a.txt and add new.txt', [
    call('Read', { path: 'a.txt' }),
    call('Edit', { path: 'a.txt', old_string: 'alpha', new_string: 'ALPHA' }),
    call('Write', { path: 'new.txt', content: 'made by the session\n' }),
    say('done'),
  ]);
  await prompt(
    ws,
    'Now b.txt too',
    [
      call('Read', { path: 'b.txt' }),
      call('Edit', { path: 'b.txt', old_string: 'bravo', new_string: 'BRAVO' }),
      say('done'),
    ],
    id,
  );
  assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'ALPHA\n');

  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-from-session-'));
  const suite = path.join(out, 'suite');
  const made = await runKeel(['eval', '--from-session', id, suite, '--workspace', ws], cliEnv(emu.url));
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, /2 file\(s\) put back, 1 created by the session left out/);

  const taskFile = path.join(suite, 'tasks', `session-${id}.json`);
  const task = JSON.parse(fs.readFileSync(taskFile, 'utf8'));
  assert.equal(task.prompt, 'Uppercase a.txt and add new.txt');
  assert.match(task.description, /TODO\(keel-from-session\)/);
  assert.equal(task.graders[0].type, 'command');
  assert.match(task.graders[0].run, /TODO\(keel-from-session\)/);
  const fixture = path.join(suite, task.fixture);
  assert.equal(fs.readFileSync(path.join(fixture, 'a.txt'), 'utf8'), 'alpha\n');
  assert.equal(fs.readFileSync(path.join(fixture, 'b.txt'), 'utf8'), 'bravo\n');
  assert.equal(fs.readFileSync(path.join(fixture, 'src', 'keep.txt'), 'utf8'), 'untouched\n');
  assert.equal(fs.existsSync(path.join(fixture, 'new.txt')), false);
  assert.equal(fs.existsSync(path.join(fixture, '.keel')), false);
  // The live workspace is untouched.
  assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'ALPHA\n');

  // Until the grader is replaced, keel eval refuses the suite with a specific error.
  const refused = await runKeel(['eval', suite, '--emulator'], cliEnv(emu.url));
  assert.equal(refused.code, 2);
  assert.match(
    refused.stderr,
    new RegExp(
      `tasks/session-${id}\\.json: graders\\[0\\]\\.run: still the placeholder written by --from-session`,
    ),
  );
  task.graders = [{ type: 'file', path: 'a.txt', contains: 'ALPHA' }];
  fs.writeFileSync(taskFile, JSON.stringify(task));
  assert.equal(loadSuite(suite).tasks[0]?.prompt, 'Uppercase a.txt and add new.txt');

  // A second export into the same suite would overwrite: refused; an unknown session: named.
  const again = await runKeel(['eval', '--from-session', id, suite, '--workspace', ws], cliEnv(emu.url));
  assert.equal(again.code, 2);
  assert.match(again.stderr, /already exists/);
  const unknown = await runKeel(
    ['eval', '--from-session', 'nope', suite, '--workspace', ws],
    cliEnv(emu.url),
  );
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /No session log for "nope"/);
  fs.rmSync(out, { recursive: true, force: true });
  fs.rmSync(ws, { recursive: true, force: true });
});
