import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { createPathGuard } from '../../src/agent/safety/pathGuard.ts';

// The guard by class of escape: relative, absolute, symlinks (before and after '..'), dangling links,
// home, URLs, long and unicode names. Each must end OUTSIDE_WORKSPACE (or INVALID_PARAM when malformed).

function fixture() {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-guard-')));
  const ws = path.join(base, 'ws');
  const out = path.join(base, 'outside');
  fs.mkdirSync(path.join(ws, 'sub', 'deep'), { recursive: true });
  fs.mkdirSync(path.join(out, 'nested'), { recursive: true });
  fs.writeFileSync(path.join(out, 'secret.txt'), 'SECRET');
  fs.symlinkSync(out, path.join(ws, 'outlink'));
  fs.symlinkSync(path.join(out, 'nested'), path.join(ws, 'sub', 'deeplink'));
  fs.symlinkSync(path.join(out, 'not-yet.txt'), path.join(ws, 'dangling'));
  fs.symlinkSync('../..', path.join(ws, 'sub', 'deep', 'up'));
  fs.symlinkSync('sub', path.join(ws, 'inlink'));
  fs.symlinkSync('loop2', path.join(ws, 'loop1'));
  fs.symlinkSync('loop1', path.join(ws, 'loop2'));
  return { ws, out, guard: createPathGuard({ roots: [ws], stateDir: path.join(ws, '.keel') }) };
}

test('escapes of every class end OUTSIDE_WORKSPACE', () => {
  const { ws, out, guard } = fixture();
  const attempts = [
    '..',
    '../outside/secret.txt',
    'sub/../../outside/secret.txt',
    './../outside',
    `${out}/secret.txt`,
    '/etc/passwd',
    'outlink/secret.txt',
    'outlink',
    'sub/deeplink/../secret.txt',
    'outlink/../outside/secret.txt',
    'dangling',
    'sub/deep/up/../outside/secret.txt',
    '~/.bashrc',
    '~',
    `file://${out}/secret.txt`,
    `${ws}/../outside/secret.txt`,
    `${ws}/outlink/secret.txt`,
    `sub/${'x/'.repeat(40)}${'../'.repeat(43)}outside`,
    `outlink/${'ü'.repeat(100)}/../secret.txt`,
  ];
  for (const attempt of attempts) {
    const r = guard.resolve(attempt);
    assert.equal(r.ok, false, `${attempt} must be refused`);
    if (!r.ok) assert.equal(r.error.code, 'OUTSIDE_WORKSPACE', `${attempt} → ${r.error.code}`);
  }
  // A long component after an escape is still an escape, not merely "too long".
  const long = guard.resolve(`outlink/${'a'.repeat(300)}/../secret.txt`);
  assert.equal(long.ok ? 'ok' : long.error.code, 'OUTSIDE_WORKSPACE');
});

test('ordinary paths, including odd-looking ones, stay inside and resolve canonically', () => {
  const { ws, guard } = fixture();
  const inside: [string, string][] = [
    ['a.txt', 'a.txt'],
    ['sub/../a.txt', 'a.txt'],
    ['inlink/x.ts', 'sub/x.ts'],
    ['%2e%2e/x', '%2e%2e/x'],
    ['..foo', '..foo'],
    ['sub/deep/up/a.txt', 'a.txt'],
    ['日本語/ファイル.md', '日本語/ファイル.md'],
    [`${ws}/b.txt`, 'b.txt'],
    ['.keel/tool-output/x.txt', '.keel/tool-output/x.txt'],
  ];
  for (const [input, display] of inside) {
    const r = guard.resolve(input);
    assert.ok(r.ok, `${input} should be inside: ${JSON.stringify(r)}`);
    if (r.ok) assert.equal(r.display, display);
  }
});

test('malformed input is INVALID_PARAM with a clear message', () => {
  const { guard } = fixture();
  for (const bad of ['', 'a\0b', 'loop1/x']) {
    const r = guard.resolve(bad);
    assert.equal(r.ok, false);
    if (!r.ok) assert.equal(r.error.code, 'INVALID_PARAM', bad);
  }
});
