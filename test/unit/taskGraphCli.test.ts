import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// The task graph of Task calls (`id`, `after`) through the built `keel` command against the emulator:
// independent writers run at once, a dependent one starts only after its tasks merged (its tree holds
// their changes), bad graphs are refused with a clear error, and a conflicted dependency refuses its
// dependents instead of letting them build on the wrong state.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const ORIGINAL = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', ''].join('\n');

function git(cwd: string, args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
  });
}

function repo(): string {
  const ws = tempWorkspace({ 'f.txt': ORIGINAL });
  git(ws, ['init', '-q']);
  git(ws, ['add', '-A']);
  git(ws, ['commit', '-q', '-m', 'base']);
  return ws;
}

function env() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-gtmp-')));
  return cliEnv(emu.url, { TMPDIR: tmp });
}

const use = (name: string, input: Record<string, unknown>): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
});
const answer = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });
const report = (summary: string): ScriptedReply =>
  answer(`## Summary\n${summary}\n## Evidence\nf.txt:1\n## Open questions\nNone`);
const tasks = (...calls: Record<string, unknown>[]): ScriptedReply => ({
  content: calls.map((input) => ({ type: 'tool_use' as const, name: 'Task', input })),
});
const editThread = (marker: string, from: string, to: string, delayMs = 0) => ({
  firstUserContains: marker,
  replies: [
    use('Read', { path: 'f.txt' }),
    {
      ...use('Edit', { path: 'f.txt', old_string: from, new_string: to }),
      ...(delayMs ? { fault: { type: 'slow' as const, delayMs, perChunkDelayMs: 0 } } : {}),
    },
    report(`changed ${from}`),
  ],
});

/** Indices of the emulator requests (from `start`) whose first user message names `marker`. */
function requestsOf(marker: string, start: number): number[] {
  const out: number[] = [];
  emu.requests.forEach((r, i) => {
    if (i < start) return;
    const first = (r.body as { messages?: { content: unknown }[] }).messages?.[0];
    if (first && JSON.stringify(first.content).includes(marker)) out.push(i);
  });
  return out;
}

type TaskEnd = { result: { status: string; text: string; error?: { code: string; message: string } } };
/** The Task results of a run, by the call's description. */
function taskResults(ws: string, stderr: string): Map<string, TaskEnd> {
  const log = readLog(ws, sessionIdFrom(stderr)) as {
    type: string;
    name?: string;
    toolUseId?: string;
    input?: { description?: string };
  }[];
  const described = new Map(
    log.filter((e) => e.type === 'tool_start').map((e) => [e.toolUseId, e.input?.description]),
  );
  const out = new Map<string, TaskEnd>();
  for (const e of log)
    if (e.type === 'tool_end' && e.name === 'Task')
      out.set(described.get(e.toolUseId) ?? '?', e as unknown as TaskEnd);
  return out;
}

describe('Task graph: id and after', () => {
  test('A and B run in parallel; C after [A, B] starts once both merged and builds on both changes', async () => {
    const ws = repo();
    const start = emu.requests.length;
    emu.setScenario({
      replies: [
        // C is asked for first: the order of the calls in the reply does not matter.
        tasks(
          {
            description: 'Join',
            prompt: 'CHILD-C: join the two edits',
            mode: 'writer',
            id: 'C',
            after: ['A', 'B'],
          },
          { description: 'Top', prompt: 'CHILD-A: edit f.txt', mode: 'writer', id: 'A' },
          { description: 'Bottom', prompt: 'CHILD-B: edit f.txt', mode: 'writer', id: 'B' },
        ),
        answer('all three done'),
      ],
      threads: [
        editThread('CHILD-A', 'two\n', 'TWO (A)\n', 400),
        editThread('CHILD-B', 'seven\n', 'SEVEN (B)\n', 400),
        {
          firstUserContains: 'CHILD-C',
          replies: [
            use('Read', { path: 'f.txt' }),
            {
              // Only matches when both A's and B's changes are in C's tree.
              ...use('Edit', {
                path: 'f.txt',
                old_string: 'TWO (A)\nthree\nfour\nfive\nsix\nSEVEN (B)\n',
                new_string: 'TWO (A)\nthree (C)\nfour\nfive\nsix\nSEVEN (B)\n',
              }),
              expect: { toolResultContains: 'SEVEN (B)' },
            },
            report('joined'),
          ],
        },
      ],
    });
    const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'three edits'], env());
    assert.equal(run.code, 0, run.stderr);
    const a = requestsOf('CHILD-A', start);
    const b = requestsOf('CHILD-B', start);
    const c = requestsOf('CHILD-C', start);
    assert.equal(a.length, 3);
    assert.equal(b.length, 3);
    assert.equal(c.length, 3);
    // Both in flight at once: each asked the model before the other's last request.
    assert.ok(
      Math.min(...a) < Math.max(...b) && Math.min(...b) < Math.max(...a),
      `A ${a} and B ${b} overlap`,
    );
    assert.ok(Math.min(...c) > Math.max(...a, ...b), `C ${c} starts after A ${a} and B ${b}`);
    assert.equal(
      fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'),
      ORIGINAL.replace('two\n', 'TWO (A)\n')
        .replace('three\n', 'three (C)\n')
        .replace('seven\n', 'SEVEN (B)\n'),
    );
    const results = taskResults(ws, run.stderr);
    assert.deepEqual(
      ['Top', 'Bottom', 'Join'].map((d) => results.get(d)?.result.status),
      ['success', 'success', 'success'],
    );
  });

  test('an unknown id, a cycle and a task waiting for itself are refused with a clear error; nothing runs', async () => {
    const ws = repo();
    const start = emu.requests.length;
    emu.setScenario({
      replies: [
        tasks(
          { description: 'X', prompt: 'CHILD-X', id: 'X', after: ['Y'] },
          { description: 'Y', prompt: 'CHILD-Y', id: 'Y', after: ['X'] },
          { description: 'Z', prompt: 'CHILD-Z', after: ['nope'] },
          { description: 'S', prompt: 'CHILD-S', id: 'S', after: ['S'] },
        ),
        answer('refused'),
      ],
    });
    const run = await runKeel(['run', '--workspace', ws, 'bad graph'], env());
    assert.equal(run.code, 0, run.stderr);
    const results = taskResults(ws, run.stderr);
    assert.equal(results.size, 4);
    const [x, y, z, s] = ['X', 'Y', 'Z', 'S'].map((d) => {
      const r = results.get(d)!.result;
      assert.equal(r.status, 'error', d);
      return `${r.error?.code}: ${r.error?.message}`;
    });
    // The last of a cycle to start sees it; the other is refused because of it.
    assert.ok(
      [x, y].some((t) => /INVALID_PARAM: .*cycle: "(X|Y)" → "(X|Y)" → "(X|Y)"/.test(t!)),
      `a cycle is named:\n${x}\n${y}`,
    );
    assert.ok(
      [x, y].every((t) => /cycle/.test(t!)),
      `both mention the cycle:\n${x}\n${y}`,
    );
    assert.match(z!, /INVALID_PARAM: .*unknown task id\(s\): "nope"/);
    assert.match(s!, /INVALID_PARAM: .*cannot wait for itself/);
    for (const m of ['CHILD-X', 'CHILD-Y', 'CHILD-Z', 'CHILD-S'])
      assert.deepEqual(requestsOf(m, start), [], `${m} never ran`);
  });

  test('a conflicted dependency refuses its dependent: it never runs on the wrong base', async () => {
    const ws = repo();
    const start = emu.requests.length;
    emu.setScenario({
      replies: [
        tasks(
          { description: 'First', prompt: 'CHILD-A: edit', mode: 'writer', id: 'A' },
          { description: 'Second', prompt: 'CHILD-B: edit', mode: 'writer', id: 'B' },
          { description: 'After', prompt: 'CHILD-C: edit', mode: 'writer', id: 'C', after: ['A', 'B'] },
        ),
        answer('done'),
      ],
      threads: [
        editThread('CHILD-A', 'two\n', 'TWO by A\n'),
        // B changes the same line and is merged second: a conflict, left unapplied.
        editThread('CHILD-B', 'two\n', 'TWO by B\n', 600),
        editThread('CHILD-C', 'one\n', 'ONE by C\n'),
      ],
    });
    const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'conflict'], env());
    assert.equal(run.code, 0, run.stderr);
    assert.equal(fs.readFileSync(path.join(ws, 'f.txt'), 'utf8'), ORIGINAL.replace('two\n', 'TWO by A\n'));
    assert.deepEqual(requestsOf('CHILD-C', start), [], 'C never started');
    const results = taskResults(ws, run.stderr);
    const bResult = results.get('Second');
    const cResult = results.get('After');
    assert.match(bResult!.result.text, /NOT applied/);
    assert.equal(cResult!.result.error?.code, 'CONFLICT');
    assert.match(cResult!.result.error!.message, /waits for task "B".*conflict.*did not run/s);
  });
});
