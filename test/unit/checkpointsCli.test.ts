import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// `keel restore` through the built CLI, after a real 3-prompt session (the real SDK against the
// emulator) that changed files with Edit, Write and a Bash command.

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
const read = (p: string) => call('Read', { path: p });
const edit = (p: string, from: string, to: string) =>
  call('Edit', { path: p, old_string: from, new_string: to });
const write = (p: string, content: string) => call('Write', { path: p, content });
const bash = (command: string) => call('Bash', { command });

const FILES = {
  'a.txt': 'alpha\n',
  'b.txt': 'bravo\n',
  'c.txt': 'charlie\n',
  'gone.txt': 'delete me\n',
  'user.txt': 'user file\n',
  'untouched.txt': 'nobody touches me\n',
  'gen.sh': 'printf "CHARLIE\\n" > c.txt\nprintf "made\\n" > made.txt\nrm gone.txt\n',
};

async function prompt(ws: string, text: string, replies: ScriptedReply[], resume?: string) {
  emu.setScenario({ replies });
  const args = ['run', '--workspace', ws, '--approve', 'all', ...(resume ? ['--resume', resume] : []), text];
  const run = await runKeel(args, cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  return sessionIdFrom(run.stderr);
}

const readText = (ws: string, p: string) => fs.readFileSync(path.join(ws, p), 'utf8');
const exists = (ws: string, p: string) => fs.existsSync(path.join(ws, p));

async function threePromptSession(): Promise<{ ws: string; id: string }> {
  const ws = tempWorkspace(FILES);
  // Prompt 1: Edit a.txt.
  const id = await prompt(ws, 'one', [read('a.txt'), edit('a.txt', 'alpha', 'ALPHA'), say('done 1')]);
  // Prompt 2: Edit b.txt, Write a new file, a command that modifies, creates and deletes.
  await prompt(
    ws,
    'two',
    [
      read('b.txt'),
      edit('b.txt', 'bravo', 'BRAVO'),
      write('new.txt', 'brand new\n'),
      bash('sh gen.sh'),
      say('done 2'),
    ],
    id,
  );
  // Prompt 3: Write over a.txt (already changed in prompt 1) and Edit user.txt.
  await prompt(
    ws,
    'three',
    [
      read('a.txt'),
      write('a.txt', 'ALPHA again\n'),
      read('user.txt'),
      edit('user.txt', 'user file', 'keel wrote this'),
      say('done 3'),
    ],
    id,
  );
  return { ws, id };
}

describe('keel restore', () => {
  test('puts back what prompts ≥ N changed, keeps earlier changes, reports the user’s later edits', async () => {
    const { ws, id } = await threePromptSession();
    assert.equal(readText(ws, 'a.txt'), 'ALPHA again\n');
    assert.equal(readText(ws, 'c.txt'), 'CHARLIE\n');
    assert.ok(!exists(ws, 'gone.txt'));
    // The user edits a file Keel changed, after Keel.
    fs.writeFileSync(path.join(ws, 'user.txt'), 'the user typed this\n');
    const untouched = path.join(ws, 'untouched.txt');
    const past = new Date('2020-01-02T03:04:05Z');
    fs.utimesSync(untouched, past, past);
    const untouchedMtime = fs.statSync(untouched).mtimeMs;

    const dry = await runKeel(
      ['restore', id, '--before-prompt', '2', '--workspace', ws, '--dry-run', '--json'],
      cliEnv(emu.url),
    );
    assert.equal(dry.code, 1, 'a conflict makes the exit code 1');
    const planned = JSON.parse(dry.stdout) as { files: { path: string; status: string; applied: boolean }[] };
    assert.deepEqual(planned.files.map((f) => f.path).sort(), [
      'a.txt',
      'b.txt',
      'c.txt',
      'gone.txt',
      'made.txt',
      'new.txt',
      'user.txt',
    ]);
    assert.ok(planned.files.every((f) => !f.applied));
    assert.equal(readText(ws, 'b.txt'), 'BRAVO\n', 'a dry run writes nothing');

    const run = await runKeel(
      ['restore', id, '--before-prompt', '2', '--workspace', ws, '--json'],
      cliEnv(emu.url),
    );
    assert.equal(run.code, 1, run.stderr);
    const report = JSON.parse(run.stdout) as {
      conflicts: string[];
      files: { path: string; applied: boolean }[];
    };
    assert.deepEqual(report.conflicts, ['user.txt']);
    assert.equal(readText(ws, 'a.txt'), 'ALPHA\n', 'prompt 1’s change stays, prompt 3’s is undone');
    assert.equal(readText(ws, 'b.txt'), 'bravo\n');
    assert.equal(readText(ws, 'c.txt'), 'charlie\n', 'the command’s modification is undone');
    assert.equal(readText(ws, 'gone.txt'), 'delete me\n', 'the file the command deleted is back');
    assert.ok(!exists(ws, 'new.txt'), 'the file Write created is removed');
    assert.ok(!exists(ws, 'made.txt'), 'the file the command created is removed');
    assert.equal(readText(ws, 'user.txt'), 'the user typed this\n', 'the user’s edit is not overwritten');
    assert.equal(readText(ws, 'untouched.txt'), FILES['untouched.txt']);
    assert.equal(fs.statSync(untouched).mtimeMs, untouchedMtime, 'a file no one touched keeps its mtime');
    assert.equal(readText(ws, 'gen.sh'), FILES['gen.sh']);

    // Undo the restore: Keel's state after prompt 3 is back, the user's file still untouched.
    const undo = await runKeel(['restore', id, '--undo', '--workspace', ws], cliEnv(emu.url));
    assert.equal(undo.code, 0, undo.stderr + undo.stdout);
    assert.equal(readText(ws, 'a.txt'), 'ALPHA again\n');
    assert.equal(readText(ws, 'b.txt'), 'BRAVO\n');
    assert.equal(readText(ws, 'c.txt'), 'CHARLIE\n');
    assert.ok(exists(ws, 'made.txt') && exists(ws, 'new.txt') && !exists(ws, 'gone.txt'));
    assert.equal(readText(ws, 'user.txt'), 'the user typed this\n');

    // --force overwrites the conflict too.
    const forced = await runKeel(
      ['restore', id, '--before-prompt', '3', '--workspace', ws, '--force'],
      cliEnv(emu.url),
    );
    assert.equal(forced.code, 0, forced.stderr + forced.stdout);
    assert.equal(readText(ws, 'user.txt'), 'user file\n');
    assert.equal(readText(ws, 'a.txt'), 'ALPHA\n');
    assert.equal(readText(ws, 'b.txt'), 'BRAVO\n', 'prompt 2’s change stays');

    const stats = await runKeel(['restore', '--stats', '--workspace', ws, '--json'], cliEnv(emu.url));
    assert.equal(stats.code, 0, stats.stderr);
    const parsed = JSON.parse(stats.stdout) as {
      totalBytes: number;
      sessions: { sessionId: string; prompts: number }[];
    };
    assert.equal(parsed.sessions[0]?.sessionId, id);
    assert.equal(parsed.sessions[0]?.prompts, 3);
    assert.ok(parsed.totalBytes > 0);
  });

  test('--fork: files back to before prompt 2, and a new session from before it that `run --resume` continues', async () => {
    const ws = tempWorkspace({ 'a.txt': 'a\n' });
    const id = await prompt(ws, 'one', [write('one.txt', '1\n'), say('done 1')]);
    await prompt(ws, 'two, badly put', [write('two.txt', '2\n'), say('done 2')], id);
    const oldLog = fs.readFileSync(path.join(ws, '.keel', 'sessions', `${id}.jsonl`));
    const run = await runKeel(
      ['restore', id, '--before-prompt', '2', '--fork', '--workspace', ws, '--json'],
      cliEnv(emu.url),
    );
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as { fork: { session: string; text: string } };
    assert.equal(report.fork.text, 'two, badly put');
    assert.ok(!exists(ws, 'two.txt'));
    assert.equal(readText(ws, 'one.txt'), '1\n');
    const forkId = report.fork.session;
    assert.notEqual(forkId, id);
    const again = await prompt(ws, 'two, said better', [say('done in the fork')], forkId);
    assert.equal(again, forkId);
    const sent = JSON.stringify(emu.requests.at(-1)?.body);
    assert.match(sent, /said better/);
    assert.match(sent, /done 1/);
    assert.doesNotMatch(sent, /badly put|done 2/);
    assert.deepEqual(fs.readFileSync(path.join(ws, '.keel', 'sessions', `${id}.jsonl`)), oldLog);

    const usage = await runKeel(['restore', id, '--undo', '--fork', '--workspace', ws], cliEnv(emu.url));
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--fork goes with --before-prompt/);
  });

  test('bad input gets a clear error and changes nothing', async () => {
    const ws = tempWorkspace({ 'a.txt': 'a\n' });
    const noSession = await runKeel(
      ['restore', 'nope', '--before-prompt', '1', '--workspace', ws],
      cliEnv(emu.url),
    );
    assert.equal(noSession.code, 1);
    assert.match(noSession.stderr, /No checkpoints for session nope/);
    const both = await runKeel(
      ['restore', 'x', '--before-prompt', '1', '--undo', '--workspace', ws],
      cliEnv(emu.url),
    );
    assert.equal(both.code, 2);
    assert.match(both.stderr, /exactly one of/);
    const id = await prompt(ws, 'one', [say('nothing to do')]);
    const tooFar = await runKeel(['restore', id, '--before-prompt', '4', '--workspace', ws], cliEnv(emu.url));
    assert.equal(tooFar.code, 1);
    assert.match(tooFar.stderr, /has prompts 1\.\.1/);
    const nothing = await runKeel(
      ['restore', id, '--before-prompt', '1', '--workspace', ws],
      cliEnv(emu.url),
    );
    assert.equal(nothing.code, 0);
    assert.match(nothing.stdout, /nothing to restore/);
    assert.equal(readText(ws, 'a.txt'), 'a\n');
  });
});
