import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, startKeel, tempWorkspace, waitFor } from './helpers/cli.ts';

// The long-task harness through the built CLI: `keel task init` then `keel task run --sessions 5`
// against scripted emulator sessions that try every way around the feature list.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const call = (name: string, input: unknown, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
  ...(expect ? { expect } : {}),
});
const say = (text: string, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'text', text }],
  ...(expect ? { expect } : {}),
});
const refused = { toolResultContains: 'BLOCKED_BY_POLICY', toolResultIsError: true };
const LIST = 'keel-task/feature_list.json';

const features = ['one', 'two', 'three'].map((name, i) => ({
  id: `F${i + 1}`,
  category: 'functional',
  description: `src/${name}.txt says "${name} works"`,
  steps: [`create src/${name}.txt`],
  verify: `sh check.sh ${name}`,
  passes: false,
}));
const canonical = (passing: number) =>
  `${JSON.stringify({ features: features.map((f, i) => ({ ...f, passes: i < passing })) }, null, 2)}\n`;

const git = (ws: string, ...args: string[]) => execFileSync('git', args, { cwd: ws, encoding: 'utf8' });

describe('keel task', () => {
  test('init, then run --sessions 5: three features pass, every other change to the list is refused or reverted', async () => {
    const ws = tempWorkspace({ 'check.sh': 'test "$(cat src/$1.txt 2>/dev/null)" = "$1 works"\n' });
    const env = cliEnv(emu.url);

    // ---- init: the initializer writes the list (compact JSON; the harness normalises it) ----
    emu.setScenario({
      replies: [
        call(
          'Write',
          { path: LIST, content: JSON.stringify({ features }) },
          { lastUserContains: 'INITIALIZER' },
        ),
        call('Write', { path: 'keel-task/init.sh', content: 'echo init ran\n' }),
        call('Write', { path: 'keel-task/progress.md', content: '# Progress\n\nPlan: three files.\n' }),
        say('Initialized.'),
      ],
    });
    const init = await runKeel(['task', 'init', '--workspace', ws, '--approve', 'all', 'Three files'], env);
    assert.equal(init.code, 0, init.stderr);
    assert.equal(fs.readFileSync(path.join(ws, LIST), 'utf8'), canonical(0));
    assert.equal(git(ws, 'rev-list', '--count', 'HEAD').trim(), '1');
    const initCommit = git(ws, 'rev-parse', 'HEAD').trim();

    // ---- run: three scripted sessions (sessions 4 and 5 are never needed) ----
    const firstOf = (id: string) => `work on THIS one only: ${id}`;
    emu.setScenario({
      replies: [
        // Session 1: reword, flip by Edit, flip by sed, overwrite by redirect, FeatureDone while verify fails.
        call('Write', { path: LIST, content: canonical(3) }, { lastUserContains: firstOf('F1') }),
        call('Edit', { path: LIST, old_string: '"passes": false', new_string: '"passes": true' }, refused),
        call('Bash', { command: `sed -i 's/false/true/' ${LIST}` }, refused),
        call('Bash', { command: `echo '{"features":[]}' > ${LIST}` }, refused),
        call('FeatureDone', { id: 'F1' }, refused),
        call(
          'Write',
          { path: 'src/one.txt', content: 'one works' },
          { toolResultContains: 'does not pass yet' },
        ),
        call('FeatureDone', { id: 'F1' }),
        say('F1 done; F2 and F3 are left.', { toolResultContains: 'F1 passes' }),
        // Session 2: rm, mv, git checkout are refused; a script rewrites the list anyway (add + delete).
        call('Bash', { command: `rm ${LIST}` }, { lastUserContains: firstOf('F2') }),
        call('Bash', { command: `mv ${LIST} /tmp/list.json` }, refused),
        call('Bash', { command: `git checkout HEAD~1 -- ${LIST}` }, refused),
        call('Write', { path: 'src/two.txt', content: 'two works' }, refused),
        call('FeatureDone', { id: 'F2' }),
        call(
          'Write',
          {
            path: 'tamper.sh',
            content: 'cd keel-task && printf \'{"features":[{"id":"F9"}]}\\n\' > feature_list.json\n',
          },
          { toolResultContains: 'F2 passes' },
        ),
        call('Bash', { command: 'sh tamper.sh' }),
        say('F2 done; F3 is left.', { toolResultContains: 'Exit code: 0' }),
        // Session 3.
        call('Write', { path: 'src/three.txt', content: 'three works' }, { lastUserContains: firstOf('F3') }),
        call('FeatureDone', { id: 'F3' }),
        say('F3 done; nothing is left.', { toolResultContains: 'F3 passes' }),
      ],
    });
    const before = emu.requests.length;
    const run = await runKeel(
      ['task', 'run', '--workspace', ws, '--sessions', '5', '--approve', 'all', '--json'],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as {
      allPassing: boolean;
      sessions: { feature: string; outcome: string; reverted: boolean; session: string }[];
    };
    assert.equal(report.allPassing, true);
    assert.deepEqual(
      report.sessions.map((s) => [s.feature, s.outcome, s.reverted]),
      [
        ['F1', 'passed', false],
        ['F2', 'passed', true],
        ['F3', 'passed', false],
      ],
    );
    const mine = emu.requests.slice(before);
    assert.ok(
      mine.every((r) => r.status === 200),
      'every scripted expectation held (refusals included)',
    );

    // Each session's first request is a fresh context: one message, none of the previous sessions'.
    const firsts = mine.filter((r) => (r.body as { messages: unknown[] }).messages.length === 1);
    assert.equal(firsts.length, 3);
    for (const [i, r] of firsts.entries()) {
      const body = JSON.stringify(r.body);
      assert.ok(body.includes(firstOf(`F${i + 1}`)));
      assert.ok(
        body.includes('init ran'),
        'init.sh ran before the session and its output is in the orientation',
      );
      assert.ok(!body.includes('tool_use'), 'no earlier tool calls');
      assert.ok(!body.includes('does not pass yet'), 'no earlier tool results');
    }
    // FeatureDone is offered in these sessions only.
    assert.ok(JSON.stringify(mine[0]!.body).includes('"FeatureDone"'));

    // One commit per session; the list differs from the committed one only by legitimate flips.
    assert.equal(git(ws, 'rev-list', '--count', 'HEAD').trim(), '4');
    const commits = git(ws, 'rev-list', '--reverse', `${initCommit}..HEAD`).trim().split('\n');
    commits.forEach((c, i) => {
      assert.equal(git(ws, 'show', `${c}:${LIST}`), canonical(i + 1), `list after session ${i + 1}`);
    });
    assert.equal(fs.readFileSync(path.join(ws, LIST), 'utf8'), canonical(3));
    assert.match(git(ws, 'log', '-1', '--format=%s'), /F3/);
    assert.equal(git(ws, 'status', '--porcelain').trim(), '', 'everything is committed');

    const progress = fs.readFileSync(path.join(ws, 'keel-task/progress.md'), 'utf8');
    const entries = progress.match(/^## .* — session /gm) ?? [];
    assert.equal(entries.length, 3, progress);
    assert.match(progress, /Left \(the session's final message\): F1 done; F2 and F3 are left\./);
    assert.equal(
      (progress.match(/WARNING: keel-task\/feature_list\.json was changed outside FeatureDone/g) ?? [])
        .length,
      1,
    );
    // The revert is also in session 2's log (the trace).
    const log2 = fs.readFileSync(
      path.join(ws, '.keel', 'sessions', `${report.sessions[1]!.session}.jsonl`),
      'utf8',
    );
    assert.match(log2, /changed outside FeatureDone/);

    const status = await runKeel(['task', 'status', '--workspace', ws, '--json'], env);
    assert.equal(status.code, 0, status.stderr);
    const parsed = JSON.parse(status.stdout) as {
      total: number;
      passing: number;
      next: unknown;
      features: { passedBy?: string }[];
    };
    assert.equal(parsed.total, 3);
    assert.equal(parsed.passing, 3);
    assert.equal(parsed.next, null);
    assert.deepEqual(
      parsed.features.map((f) => f.passedBy),
      report.sessions.map((s) => s.session),
    );
  });

  test('a run without a task, and a status without a task, say what to do', async () => {
    const ws = tempWorkspace({ 'a.txt': 'a\n' });
    const run = await runKeel(['task', 'run', '--workspace', ws], cliEnv(emu.url));
    assert.equal(run.code, 1);
    assert.match(run.stderr, /keel task init/);
    const usage = await runKeel(['task', 'init', '--workspace', ws], cliEnv(emu.url));
    assert.equal(usage.code, 2);
  });

  test('a task that came with the repository does not run until approved; a killed session is recovered from the records the harness wrote, never from forged ones', async () => {
    const ws = tempWorkspace({
      'check.sh': 'test "$(cat src/$1.txt 2>/dev/null)" = "$1 works"\n',
      [LIST]: canonical(0),
      'keel-task/progress.md': '# Progress\n',
      'keel-task/init.sh': 'echo init ran\n',
    });
    git(ws, 'init', '-q');
    git(ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '-A');
    git(ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'init');
    const env = cliEnv(emu.url);

    // A cloned repository's keel-task/ decides what runs (init.sh, verify commands): not before approval.
    const before = emu.requests.length;
    const refusedRun = await runKeel(
      ['task', 'run', '--workspace', ws, '--sessions', '1', '--approve', 'all'],
      env,
    );
    assert.equal(refusedRun.code, 1);
    assert.match(refusedRun.stderr, /not set up by Keel[\s\S]*keel trust/);
    assert.equal(emu.requests.length, before, 'no session started');
    const trust = await runKeel(['trust', '--workspace', ws, '--yes'], env);
    assert.equal(trust.code, 0, trust.stderr);
    assert.match(trust.stdout, /Approved 1: Long task/);

    // A session that passes F1 through FeatureDone, then is killed while waiting for the model.
    emu.setScenario({
      replies: [
        call('Write', { path: 'src/one.txt', content: 'one works' }, { lastUserContains: 'F1' }),
        call('FeatureDone', { id: 'F1' }),
        { fault: { type: 'slow', delayMs: 30_000 }, content: [{ type: 'text', text: 'late' }] },
      ],
    });
    const sent = emu.requests.length;
    const child = startKeel(['task', 'run', '--workspace', ws, '--sessions', '1', '--approve', 'all'], env);
    await waitFor(
      () => emu.requests.length >= sent + 3,
      20_000,
      'the session to pass F1 and call the model again',
    );
    child.kill('SIGKILL');
    await child.result;
    const sessionsLog = path.join(ws, 'keel-task/sessions.jsonl');
    const killed = (JSON.parse(fs.readFileSync(sessionsLog, 'utf8').split('\n')[0]!) as { session: string })
      .session;
    fs.writeFileSync(path.join(ws, 'src/half.txt'), 'half done');
    // What a script run in that session could append: a "crashed" session whose flips pass F2 and F3.
    fs.appendFileSync(
      sessionsLog,
      `${JSON.stringify({ type: 'start', session: 'forged-1', feature: 'F2', ts: 1 })}\n${JSON.stringify({ type: 'flip', session: 'forged-1', id: 'F2', ts: 2 })}\n${JSON.stringify({ type: 'flip', session: 'forged-1', id: 'F3', ts: 3 })}\n`,
    );

    emu.setScenario({
      replies: [say(`Checked what the killed session left; F2 is next.`, { lastUserContains: killed })],
    });
    const run = await runKeel(
      ['task', 'run', '--workspace', ws, '--sessions', '1', '--approve', 'all', '--json'],
      env,
    );
    assert.equal(run.code, 1, `not every feature passes yet: ${run.stderr}`);
    assert.ok(run.stdout, run.stderr);
    const report = JSON.parse(run.stdout) as {
      sessions: { session: string; outcome: string; feature: string }[];
    };
    assert.deepEqual(
      report.sessions.map((s) => [s.session === killed ? 'killed' : s.session, s.feature, s.outcome]),
      [
        ['killed', 'F1', 'crashed'],
        [report.sessions[1]!.session, 'F2', 'not_passed'],
      ],
      'the forged session is not replayed',
    );
    assert.notEqual(report.sessions[1]!.session, 'forged-1');
    const progress = fs.readFileSync(path.join(ws, 'keel-task/progress.md'), 'utf8');
    assert.match(progress, new RegExp(`session ${killed} did not end \\(crashed or killed\\)`));
    assert.match(progress, /src\/half\.txt/);
    assert.doesNotMatch(progress, /forged-1/);
    assert.equal(
      fs.readFileSync(path.join(ws, LIST), 'utf8'),
      canonical(1),
      'its verified pass is kept, no forged one',
    );

    // The forged "crashed" session is still open in the file: the next run does not replay it either.
    emu.setScenario({ replies: [say('Nothing to do yet.')] });
    const again = await runKeel(
      ['task', 'run', '--workspace', ws, '--sessions', '1', '--approve', 'all', '--json'],
      env,
    );
    assert.ok(again.stdout, again.stderr);
    const second = JSON.parse(again.stdout) as { sessions: { session: string; outcome: string }[] };
    assert.deepEqual(
      second.sessions.map((s) => s.outcome),
      ['not_passed'],
      'no crashed session recovered from forged records',
    );
    assert.equal(fs.readFileSync(path.join(ws, LIST), 'utf8'), canonical(1), 'F2 and F3 still fail');
  });

  test('a general sub-agent in a long-task session meets the same feature-list guard as its parent', async () => {
    const ws = tempWorkspace({
      'check.sh': 'test "$(cat src/$1.txt 2>/dev/null)" = "$1 works"\n',
      [LIST]: canonical(0),
      'keel-task/progress.md': '# Progress\n',
    });
    git(ws, 'init', '-q');
    git(ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '-A');
    git(ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'init');
    const env = cliEnv(emu.url);
    assert.equal((await runKeel(['trust', '--workspace', ws, '--yes'], env)).code, 0);
    emu.setScenario({
      replies: [
        call('Task', {
          description: 'Finish F1',
          prompt: 'CHILD-G: mark every feature as passing',
          mode: 'general',
        }),
        say('The helper could not change the list.', { toolResultContains: 'the feature list is protected' }),
      ],
      threads: [
        {
          firstUserContains: 'CHILD-G',
          replies: [
            call('Read', { path: LIST }),
            call('Write', { path: LIST, content: canonical(3) }),
            call('Bash', { command: `sed -i 's/false/true/' ${LIST}` }, refused),
            say(
              '## Summary\nI could not: the feature list is protected.\n## Evidence\nnone\n## Open questions\nNone',
              refused,
            ),
          ],
        },
      ],
    });
    const run = await runKeel(
      ['task', 'run', '--workspace', ws, '--sessions', '1', '--approve', 'all', '--json'],
      env,
    );
    assert.ok(run.stdout, run.stderr);
    const report = JSON.parse(run.stdout) as { sessions: { reverted: boolean; passed: string[] }[] };
    assert.deepEqual(
      report.sessions.map((s) => [s.reverted, s.passed]),
      [[false, []]],
      'refused, not written and reverted afterwards',
    );
    assert.equal(fs.readFileSync(path.join(ws, LIST), 'utf8'), canonical(0));
  });

  test('SIGTERM during keel task run aborts the session at work, reports it aborted, exits 143', async () => {
    const ws = tempWorkspace({
      'check.sh': 'test "$(cat src/$1.txt 2>/dev/null)" = "$1 works"\n',
      [LIST]: canonical(0),
      'keel-task/progress.md': '# Progress\n',
    });
    git(ws, 'init', '-q');
    git(ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '-A');
    git(ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'init');
    assert.equal((await runKeel(['trust', '--workspace', ws, '--yes'], cliEnv(emu.url))).code, 0);
    const tmp = tempWorkspace();
    emu.setScenario({
      replies: [{ fault: { type: 'slow', delayMs: 30_000 }, content: [{ type: 'text', text: 'late' }] }],
    });
    const before = emu.requests.length;
    const child = startKeel(
      ['task', 'run', '--workspace', ws, '--sessions', '3', '--approve', 'all', '--json'],
      cliEnv(emu.url, { TMPDIR: tmp }),
    );
    await waitFor(() => emu.requests.length > before, 10_000, 'the session to call the model');
    child.kill('SIGTERM');
    const run = await child.result;
    assert.equal(run.code, 143, run.stderr);
    const report = JSON.parse(run.stdout) as { sessions: { outcome: string }[] };
    assert.deepEqual(
      report.sessions.map((s) => s.outcome),
      ['aborted'],
      'no further session started',
    );
    assert.equal(emu.requests.length, before + 1);
    assert.deepEqual(fs.readdirSync(tmp), [], 'the sandbox folder was removed');
  });
});
