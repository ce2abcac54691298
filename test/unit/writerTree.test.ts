import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { createWriterTree } from '../../src/agent/subagents/worktree.ts';

// A writer's tree for a workspace that is a sub-folder of its repository, with a link that leads out
// of it: the tree mirrors the sub-folder's place, holds the working-tree state, never goes through a
// link, and leaves nothing behind.

function git(cwd: string, args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], {
    cwd,
    encoding: 'utf8',
  });
}

describe('createWriterTree', () => {
  test('a sub-folder workspace: same relative place, uncommitted and untracked files, ignored ones left out', async () => {
    const top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-wtree-')));
    const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-outside-')));
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'SECRET\n');
    fs.mkdirSync(path.join(top, 'pkg', 'src'), { recursive: true });
    fs.writeFileSync(path.join(top, 'root.txt'), 'not in the workspace\n');
    fs.writeFileSync(path.join(top, 'pkg', 'src', 'a.ts'), 'committed\n');
    fs.mkdirSync(path.join(top, 'pkg', 'lib'));
    fs.writeFileSync(path.join(top, 'pkg', 'lib', 'secret.txt'), 'committed\n');
    fs.writeFileSync(path.join(top, 'pkg', '.gitignore'), 'build/\n');
    git(top, ['init', '-q']);
    git(top, ['add', '-A']);
    git(top, ['commit', '-q', '-m', 'base']);
    const ws = path.join(top, 'pkg');
    fs.writeFileSync(path.join(ws, 'src', 'a.ts'), 'uncommitted\n');
    fs.writeFileSync(path.join(ws, 'new.txt'), 'untracked\n');
    fs.mkdirSync(path.join(ws, 'build'));
    fs.writeFileSync(path.join(ws, 'build', 'out.js'), 'ignored\n');
    // A tracked folder replaced by a link to a folder outside: nothing is copied through it.
    fs.rmSync(path.join(ws, 'lib'), { recursive: true });
    fs.symlinkSync(outside, path.join(ws, 'lib'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'lnk'));

    const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-wtmp-')));
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      const tree = await createWriterTree(ws);
      assert.ok(tree.root.endsWith(`${path.sep}pkg`), tree.root);
      assert.equal(fs.readFileSync(path.join(tree.root, 'src', 'a.ts'), 'utf8'), 'uncommitted\n');
      assert.equal(fs.readFileSync(path.join(tree.root, 'new.txt'), 'utf8'), 'untracked\n');
      assert.ok(!fs.existsSync(path.join(tree.root, 'build')), 'ignored files are not copied');
      assert.ok(!fs.existsSync(path.join(tree.root, '..', 'root.txt')), 'outside the workspace: not copied');
      // The tracked lib/secret.txt is not read through the link; the link itself comes as a link.
      assert.ok(fs.lstatSync(path.join(tree.root, 'lib')).isSymbolicLink(), 'never copied through a link');
      assert.ok(fs.lstatSync(path.join(tree.baseRoot, 'lib')).isSymbolicLink());
      assert.equal(
        fs.readlinkSync(path.join(tree.root, 'lnk')),
        path.join(outside, 'secret.txt'),
        'a link stays a link',
      );
      assert.equal(fs.readFileSync(path.join(tree.baseRoot, 'src', 'a.ts'), 'utf8'), 'uncommitted\n');
      assert.deepEqual([...tree.files].sort(), ['.gitignore', 'lib', 'lnk', 'new.txt', 'src/a.ts']);
      assert.match(git(top, ['worktree', 'list']), new RegExp(tree.id));
      await tree.remove();
      assert.deepEqual(fs.readdirSync(path.join(tmp, 'keel-writers')), []);
      assert.equal(git(top, ['worktree', 'list', '--porcelain']).match(/^worktree /gm)?.length, 1);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });
});
