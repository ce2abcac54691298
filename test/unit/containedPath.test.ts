import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  appendContainedFile,
  type ContainedPathCode,
  ContainedPathError,
  containedTarget,
  containRecordedPath,
  MAX_RECORDED_PATH,
  removeContainedFile,
  writeContainedFile,
} from '../../src/agent/safety/paths/containedPath.ts';

// The one helper every write from recorded data goes through: a table of escapes (lexical and on
// disk), then the write functions, including a folder swapped for a link in the middle of a write.

const made: string[] = [];
after(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

/** base/ws (the root, with sub/a.txt, file.txt, dir/, .keel/), base/ws2, base/outside (with a.txt). */
function layout() {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-contain-')));
  made.push(base);
  const ws = path.join(base, 'ws');
  const ws2 = path.join(base, 'ws2');
  const outside = path.join(base, 'outside');
  for (const d of [ws, ws2, outside, path.join(ws, 'sub'), path.join(ws, 'dir'), path.join(ws, '.keel')])
    fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(ws, 'sub', 'a.txt'), 'a\n');
  fs.writeFileSync(path.join(ws, 'file.txt'), 'f\n');
  fs.writeFileSync(path.join(outside, 'a.txt'), 'outside\n');
  fs.symlinkSync(outside, path.join(ws, 'out-link'));
  fs.symlinkSync(path.join(ws, 'sub'), path.join(ws, 'in-link')); // a link that stays inside: still refused
  fs.symlinkSync(path.join(outside, 'a.txt'), path.join(ws, 'file-link.txt'));
  fs.mkdirSync(path.join(ws, 'deep', 'er'), { recursive: true });
  fs.symlinkSync(outside, path.join(ws, 'deep', 'er', 'link'));
  return { base, ws, ws2, outside };
}

describe('containRecordedPath', () => {
  const { ws, ws2, outside } = layout();
  const roots = [ws, ws2];
  const exclude = [path.join(ws, '.keel')];
  const cases: [string, string, ContainedPathCode | 'ok'][] = [
    ['plain relative', 'sub/a.txt', 'ok'],
    ['a file that does not exist yet, in folders that do not either', 'new/dir/x.txt', 'ok'],
    ['absolute inside the first root', path.join(ws, 'sub', 'a.txt'), 'ok'],
    ['absolute inside the second root', path.join(ws2, 'x.txt'), 'ok'],
    ['.. out of the root', '../outside/a.txt', 'ESCAPES_ROOT'],
    ['.. after a folder', 'sub/../../outside/a.txt', 'ESCAPES_ROOT'],
    ['.. that would stay inside (never recorded)', 'sub/../file.txt', 'ESCAPES_ROOT'],
    ['absolute outside every root', path.join(outside, 'a.txt'), 'OUTSIDE_ROOTS'],
    ['absolute system file', '/etc/passwd', 'OUTSIDE_ROOTS'],
    ['absolute with .. back inside', `${ws}/../ws/file.txt`, 'ESCAPES_ROOT'],
    ['the root itself', ws, 'OUTSIDE_ROOTS'],
    ['NUL byte', 'sub/a.txt\0.png', 'INVALID_PATH'],
    ['empty', '', 'INVALID_PATH'],
    ['too long', 'a/'.repeat(MAX_RECORDED_PATH), 'INVALID_PATH'],
    ['empty segment', 'sub//a.txt', 'INVALID_PATH'],
    ['dot segment', './sub/a.txt', 'INVALID_PATH'],
    ['symlinked parent to outside', 'out-link/a.txt', 'SYMLINK'],
    ['symlinked parent to outside, new file', 'out-link/new.txt', 'SYMLINK'],
    ['symlinked parent that stays inside', 'in-link/a.txt', 'SYMLINK'],
    ['symlinked folder deep down', 'deep/er/link/a.txt', 'SYMLINK'],
    ['symlinked target', 'file-link.txt', 'SYMLINK'],
    ['the target is a link to a folder', 'out-link', 'SYMLINK'],
    ['a file on the way', 'file.txt/x', 'NOT_A_DIRECTORY'],
    ['the target is a folder', 'dir', 'NOT_A_FILE'],
    ["Keel's state folder", '.keel/checkpoints/x/changes.jsonl', 'EXCLUDED'],
    ["Keel's state folder, absolute", path.join(ws, '.keel', 'x'), 'EXCLUDED'],
  ];
  for (const [name, recorded, expected] of cases) {
    test(`${name}: ${expected}`, () => {
      const result = containRecordedPath(roots, recorded, { exclude });
      if (expected === 'ok') {
        assert.ok(result.ok, result.ok ? '' : result.error.message);
        assert.ok(result.target.abs.startsWith(result.target.root + path.sep));
        assert.equal(result.target.abs, path.join(result.target.root, ...result.target.rel.split('/')));
      } else {
        assert.ok(!result.ok, `expected ${expected}`);
        assert.equal(result.error.code, expected, result.error.message);
        assert.ok(result.error instanceof ContainedPathError);
        assert.equal(result.error.recorded, recorded);
      }
    });
  }

  test('a symlink is described with where it points', () => {
    const result = containRecordedPath(ws, 'out-link/a.txt');
    assert.ok(!result.ok);
    assert.match(result.error.message, /out-link is a symlink now \(to .*outside\)/);
  });

  test('onDisk: false checks the path on its face only (links are a write-time matter)', () => {
    assert.ok(containRecordedPath(ws, 'out-link/a.txt', { onDisk: false }).ok);
    assert.equal(containRecordedPath(ws, '../x', { onDisk: false }).ok, false);
  });

  test('a root named through a symlink is resolved: the root itself is trusted', () => {
    const alias = path.join(path.dirname(ws), 'alias');
    fs.symlinkSync(ws, alias);
    const result = containRecordedPath(alias, path.join(alias, 'sub', 'a.txt'));
    assert.ok(result.ok);
    assert.equal(result.target.abs, path.join(ws, 'sub', 'a.txt'));
    assert.ok(containRecordedPath(alias, path.join(ws, 'sub', 'a.txt')).ok, 'the real spelling too');
  });

  test('no root: NO_ROOT', () => {
    const result = containRecordedPath([], 'a.txt');
    assert.ok(!result.ok);
    assert.equal(result.error.code, 'NO_ROOT');
  });
});

describe('writing, appending and removing a contained target', () => {
  test('writes through new folders, with the mode, and leaves no temp file', () => {
    const { ws } = layout();
    writeContainedFile(containedTarget(ws, 'new/dir/x.sh'), Buffer.from('#!/bin/sh\n'), { mode: 0o755 });
    const file = path.join(ws, 'new', 'dir', 'x.sh');
    assert.equal(fs.readFileSync(file, 'utf8'), '#!/bin/sh\n');
    assert.equal(fs.statSync(file).mode & 0o777, 0o755);
    assert.deepEqual(fs.readdirSync(path.dirname(file)), ['x.sh']);
    writeContainedFile(containedTarget(ws, 'sub/a.txt'), Buffer.from('replaced\n'));
    assert.equal(fs.readFileSync(path.join(ws, 'sub', 'a.txt'), 'utf8'), 'replaced\n');
  });

  test('a folder swapped for a link after the check is caught right before the write', () => {
    const { ws, outside } = layout();
    const target = containedTarget(ws, 'sub/a.txt');
    fs.rmSync(path.join(ws, 'sub'), { recursive: true });
    fs.symlinkSync(outside, path.join(ws, 'sub'));
    assert.throws(() => writeContainedFile(target, Buffer.from('pwned\n')), { code: 'SYMLINK' });
    assert.throws(() => removeContainedFile(target), { code: 'SYMLINK' });
    assert.throws(() => appendContainedFile(target, 'pwned\n'), { code: 'SYMLINK' });
    assert.equal(fs.readFileSync(path.join(outside, 'a.txt'), 'utf8'), 'outside\n');
  });

  test('a folder swapped for a link DURING the write: the temp file is caught, removed, nothing renamed', () => {
    const { ws, outside } = layout();
    const target = containedTarget(ws, 'sub/a.txt');
    const real = createRequire(import.meta.url)('node:fs') as typeof fs;
    const open = real.openSync;
    real.openSync = ((p: fs.PathLike, ...rest: never[]) => {
      if (String(p).includes('.keel-')) {
        // The attacker wins the race between the check and the open.
        fs.renameSync(path.join(ws, 'sub'), path.join(ws, 'sub-moved'));
        fs.symlinkSync(outside, path.join(ws, 'sub'));
      }
      return (open as (...a: unknown[]) => number)(p, ...rest);
    }) as typeof fs.openSync;
    syncBuiltinESMExports();
    try {
      assert.throws(() => writeContainedFile(target, Buffer.from('pwned\n')), ContainedPathError);
    } finally {
      real.openSync = open;
      syncBuiltinESMExports();
    }
    assert.equal(fs.readFileSync(path.join(outside, 'a.txt'), 'utf8'), 'outside\n');
    assert.deepEqual(fs.readdirSync(outside), ['a.txt'], 'the temp file written through the link is gone');
  });

  test('a link at the target itself is never written through, and removing it is refused', () => {
    const { ws, outside } = layout();
    const recorded = 'file-link.txt';
    assert.throws(() => containedTarget(ws, recorded), { code: 'SYMLINK' });
    // Checked earlier (onDisk: false), written now: the write re-checks.
    const target = containedTarget(ws, recorded, { onDisk: false });
    assert.throws(() => writeContainedFile(target, Buffer.from('pwned\n')), { code: 'SYMLINK' });
    assert.throws(() => removeContainedFile(target), { code: 'SYMLINK' });
    assert.equal(fs.readFileSync(path.join(outside, 'a.txt'), 'utf8'), 'outside\n');
    assert.ok(fs.lstatSync(path.join(ws, recorded)).isSymbolicLink());
  });

  test('removes a regular file, and a missing one is fine', () => {
    const { ws } = layout();
    removeContainedFile(containedTarget(ws, 'sub/a.txt'));
    assert.ok(!fs.existsSync(path.join(ws, 'sub', 'a.txt')));
    removeContainedFile(containedTarget(ws, 'sub/a.txt'));
    removeContainedFile(containedTarget(ws, 'nowhere/x.txt'));
    assert.ok(!fs.existsSync(path.join(ws, 'nowhere')), 'removing creates no folders');
  });

  test('appends, creating the file and its folders', () => {
    const { ws } = layout();
    const target = containedTarget(ws, 'keel-task/sessions.jsonl');
    appendContainedFile(target, 'one\n');
    appendContainedFile(target, 'two\n');
    assert.equal(fs.readFileSync(path.join(ws, 'keel-task', 'sessions.jsonl'), 'utf8'), 'one\ntwo\n');
  });
});

describe('task files go through the same helper', () => {
  test('a planted keel-task -> outside link, or progress.md -> a file outside, is refused', async () => {
    const { appendLine, appendProgress, read, TaskError } = await import('../../src/agent/task/files.ts');
    const { ws, outside } = layout();
    fs.symlinkSync(outside, path.join(ws, 'keel-task'));
    assert.throws(
      () => appendLine(ws, 'keel-task/sessions.jsonl', { type: 'start', session: 's', ts: 1 }),
      /symlink/,
    );
    assert.throws(() => appendProgress(ws, ['- pwned']), TaskError);
    assert.throws(() => read(ws, 'keel-task/feature_list.json'), TaskError);
    fs.rmSync(path.join(ws, 'keel-task'));
    fs.mkdirSync(path.join(ws, 'keel-task'));
    fs.symlinkSync(path.join(outside, 'a.txt'), path.join(ws, 'keel-task', 'progress.md'));
    assert.throws(() => appendProgress(ws, ['- pwned']), /symlink/);
    assert.deepEqual(fs.readdirSync(outside), ['a.txt']);
    assert.equal(fs.readFileSync(path.join(outside, 'a.txt'), 'utf8'), 'outside\n');
    // A real folder works as before.
    fs.rmSync(path.join(ws, 'keel-task', 'progress.md'));
    appendProgress(ws, ['- fine']);
    assert.match(
      fs.readFileSync(path.join(ws, 'keel-task', 'progress.md'), 'utf8'),
      /# Progress\n\n- fine\n/,
    );
  });
});
