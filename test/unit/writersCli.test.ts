import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import {
  cliEnv,
  KEEL_BIN,
  readLog,
  runKeel,
  sessionIdFrom,
  startKeel,
  tempWorkspace,
  waitFor,
} from './helpers/cli.ts';

// Writer sub-agents (Task mode "writer") through the built `keel` command against the emulator: each
// works in its own git worktree, their results are merged three ways into the user's tree only after
// approval, a conflict is reported and left unapplied, and no tree outlives the run (Ctrl-C included).

const sandboxed = probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap';
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
const report = (summary: string, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'text', text: `## Summary\n${summary}\n## Evidence\nf.txt:1\n## Open questions\nNone` }],
  ...(expect ? { expect } : {}),
});
const answer = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });
const writers = (...tasks: { marker: string; description: string }[]): ScriptedReply => ({
  content: tasks.map((t) => ({
    type: 'tool_use' as const,
    name: 'Task',
    input: { description: t.description, prompt: `${t.marker}: edit f.txt`, mode: 'writer' },
  })),
});
/** A writer's thread: read f.txt, replace `from` with `to`, report. */
const editThread = (marker: string, from: string, to: string, delayMs = 0) => ({
  firstUserContains: marker,
  replies: [
    use('Read', { path: 'f.txt' }),
    {
      ...use('Edit', { path: 'f.txt', old_string: from, new_string: to }),
      ...(delayMs ? { fault: { type: 'slow' as const, delayMs, perChunkDelayMs: 0 } } : {}),
    },
    report(`changed ${from}`, { toolResultContains: 'f.txt' }),
  ],
});

const ORIGINAL = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', ''].join('\n');

function git(cwd: string, args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
  });
}

function repo(files: Record<string, string> = {}): string {
  const ws = tempWorkspace({ 'f.txt': ORIGINAL, ...files });
  git(ws, ['init', '-q']);
  git(ws, ['add', '-A']);
  git(ws, ['commit', '-q', '-m', 'base']);
  return ws;
}

/** A TMPDIR of the run's own: Keel's writers' folder is `<TMPDIR>/keel-writers`. */
function envFor(extra: Record<string, string> = {}) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-wtmp-')));
  return { env: cliEnv(emu.url, { TMPDIR: tmp, ...extra }), writersDir: path.join(tmp, 'keel-writers') };
}

function assertNoTreeLeft(ws: string, writersDir: string) {
  const list = git(ws, ['worktree', 'list', '--porcelain']);
  assert.equal(list.match(/^worktree /gm)?.length, 1, `only the main worktree:\n${list}`);
  assert.deepEqual(
    fs.existsSync(writersDir) ? fs.readdirSync(writersDir) : [],
    [],
    "Keel's writers folder is empty",
  );
}

describe('Task mode "writer": parallel writers in their own worktrees', () => {
  test('two writers edit one file in parallel; nothing reaches the tree without approval; approved, both changes arrive', async () => {
    // 1. Nobody can approve (no terminal): both finish, both diffs are shown, the file is untouched.
    const ws = repo();
    const scenario = () => ({
      replies: [
        writers(
          { marker: 'CHILD-TOP', description: 'Top' },
          { marker: 'CHILD-BOTTOM', description: 'Bottom' },
        ),
        answer('both writers done'),
      ],
      threads: [
        editThread('CHILD-TOP', 'two\n', 'TWO (top writer)\n', 300),
        editThread('CHILD-BOTTOM', 'seven\n', 'SEVEN (bottom writer)\n'),
      ],
    });
    emu.setScenario(scenario());
    const first = envFor();
    const denied = await runKeel(['run', '--workspace', ws, 'edit f.txt in two places'], first.env);
    assert.equal(denied.code, 0, denied.stderr);
    assert.equal(fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'), ORIGINAL, "the user's file is untouched");
    assert.match(denied.stderr, /\+TWO \(top writer\)/, "the top writer's change is shown");
    assert.match(denied.stderr, /\+SEVEN \(bottom writer\)/, "the bottom writer's change is shown");
    assert.match(denied.stderr, /not applied/);
    const log = readLog(ws, sessionIdFrom(denied.stderr));
    const results = log.filter((e) => e.type === 'tool_end' && (e as { name?: string }).name === 'Task');
    assert.equal(results.length, 2);
    for (const r of results) {
      const data = (r as { result: { status: string; data: { merge: { applied: boolean; patch: string } } } })
        .result;
      assert.equal(data.status, 'success', 'each writer finished');
      assert.equal(data.data.merge.applied, false);
      assert.ok(fs.existsSync(path.join(ws, data.data.merge.patch)), 'the change is kept as a patch');
    }
    assertNoTreeLeft(ws, first.writersDir);

    // 2. Approved (--approve all): the merge brings both changes into the one file.
    emu.setScenario(scenario());
    const second = envFor();
    const applied = await runKeel(
      ['run', '--workspace', ws, '--approve', 'all', 'edit f.txt in two places'],
      second.env,
    );
    assert.equal(applied.code, 0, applied.stderr);
    assert.equal(
      fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'),
      ORIGINAL.replace('two\n', 'TWO (top writer)\n').replace('seven\n', 'SEVEN (bottom writer)\n'),
    );
    assert.match(applied.stderr, /merged into 1 file\(s\): f\.txt/);
    const audit = fs.readFileSync(path.join(ws, '.keel', 'audit.jsonl'), 'utf8');
    assert.equal(audit.match(/"via":"writer_merge"/g)?.length, 2, 'each applied merge is audited');
    assertNoTreeLeft(ws, second.writersDir);
  });

  test('on a terminal: the user is asked before each merge, the file is untouched until they say yes, then holds both changes', {
    skip: !fs.existsSync('/usr/bin/script') && 'no script(1) for a pseudo-terminal',
  }, async () => {
    const ws = repo();
    emu.setScenario({
      replies: [
        writers(
          { marker: 'CHILD-TOP', description: 'Top' },
          { marker: 'CHILD-BOTTOM', description: 'Bottom' },
        ),
        answer('both writers done'),
      ],
      threads: [
        editThread('CHILD-TOP', 'two\n', 'TWO (top writer)\n', 300),
        editThread('CHILD-BOTTOM', 'seven\n', 'SEVEN (bottom writer)\n'),
      ],
    });
    const { env, writersDir } = envFor();
    const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, KEEL_BIN, 'run', '--workspace', ws, 'edit f.txt in two places']
      .map(quote)
      .join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
    });
    const closed = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    const questions = () => out.split('Allow? [o]nce').length - 1;
    await waitFor(() => questions() === 1, 30_000, 'the first merge question');
    assert.equal(
      fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'),
      ORIGINAL,
      'untouched while the user is asked',
    );
    assert.match(out, /Apply sub-agent "(Top|Bottom)"'s changes to 1 file\(s\): f\.txt/);
    child.stdin.write('o\n');
    await waitFor(() => questions() === 2, 30_000, 'the second merge question');
    child.stdin.write('o\n');
    assert.equal(await closed, 0, out);
    assert.equal(
      fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'),
      ORIGINAL.replace('two\n', 'TWO (top writer)\n').replace('seven\n', 'SEVEN (bottom writer)\n'),
    );
    assertNoTreeLeft(ws, writersDir);
  });

  test('a writer starts from the uncommitted state; two writers changing the same line: the second is a reported conflict, left unapplied', async () => {
    const ws = repo();
    const dirty = ORIGINAL.replace('one\n', 'one (uncommitted)\n');
    fs.writeFileSync(path.join(ws, 'f.txt'), dirty);
    emu.setScenario({
      replies: [
        writers({ marker: 'CHILD-FAST', description: 'Fast' }, { marker: 'CHILD-SLOW', description: 'Slow' }),
        answer('done'),
      ],
      threads: [
        {
          firstUserContains: 'CHILD-FAST',
          replies: [
            use('Read', { path: 'f.txt' }),
            {
              ...use('Edit', { path: 'f.txt', old_string: 'four\n', new_string: 'FOUR by fast\n' }),
              // The writer's copy holds the user's uncommitted line, not HEAD's.
              expect: { toolResultContains: 'one (uncommitted)' },
            },
            report('changed four', { toolResultContains: 'f.txt' }),
          ],
        },
        editThread('CHILD-SLOW', 'four\n', 'FOUR by slow\n', 1500),
      ],
    });
    const { env, writersDir } = envFor();
    const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'both change line four'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'), dirty.replace('four\n', 'FOUR by fast\n'));
    assert.match(
      run.stderr,
      /sub-agent "Slow": its changes conflict with the workspace and were NOT applied/,
    );
    assert.match(run.stderr, /f\.txt: 1 conflicting region/);
    assert.ok(
      !fs.readFileSync(path.join(ws, 'f.txt'), 'utf8').includes('<<<<<<<'),
      'no conflict markers written',
    );
    assertNoTreeLeft(ws, writersDir);
  });

  test('Ctrl-C while writers work: no worktree and no Keel folder is left, the tree is untouched', async () => {
    const ws = repo();
    emu.setScenario({
      replies: [writers({ marker: 'CHILD-LONG', description: 'Long' }), answer('never')],
      threads: [
        {
          firstUserContains: 'CHILD-LONG',
          replies: [
            use('Edit', { path: 'f.txt', old_string: 'one\n', new_string: 'ONE\n' }),
            { ...report('late'), fault: { type: 'slow', delayMs: 20_000 } },
          ],
        },
      ],
    });
    const { env, writersDir } = envFor();
    const child = startKeel(['run', '--workspace', ws, '--approve', 'all', 'go'], env);
    await waitFor(
      () => fs.existsSync(writersDir) && fs.readdirSync(writersDir).length === 1,
      15_000,
      "the writer's tree",
    );
    await new Promise((r) => setTimeout(r, 500));
    const [id] = fs.readdirSync(writersDir);
    assert.match(git(ws, ['worktree', 'list']), new RegExp(id!), 'a real linked worktree while it works');
    child.kill('SIGINT');
    const run = await child.result;
    assert.equal(run.code, 130, run.stderr);
    assert.equal(fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'), ORIGINAL);
    assertNoTreeLeft(ws, writersDir);
  });

  test('without worktrees: two general sub-agents editing one file at once never lose an update (a CONFLICT, not a false success)', async () => {
    const ws = repo();
    const general = (marker: string) => ({
      type: 'tool_use' as const,
      name: 'Task',
      input: { description: marker, prompt: `${marker}: edit f.txt`, mode: 'general' },
    });
    const thread = (marker: string, from: string, to: string) => ({
      firstUserContains: marker,
      replies: [
        use('Read', { path: 'f.txt' }),
        use('Edit', { path: 'f.txt', old_string: from, new_string: to }),
        report('tried'),
      ],
    });
    emu.setScenario({
      replies: [{ content: [general('CHILD-G1'), general('CHILD-G2')] }, answer('done')],
      threads: [thread('CHILD-G1', 'two\n', 'TWO\n'), thread('CHILD-G2', 'seven\n', 'SEVEN\n')],
    });
    const { env } = envFor();
    const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'go'], env);
    assert.equal(run.code, 0, run.stderr);
    const ends = readLog(ws, sessionIdFrom(run.stderr)).filter(
      (e) => e.type === 'subagent_tool' && e.phase === 'end' && e.name === 'Edit',
    ) as { status: string; errorCode?: string; agentId: string }[];
    assert.equal(ends.length, 2);
    const text = fs.readFileSync(path.join(ws, 'f.txt'), 'utf8');
    const changes = ['TWO\n', 'SEVEN\n'];
    for (const end of ends) {
      if (end.status === 'error') assert.equal(end.errorCode, 'CONFLICT', JSON.stringify(end));
    }
    // Every edit that reported success is in the file.
    const succeeded = ends.filter((e) => e.status !== 'error').length;
    assert.ok(succeeded >= 1);
    assert.equal(changes.filter((c) => text.includes(c)).length, succeeded, text);
  });

  test('a folder that is not a repository: the writer gets a plain copy; a new file and an edit come back', async () => {
    const ws = tempWorkspace({ 'f.txt': ORIGINAL, 'node_modules/dep/index.js': 'dep\n' });
    emu.setScenario({
      replies: [writers({ marker: 'CHILD-PLAIN', description: 'Plain' }), answer('done')],
      threads: [
        {
          firstUserContains: 'CHILD-PLAIN',
          replies: [
            use('Write', { path: 'src/new.txt', content: 'new file\n' }),
            use('Read', { path: 'f.txt' }),
            use('Edit', { path: 'f.txt', old_string: 'three\n', new_string: 'THREE\n' }),
            report('done', { toolResultContains: 'f.txt' }),
          ],
        },
      ],
    });
    const { env, writersDir } = envFor();
    const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'go'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'), ORIGINAL.replace('three\n', 'THREE\n'));
    assert.equal(fs.readFileSync(path.join(ws, 'src', 'new.txt'), 'utf8'), 'new file\n');
    assert.match(run.stderr, /merged into 2 file\(s\): f\.txt, src\/new\.txt/);
    assert.deepEqual(fs.readdirSync(writersDir), []);
  });

  test('a Keel killed outright (SIGKILL) leaves a tree behind; the next session in the workspace removes it', async () => {
    const ws = repo();
    emu.setScenario({
      replies: [writers({ marker: 'CHILD-KILLED', description: 'Killed' }), answer('never')],
      threads: [
        {
          firstUserContains: 'CHILD-KILLED',
          replies: [{ ...report('late'), fault: { type: 'slow', delayMs: 20_000, perChunkDelayMs: 0 } }],
        },
      ],
    });
    const { env, writersDir } = envFor();
    const child = startKeel(['run', '--workspace', ws, '--approve', 'all', 'go'], env);
    await waitFor(
      () => fs.existsSync(writersDir) && fs.readdirSync(writersDir).length === 1,
      15_000,
      "the writer's tree",
    );
    await new Promise((r) => setTimeout(r, 500));
    child.kill('SIGKILL');
    await child.result;
    assert.equal(fs.readdirSync(writersDir).length, 1, 'kill -9 leaves the tree');
    assert.equal(git(ws, ['worktree', 'list', '--porcelain']).match(/^worktree /gm)?.length, 2);
    emu.setScenario({ replies: [answer('hello')] });
    const next = await runKeel(['run', '--workspace', ws, 'hi'], env);
    assert.equal(next.code, 0, next.stderr);
    assertNoTreeLeft(ws, writersDir);
  });

  test('hostile repository: its post-checkout hook, fsmonitor and smudge filter never run; the writer cannot write the user tree', async () => {
    const ws = repo({ '.gitattributes': '* filter=evil\n' });
    const marker = path.join(ws, 'PWNED');
    const hook = path.join(ws, '.git', 'hooks', 'post-checkout');
    fs.writeFileSync(hook, `#!/bin/sh\ntouch ${marker}-hook\n`, { mode: 0o755 });
    git(ws, ['config', 'core.fsmonitor', `touch ${marker}-fsmonitor; false`]);
    git(ws, ['config', 'filter.evil.smudge', `sh -c 'touch ${marker}-smudge; cat'`]);
    git(ws, ['config', 'filter.evil.clean', `sh -c 'touch ${marker}-clean; cat'`]);
    emu.setScenario({
      replies: [writers({ marker: 'CHILD-EVIL', description: 'Evil' }), answer('done')],
      threads: [
        {
          firstUserContains: 'CHILD-EVIL',
          replies: [
            use('Write', { path: path.join(ws, 'f.txt'), content: 'overwritten\n' }),
            {
              // With the OS sandbox, the writer's tree is the only place its commands can write.
              ...(sandboxed
                ? use('Bash', { command: `echo overwritten > ${path.join(ws, 'f.txt')}; echo ok > mine.txt` })
                : use('Write', { path: 'mine.txt', content: 'ok\n' })),
              expect: { toolResultContains: 'outside the workspace', toolResultIsError: true },
            },
            report('tried'),
          ],
        },
      ],
    });
    const { env, writersDir } = envFor();
    const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'go'], env);
    assert.equal(run.code, 0, run.stderr);
    const planted = fs.readdirSync(ws).filter((n) => n.startsWith('PWNED'));
    assert.deepEqual(planted, [], 'no program of the repository ran');
    assert.equal(
      fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'),
      ORIGINAL,
      'the writer could not write the user tree',
    );
    // What it could do, in its own tree, came back through the merge.
    assert.equal(fs.readFileSync(path.join(ws, 'mine.txt'), 'utf8'), 'ok\n');
    assertNoTreeLeft(ws, writersDir);
  });
});
