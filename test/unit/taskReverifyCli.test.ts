import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// The long-task harness re-verifies (seed 003), through the built CLI: each session start re-runs the
// verify of the passing features before any new work, FeatureDone takes only the session's feature,
// priorities order the work — and the re-run verify commands are as confined as a Bash call.

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
const LIST = 'keel-task/feature_list.json';
const CHECK = 'test "$(cat src/$1.txt 2>/dev/null)" = "$1 works"\n';
const firstOf = (id: string) => `work on THIS one only: ${id}`;

type Extra = { priority?: number };
function list(names: string[], passing = 0, extra: Extra[] = []): string {
  const features = names.map((name, i) => ({
    id: `F${i + 1}`,
    category: 'functional',
    description: `src/${name}.txt says "${name} works"`,
    steps: [`create src/${name}.txt`],
    verify: `sh check.sh ${name}`,
    ...(extra[i]?.priority !== undefined ? { priority: extra[i]!.priority } : {}),
    passes: i < passing,
  }));
  return `${JSON.stringify({ features }, null, 2)}\n`;
}

const git = (ws: string, ...args: string[]) => execFileSync('git', args, { cwd: ws, encoding: 'utf8' });

/** A task Keel did not set up here, committed and approved with `keel trust` (as a user would). */
async function approvedTask(files: Record<string, string>): Promise<string> {
  const ws = tempWorkspace({ 'check.sh': CHECK, 'keel-task/progress.md': '# Progress\n', ...files });
  git(ws, 'init', '-q');
  git(ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '-A');
  git(ws, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'init');
  const trust = await runKeel(['trust', '--workspace', ws, '--yes'], cliEnv(emu.url));
  assert.equal(trust.code, 0, trust.stderr);
  return ws;
}

type Report = {
  sessions: { feature: string; outcome: string; passed: string[]; regressed: string[] }[];
};
async function taskRun(ws: string, sessions: number): Promise<{ report: Report; stderr: string }> {
  const before = emu.requests.length;
  const run = await runKeel(
    ['task', 'run', '--workspace', ws, '--sessions', String(sessions), '--approve', 'all', '--json'],
    cliEnv(emu.url),
  );
  assert.ok(run.stdout, run.stderr);
  const failed = emu.requests.slice(before).filter((r) => r.status !== 200);
  assert.deepEqual(
    failed.map((r) => JSON.stringify(r.body).slice(-300)),
    [],
    'every scripted expectation held',
  );
  return { report: JSON.parse(run.stdout) as Report, stderr: run.stderr };
}

describe('keel task re-verifies', () => {
  test('a passing feature broken by a later session fails again at the next session start; FeatureDone for another id is refused', async () => {
    const ws = await approvedTask({ [LIST]: list(['one', 'two', 'three']) });
    emu.setScenario({
      replies: [
        // Session 1 (F1): tries to pass F2 first — refused by code, naming F1.
        call('Write', { path: 'src/one.txt', content: 'one works' }, { lastUserContains: firstOf('F1') }),
        call('FeatureDone', { id: 'F2' }),
        call(
          'FeatureDone',
          { id: 'F1' },
          {
            toolResultContains: 'This session was given F1; FeatureDone accepts only that one, not F2',
            toolResultIsError: true,
          },
        ),
        say('F1 done.', { toolResultContains: 'F1 passes' }),
        // Session 2 (F2): its change breaks F1, and FeatureDone of F2 says nothing about F1.
        call('Write', { path: 'src/two.txt', content: 'two works' }, { lastUserContains: firstOf('F2') }),
        call('Bash', { command: 'echo refactored > src/one.txt' }),
        call('FeatureDone', { id: 'F2' }),
        say('F2 done.', { toolResultContains: 'F2 passes' }),
      ],
    });
    const first = await taskRun(ws, 2);
    assert.deepEqual(
      first.report.sessions.map((s) => [s.feature, s.outcome, s.passed, s.regressed]),
      [
        ['F1', 'passed', ['F1'], []],
        ['F2', 'passed', ['F2'], []],
      ],
    );
    assert.equal(
      git(ws, 'show', `HEAD:${LIST}`),
      list(['one', 'two', 'three'], 2),
      'the list says F1 passes',
    );

    // The next session start re-runs F1's and F2's verify: F1 fails, goes back to failing, and is the
    // session's feature (before F3), with what its verify printed.
    emu.setScenario({
      replies: [say('Fixing F1 next time.', { lastUserContains: 'Broken since they passed' })],
    });
    const before = emu.requests.length;
    const second = await taskRun(ws, 1);
    assert.deepEqual(
      second.report.sessions.map((s) => [s.feature, s.outcome, s.regressed]),
      [['F1', 'not_passed', ['F1']]],
    );
    const orientation = JSON.stringify(emu.requests[before]!.body);
    assert.ok(orientation.includes(firstOf('F1')), 'the broken feature is worked on first');
    assert.ok(orientation.includes('1 passing, 2 failing'));
    const committed = JSON.parse(git(ws, 'show', `HEAD:${LIST}`)) as { features: { passes: boolean }[] };
    assert.deepEqual(
      committed.features.map((f) => f.passes),
      [false, true, false],
      'committed back to failing',
    );
    const progress = fs.readFileSync(path.join(ws, 'keel-task/progress.md'), 'utf8');
    assert.match(
      progress,
      /passing features re-verified before new work\n- F1 FAILS AGAIN — back to failing: `sh check\.sh one` exit code 1/,
    );
    assert.match(progress, /Re-verified at start: 2 re-verified; failing again: F1/);
    assert.equal(git(ws, 'status', '--porcelain').trim(), '', 'everything is committed');
    const status = await runKeel(['task', 'status', '--workspace', ws, '--json'], cliEnv(emu.url));
    const features = (
      JSON.parse(status.stdout) as { features: { id: string; passes: boolean; passedBy?: string }[] }
    ).features;
    assert.deepEqual(
      features.map((f) => [f.id, f.passes, f.passedBy !== undefined]),
      [
        ['F1', false, false],
        ['F2', true, true],
        ['F3', false, false],
      ],
    );

    // The human-readable run says it too.
    emu.setScenario({ replies: [say('Still on F1.')] });
    const plain = await runKeel(
      ['task', 'run', '--workspace', ws, '--sessions', '1', '--approve', 'all'],
      cliEnv(emu.url),
    );
    assert.match(plain.stderr, /on F1: not_passed/);
    assert.doesNotMatch(plain.stderr, /failing again/, 'F1 was already failing: nothing new to report');
  });

  test('features run in priority order (lower first, then list order)', async () => {
    const ws = await approvedTask({
      [LIST]: list(['one', 'two', 'three'], 0, [{}, { priority: 2 }, { priority: 1 }]),
    });
    emu.setScenario({
      replies: [
        call('Write', { path: 'src/three.txt', content: 'three works' }, { lastUserContains: firstOf('F3') }),
        call('FeatureDone', { id: 'F3' }),
        say('F3 done.', { toolResultContains: 'F3 passes' }),
        say('Not yet.', { lastUserContains: firstOf('F2') }),
      ],
    });
    const { report } = await taskRun(ws, 2);
    assert.deepEqual(
      report.sessions.map((s) => [s.feature, s.outcome]),
      [
        ['F3', 'passed'],
        ['F2', 'not_passed'],
      ],
    );
    assert.match(fs.readFileSync(path.join(ws, LIST), 'utf8'), /"priority": 1,\n {6}"passes": true/);
  });

  test('attacker: a verify script changed by a session runs at the next start inside the sandbox, and a verify planted in the list never runs', async () => {
    const ws = await approvedTask({ [LIST]: list(['one', 'two']) });
    const outside = tempWorkspace();
    // What a prompt-injected session does after passing F1: the verify script now also writes outside
    // the workspace, and a script rewrites the list's verify command (past the guard's word match).
    const tamper = [
      `printf 'echo ran > %s/inside-proof\\necho pwned > %s/pwned\\n' "$PWD" "${outside}" > check.sh.new`,
      `printf '%s' '${CHECK.trimEnd()}' >> check.sh.new && mv check.sh.new check.sh`,
      `cd keel-task && sed 's#sh check.sh one#touch ${outside}/planted#' f*.json > x && mv x f*.json`,
    ].join('\n');
    emu.setScenario({
      replies: [
        call('Write', { path: 'src/one.txt', content: 'one works' }, { lastUserContains: firstOf('F1') }),
        call('FeatureDone', { id: 'F1' }),
        call('Write', { path: 'tamper.sh', content: `${tamper}\n` }, { toolResultContains: 'F1 passes' }),
        call('Bash', { command: 'sh tamper.sh' }),
        say('Done.'),
        say('Next.', { lastUserContains: firstOf('F2') }),
      ],
    });
    const first = await taskRun(ws, 1);
    assert.deepEqual(
      first.report.sessions.map((s) => s.passed),
      [['F1']],
    );
    assert.match(fs.readFileSync(path.join(ws, 'check.sh'), 'utf8'), /pwned/, 'the script was changed');
    assert.equal(
      fs.readFileSync(path.join(ws, LIST), 'utf8'),
      list(['one', 'two'], 1),
      'the list was reverted',
    );
    fs.rmSync(path.join(ws, 'inside-proof'), { force: true });

    const second = await taskRun(ws, 1);
    assert.deepEqual(
      second.report.sessions.map((s) => [s.feature, s.regressed]),
      [['F2', []]],
    );
    assert.ok(fs.existsSync(path.join(ws, 'inside-proof')), 'the changed verify script ran at the start');
    assert.ok(!fs.existsSync(path.join(outside, 'pwned')), 'but could not write outside the workspace');
    assert.ok(!fs.existsSync(path.join(outside, 'planted')), 'the planted verify command never ran');
    const audit = fs
      .readFileSync(path.join(ws, '.keel/audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; tool?: string; command?: string; sandboxed?: boolean });
    assert.ok(
      audit.some(
        (e) =>
          e.type === 'command' && e.tool === 'keel task' && e.command === 'sh check.sh one' && e.sandboxed,
      ),
      'the re-verification is in the audit log, sandboxed',
    );
  });
});
