import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { climbsOut } from '../../src/agent/safety/paths/pathReadings.ts';

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
    // A missing component cancelled by '..' must not hide the link after it (this once read through it).
    'missing/../outlink/secret.txt',
    'sub/missing/x/../../../outlink',
    'sub/a.txt/../../outlink/secret.txt',
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
    ['sub/%2e%2e/x', 'sub/%2e%2e/x'],
    ['a%20b.txt', 'a%20b.txt'],
    ['sub/..\\x', 'sub/..\\x'],
    ['missing/../a.txt', 'a.txt'],
    ['ünï/ﬁle．txt', 'ünï/ﬁle．txt'],
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

test('every reading of a path is judged: encodings, Unicode lookalikes, Windows forms, NUL', () => {
  const { ws, out, guard } = fixture();
  const up = '../outside/secret.txt';
  const readings = [
    up.replace(/\./g, '%2e'),
    up.replace(/\//g, '%2f'),
    up.replace(/\./g, '%252e'),
    up.replace(/\./g, '%c0%ae'),
    up.replace(/\//g, '\\'),
    up.replace(/\./g, '\uff0e'),
    up.replace(/\./g, '\u2024'),
    up.replace('..', '\u2025'),
    up.replace('/', '\uff0f'),
    up.replace('..', '.\u200b.'),
    up.replace('..', '.. '),
    up.replace('..', '....'),
    up.replace('..', '..\n'),
    `${up}\0.txt`,
    up.replace('/', '\0/'),
    `${up}%00.txt`,
    'C:\\Windows\\win.ini',
    'c:/x',
    '\\\\server\\share\\x',
    '//server/share/x',
    'FILE:///etc/passwd',
    'file://evil-host/etc/passwd',
    `file://${ws}/%2e%2e/outside/secret.txt`,
    'file:../outside/secret.txt',
    '~root/.ssh/id_rsa',
    '%USERPROFILE%\\x',
    `${'x'.repeat(5000)}/../../outside`,
    `${out}/\u202esecret.txt`,
  ];
  for (const attempt of readings) {
    const r = guard.resolve(attempt);
    assert.equal(r.ok ? 'ok' : r.error.code, 'OUTSIDE_WORKSPACE', JSON.stringify(attempt));
  }
});

test('a .keel that is a symlink does not put its target inside the allowed area', () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-guard-')));
  const ws = path.join(base, 'ws');
  const out = path.join(base, 'outside');
  fs.mkdirSync(ws);
  fs.mkdirSync(out);
  fs.writeFileSync(path.join(out, 'secret.txt'), 'SECRET');
  fs.symlinkSync('../outside', path.join(ws, '.keel'));
  const guard = createPathGuard({ roots: [ws], stateDir: path.join(ws, '.keel') });
  for (const attempt of [path.join(out, 'secret.txt'), '.keel/secret.txt', '.keel', out]) {
    const r = guard.resolve(attempt);
    assert.equal(r.ok ? 'ok' : r.error.code, 'OUTSIDE_WORKSPACE', attempt);
  }
  assert.equal(guard.contains(path.join(out, 'secret.txt')), false);
  fs.rmSync(base, { recursive: true, force: true });
});

test('climbsOut judges globs by every expansion, extglob and escape', () => {
  for (const p of [
    '../*',
    '{..,x}/*',
    '{x,{y,..}}/*',
    '@(..)/*',
    '+(..)/*',
    '[.][.]/*',
    '\\.\\./*',
    '**/../../x',
    '/etc/*',
    '{/etc,src}/*',
    '~/*',
    'C:/*',
    '%2e%2e/*',
  ]) {
    assert.equal(climbsOut(p, { glob: true }), true, p);
  }
  for (const p of ['**/*.ts', 'src/{a,b}/*.ts', '!(x)/../*', 'a/../b', '*.{js,ts}', '[ab].txt', '**/..foo']) {
    assert.equal(climbsOut(p, { glob: true }), false, p);
  }
  assert.equal(climbsOut('../x', { glob: true, depth: 1 }), false, 'one level up from src stays inside');
  assert.equal(climbsOut('../../x', { glob: true, depth: 1 }), true);
});
