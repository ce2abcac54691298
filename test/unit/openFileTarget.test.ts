import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { resolveWorkspaceFile } from '../../src/extension/openFileTarget.ts';

// A file link in the chat (model output, sent by the webview) opens a file only inside the workspace.

function fixture(): { root: string; outside: string } {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-open-'));
  const root = path.join(base, 'ws');
  const outside = path.join(base, 'secret');
  fs.mkdirSync(path.join(root, 'src'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(root, 'src', 'greet.js'), 'export function greet() {}\n');
  fs.writeFileSync(path.join(outside, 'key.txt'), 'secret\n');
  fs.symlinkSync(outside, path.join(root, 'link-out'));
  fs.symlinkSync(path.join(root, 'src'), path.join(root, 'link-in'));
  return { root, outside };
}

test('a relative or absolute path to a file inside the workspace is opened', () => {
  const { root } = fixture();
  const want = path.join(root, 'src', 'greet.js');
  assert.deepEqual(resolveWorkspaceFile([root], 'src/greet.js'), { ok: true, path: want });
  assert.deepEqual(resolveWorkspaceFile([root], './src/greet.js'), { ok: true, path: want });
  assert.deepEqual(resolveWorkspaceFile([root], want), { ok: true, path: want });
  // A link that stays inside the workspace is fine (opening is read-only).
  assert.equal(resolveWorkspaceFile([root], 'link-in/greet.js').ok, true);
});

test('paths outside the workspace are refused, through `..`, an absolute path or a symlink', () => {
  const { root, outside } = fixture();
  for (const p of ['../secret/key.txt', path.join(outside, 'key.txt'), 'link-out/key.txt', '/etc/passwd']) {
    assert.deepEqual(resolveWorkspaceFile([root], p), { ok: false, reason: 'outside' }, p);
  }
});

test('missing files, folders and malformed paths are not opened', () => {
  const { root } = fixture();
  assert.deepEqual(resolveWorkspaceFile([root], 'src/nope.js'), { ok: false, reason: 'missing' });
  assert.deepEqual(resolveWorkspaceFile([root], 'src'), { ok: false, reason: 'missing' });
  assert.deepEqual(resolveWorkspaceFile([root], 'a\0b'), { ok: false, reason: 'invalid' });
  assert.deepEqual(resolveWorkspaceFile([], 'src/greet.js'), { ok: false, reason: 'outside' });
});

test('several folders: a link named `<folderName>/<rel>` (as Keel shows them) opens the later folder’s file', () => {
  const { root, outside } = fixture();
  const second = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-open-second-')));
  const name = path.basename(second);
  fs.mkdirSync(path.join(second, 'src'));
  fs.writeFileSync(path.join(second, 'src', 'greet.js'), 'second\n');
  const roots = [fs.realpathSync(root), second];
  assert.deepEqual(resolveWorkspaceFile(roots, `${name}/src/greet.js`), {
    ok: true,
    path: path.join(second, 'src', 'greet.js'),
  });
  assert.deepEqual(resolveWorkspaceFile(roots, 'src/greet.js'), {
    ok: true,
    path: path.join(roots[0]!, 'src', 'greet.js'),
  });
  const climb = path.relative(second, path.join(outside, 'key.txt'));
  assert.equal(resolveWorkspaceFile(roots, `${name}/${climb}`).ok, false);
});
