import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// `keel restore` writes only inside the workspace, whatever the checkpoint records say and whatever
// happened to the folders since they were recorded (security hole 5). Through the BUILT CLI, after
// a real session against the emulator.

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

interface Setup {
  /** Holds the workspace and, next to it, what an escape would reach. */
  readonly base: string;
  readonly ws: string;
  readonly outside: string;
  readonly id: string;
}

/** A git workspace and one prompt that edits `sub/a.txt` and creates `sub/new.txt`. */
async function session(): Promise<Setup> {
  const base = tempWorkspace();
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  fs.mkdirSync(path.join(ws, 'sub'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(ws, 'sub', 'a.txt'), 'alpha\n');
  execFileSync('git', ['init', '-q'], { cwd: ws });
  emu.setScenario({
    replies: [
      call('Read', { path: 'sub/a.txt' }),
      call('Edit', { path: 'sub/a.txt', old_string: 'alpha', new_string: 'ALPHA' }),
      call('Write', { path: 'sub/new.txt', content: 'new\n' }),
      say('done'),
    ],
  });
  const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'edit it'], cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  assert.equal(fs.readFileSync(path.join(ws, 'sub', 'a.txt'), 'utf8'), 'ALPHA\n');
  return { base, ws, outside, id: sessionIdFrom(run.stderr) };
}

/** Every file under `dir` with its bytes: what "nothing changed out there" is compared with. */
function snapshotTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const abs = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, abs)] = fs.readFileSync(abs, 'utf8');
  }
  return out;
}

describe('keel restore stays inside the workspace', () => {
  test('a folder swapped for a symlink after the checkpoint is refused, nothing written through it', async () => {
    const { ws, outside, id } = await session();
    // The attacker's copy holds exactly what Keel left, so without the check the plan is "ok".
    fs.writeFileSync(path.join(outside, 'a.txt'), 'ALPHA\n');
    fs.writeFileSync(path.join(outside, 'new.txt'), 'new\n');
    fs.rmSync(path.join(ws, 'sub'), { recursive: true });
    fs.symlinkSync(outside, path.join(ws, 'sub'));
    const before = snapshotTree(outside);

    for (const extra of [[], ['--force']]) {
      const run = await runKeel(
        ['restore', id, '--before-prompt', '1', '--workspace', ws, ...extra],
        cliEnv(emu.url),
      );
      assert.equal(run.code, 1, `a refused file makes the exit code 1\n${run.stdout}${run.stderr}`);
      assert.match(run.stdout, /REFUSED\s+sub\/a\.txt — .*symlink/);
      assert.match(run.stdout, /REFUSED\s+sub\/new\.txt — .*symlink/);
      assert.match(run.stderr, /2 file\(s\) were refused/);
      assert.deepEqual(snapshotTree(outside), before, 'nothing outside the workspace changed');
    }
    const json = await runKeel(
      ['restore', id, '--before-prompt', '1', '--workspace', ws, '--json'],
      cliEnv(emu.url),
    );
    assert.equal(json.code, 1);
    const report = JSON.parse(json.stdout) as {
      refused: string[];
      files: { path: string; status: string; applied: boolean }[];
    };
    assert.deepEqual(report.refused, ['sub/a.txt', 'sub/new.txt']);
    assert.ok(report.files.every((f) => f.status === 'refused' && !f.applied));
    assert.deepEqual(snapshotTree(outside), before);
  });

  test('forged change records naming ../outside.txt or an absolute path are skipped, never written', async () => {
    const { base, ws, outside, id } = await session();
    const dir = path.join(ws, '.keel', 'checkpoints', id);
    const payload = Buffer.from('pwned\n');
    const hash = createHash('sha256').update(payload).digest('hex');
    fs.mkdirSync(path.join(dir, 'blobs', hash.slice(0, 2)), { recursive: true });
    fs.writeFileSync(path.join(dir, 'blobs', hash.slice(0, 2), hash), payload);
    const absolute = path.join(outside, 'abs.txt');
    const forged = (seq: number, p: string) =>
      JSON.stringify({
        seq,
        prompt: 1,
        path: p,
        by: 'tool',
        before: { kind: 'bytes', hash },
        after: { kind: 'absent' },
        ts: Date.now(),
      });
    fs.appendFileSync(
      path.join(dir, 'changes.jsonl'),
      `${[forged(100, '../outside.txt'), forged(101, absolute), forged(102, 'sub/../../up.txt')].join('\n')}\n`,
    );

    const run = await runKeel(['restore', id, '--before-prompt', '1', '--workspace', ws], cliEnv(emu.url));
    assert.equal(run.code, 1, `${run.stdout}${run.stderr}`);
    assert.ok(!fs.existsSync(path.join(base, 'outside.txt')), '../outside.txt was not written');
    assert.ok(!fs.existsSync(absolute), 'the absolute path was not written');
    assert.ok(!fs.existsSync(path.join(base, 'up.txt')));
    assert.ok(!fs.existsSync(path.join(ws, ...absolute.split(path.sep))), 'nor re-rooted inside');
    assert.match(run.stdout, /SKIPPED\s+\.\.\/outside\.txt — /);
    assert.match(run.stdout, new RegExp(`SKIPPED\\s+${absolute.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} — `));
    assert.match(run.stderr, /3 recorded change\(s\) were skipped/);
    // The genuine records still restore.
    assert.equal(fs.readFileSync(path.join(ws, 'sub', 'a.txt'), 'utf8'), 'alpha\n');
    assert.ok(!fs.existsSync(path.join(ws, 'sub', 'new.txt')));

    // Undo reads the same records: the forged ones stay out of it too.
    const undo = await runKeel(['restore', id, '--undo', '--workspace', ws], cliEnv(emu.url));
    assert.equal(fs.readFileSync(path.join(ws, 'sub', 'a.txt'), 'utf8'), 'ALPHA\n', undo.stderr);
    assert.ok(!fs.existsSync(path.join(base, 'outside.txt')));
    assert.ok(!fs.existsSync(absolute));
  });

  test('a symlink planted at the file itself is refused, and --undo refuses a swapped folder too', async () => {
    const { ws, outside, id } = await session();
    const restored = await runKeel(
      ['restore', id, '--before-prompt', '1', '--workspace', ws],
      cliEnv(emu.url),
    );
    assert.equal(restored.code, 0, restored.stderr);
    assert.equal(fs.readFileSync(path.join(ws, 'sub', 'a.txt'), 'utf8'), 'alpha\n');
    // Now the folder goes: --undo would write ALPHA back and re-create new.txt through the link.
    fs.writeFileSync(path.join(outside, 'a.txt'), 'alpha\n');
    fs.rmSync(path.join(ws, 'sub'), { recursive: true });
    fs.symlinkSync(outside, path.join(ws, 'sub'));
    const before = snapshotTree(outside);
    const undo = await runKeel(['restore', id, '--undo', '--workspace', ws, '--force'], cliEnv(emu.url));
    assert.equal(undo.code, 1, undo.stdout + undo.stderr);
    assert.match(undo.stdout, /REFUSED\s+sub\/a\.txt/);
    assert.deepEqual(snapshotTree(outside), before);

    // A file replaced by a symlink to a file outside: --force must not write through it.
    fs.rmSync(path.join(ws, 'sub'));
    fs.mkdirSync(path.join(ws, 'sub'));
    const victim = path.join(outside, 'victim.txt');
    fs.writeFileSync(victim, 'ALPHA\n');
    fs.symlinkSync(victim, path.join(ws, 'sub', 'a.txt'));
    const forced = await runKeel(
      ['restore', id, '--before-prompt', '1', '--workspace', ws, '--force'],
      cliEnv(emu.url),
    );
    assert.equal(forced.code, 1, forced.stdout + forced.stderr);
    assert.match(forced.stdout, /REFUSED\s+sub\/a\.txt — .*symlink/);
    assert.equal(fs.readFileSync(victim, 'utf8'), 'ALPHA\n');
    assert.ok(fs.lstatSync(path.join(ws, 'sub', 'a.txt')).isSymbolicLink(), 'the link itself is left alone');
  });
});
