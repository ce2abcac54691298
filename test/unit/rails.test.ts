import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// One scripted session per rail, through the built `keel run`, against the emulator.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const tool = (
  name: string,
  input: Record<string, unknown>,
  expect?: ScriptedReply['expect'],
): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
  ...(expect ? { expect } : {}),
});
const say = (text: string, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'text', text }],
  ...(expect ? { expect } : {}),
});

interface ToolEnd {
  type: 'tool_end';
  name: string;
  result: { status: string; error?: { code: string } };
}
function toolEnds(ws: string, stderr: string): ToolEnd[] {
  return readLog(ws, sessionIdFrom(stderr)).filter((e) => e.type === 'tool_end') as unknown as ToolEnd[];
}
const codes = (ends: ToolEnd[]) => ends.map((e) => e.result.error?.code ?? e.result.status);

describe('edit rails through keel run', () => {
  test('edit without a read → NOT_READ, then the model reads and the edit lands', async () => {
    const ws = tempWorkspace({ 'app.js': 'const port = 3000;\n' });
    emu.setScenario({
      replies: [
        tool('Edit', { path: 'app.js', old_string: '3000', new_string: '8080' }),
        tool('Read', { path: 'app.js' }, { toolResultContains: 'NOT_READ', toolResultIsError: true }),
        tool('Edit', { path: 'app.js', old_string: '3000', new_string: '8080' }),
        say('Port changed.', { toolResultIsError: false }),
      ],
    });
    const run = await runKeel(['run', '--workspace', ws, 'use port 8080'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(codes(toolEnds(ws, run.stderr)), ['NOT_READ', 'success', 'success']);
    assert.equal(fs.readFileSync(path.join(ws, 'app.js'), 'utf8'), 'const port = 8080;\n');
  });

  test('an external change between read and edit → CONFLICT, and the change is kept', async () => {
    const ws = tempWorkspace({ 'notes.txt': 'alpha\nbeta\n' });
    const file = path.join(ws, 'notes.txt');
    emu.setScenario({
      respond: (_req, index) => {
        if (index === 0) return tool('Read', { path: 'notes.txt' });
        if (index === 1) {
          // The user edits the file while the model is thinking.
          fs.writeFileSync(file, 'alpha\nbeta\nuser line\n');
          return tool('Edit', { path: 'notes.txt', old_string: 'beta', new_string: 'BETA' });
        }
        return say('I will re-read first.');
      },
    });
    const run = await runKeel(['run', '--workspace', ws, 'uppercase beta'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(codes(toolEnds(ws, run.stderr)), ['success', 'CONFLICT']);
    assert.equal(
      fs.readFileSync(file, 'utf8'),
      'alpha\nbeta\nuser line\n',
      'the external change is not lost',
    );
  });

  test('ambiguous and missing matches are reported, and the file is untouched', async () => {
    const original = 'x = 1\ny = 2\nx = 1\n';
    const ws = tempWorkspace({ 'm.py': original });
    emu.setScenario({
      replies: [
        tool('Read', { path: 'm.py' }),
        tool('Edit', { path: 'm.py', old_string: 'x = 1', new_string: 'x = 3' }),
        tool(
          'Edit',
          { path: 'm.py', old_string: 'z = 9', new_string: 'z = 0' },
          { toolResultContains: 'AMBIGUOUS_MATCH' },
        ),
        say('Both failed as expected.', { toolResultContains: 'NO_MATCH' }),
      ],
    });
    const run = await runKeel(['run', '--workspace', ws, 'edit'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(codes(toolEnds(ws, run.stderr)), ['success', 'AMBIGUOUS_MATCH', 'NO_MATCH']);
    assert.equal(fs.readFileSync(path.join(ws, 'm.py'), 'utf8'), original);
  });

  test('MultiEdit with a failing second edit leaves the file byte-identical', async () => {
    const original = '\uFEFFline one\r\nline two\r\n';
    const ws = tempWorkspace({ 'w.txt': original });
    emu.setScenario({
      replies: [
        tool('Read', { path: 'w.txt' }),
        tool('MultiEdit', {
          path: 'w.txt',
          edits: [
            { old_string: 'line one', new_string: 'LINE ONE' },
            { old_string: 'no such text', new_string: 'x' },
          ],
        }),
        say('Nothing was applied.', { toolResultIsError: true }),
      ],
    });
    const run = await runKeel(['run', '--workspace', ws, 'edit'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(fs.readFileSync(path.join(ws, 'w.txt')), Buffer.from(original));
  });
});

describe('loop rails through keel run', () => {
  test('30 identical calls execute at most 20 and the run stops with a clear message', async () => {
    const ws = tempWorkspace({ 'same.txt': 'unchanging\n' });
    emu.setScenario({ replies: Array.from({ length: 40 }, () => tool('Read', { path: 'same.txt' })) });
    const run = await runKeel(['run', '--workspace', ws, '--max-turns', '40', 'poll'], cliEnv(emu.url));
    const ends = toolEnds(ws, run.stderr);
    const executed = ends.filter((e) => e.result.error?.code !== 'LOOP_DETECTED');
    assert.ok(executed.length <= 20, `executed ${executed.length}`);
    assert.ok(ends.some((e) => e.result.error?.code === 'LOOP_DETECTED'));
    assert.ok(ends.length <= 30, `the run was stopped by the breaker (${ends.length} calls)`);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /stopped/i);
  });

  test('A↔B ping-pong is blocked', async () => {
    const ws = tempWorkspace({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    emu.setScenario({
      replies: Array.from({ length: 40 }, (_, i) => tool('Read', { path: i % 2 === 0 ? 'a.txt' : 'b.txt' })),
    });
    const run = await runKeel(['run', '--workspace', ws, '--max-turns', '40', 'compare'], cliEnv(emu.url));
    const ends = toolEnds(ws, run.stderr);
    assert.ok(
      ends.some((e) => e.result.error?.code === 'LOOP_DETECTED'),
      'ping-pong is detected and blocked',
    );
    const executed = ends.filter((e) => e.result.error?.code !== 'LOOP_DETECTED');
    assert.ok(executed.length <= 20, `executed ${executed.length}`);
  });
});

/**
 * Makes a directory refuse new files, for root too (root ignores mode bits, so chattr +i is tried as
 * well). Returns an undo function, or undefined when this machine cannot lock it.
 */
function lockDirectory(dir: string): (() => void) | undefined {
  fs.chmodSync(dir, 0o555);
  const chattr = spawnSync('chattr', ['+i', dir], { stdio: 'ignore' });
  const unlock = () => {
    if (chattr.status === 0) spawnSync('chattr', ['-i', dir], { stdio: 'ignore' });
    fs.chmodSync(dir, 0o755);
  };
  try {
    fs.writeFileSync(path.join(dir, '.probe'), 'x');
    fs.rmSync(path.join(dir, '.probe'));
    unlock();
    return undefined;
  } catch {
    return unlock;
  }
}

describe('circuit breaker rail through keel run', () => {
  test('3 failures open the circuit (CIRCUIT_OPEN), after the cooldown a trial call closes it again', async (t) => {
    const ws = tempWorkspace({ 'locked/.keep': '' });
    const locked = path.join(ws, 'locked');
    const unlock = lockDirectory(locked);
    if (!unlock) {
      t.skip('cannot make a directory unwritable on this machine');
      return;
    }
    const cooldownMs = 1500;
    const write = tool('Write', { path: 'locked/out.txt', content: 'hello\n' });
    try {
      emu.setScenario({
        respond: (_req, index) => {
          if (index <= 3) return write; // 3 real failures, then the open circuit answers
          if (index === 4) {
            // The cause is fixed while the circuit is open; this reply arrives after the cooldown.
            unlock();
            return { ...write, fault: { type: 'slow', delayMs: cooldownMs + 700 } };
          }
          if (index === 5) return tool('Write', { path: 'locked/second.txt', content: 'again\n' });
          return say('Recovered.');
        },
      });
      const run = await runKeel(
        ['run', '--workspace', ws, '--max-turns', '10', 'write the file'],
        cliEnv(emu.url, { KEEL_CIRCUIT_COOLDOWN_MS: String(cooldownMs) }),
      );
      assert.equal(run.code, 0, run.stderr);
      const ends = toolEnds(ws, run.stderr);
      assert.deepEqual(codes(ends), [
        'ACCESS_DENIED',
        'ACCESS_DENIED',
        'ACCESS_DENIED',
        'CIRCUIT_OPEN',
        'success',
        'success',
      ]);
      assert.equal(fs.readFileSync(path.join(locked, 'out.txt'), 'utf8'), 'hello\n');
      assert.equal(fs.readFileSync(path.join(locked, 'second.txt'), 'utf8'), 'again\n');
    } finally {
      unlock();
    }
  });
});
