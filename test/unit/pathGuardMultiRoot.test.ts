import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { createPathGuard, workspaceRootNames } from '../../src/agent/safety/paths/pathGuard.ts';

// Several workspace folders: a relative path may start with a later folder's name; display paths
// round-trip to the same file; every escape class still ends OUTSIDE_WORKSPACE from the second folder.

function fixture() {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-roots-')));
  const web = path.join(base, 'web');
  const api = path.join(base, 'api');
  const out = path.join(base, 'outside');
  for (const d of [path.join(web, 'api'), path.join(api, 'src'), out]) fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(web, 'b.txt'), 'web b');
  fs.writeFileSync(path.join(api, 'b.txt'), 'api b');
  fs.writeFileSync(path.join(web, 'api', 'b.txt'), 'web/api b');
  fs.writeFileSync(path.join(out, 'secret.txt'), 'SECRET');
  fs.symlinkSync(out, path.join(api, 'outlink'));
  fs.symlinkSync('../..', path.join(api, 'src', 'up'));
  const guard = createPathGuard({ roots: [web, api], stateDir: path.join(web, '.keel') });
  return { base, web, api, out, guard };
}

const ok = (r: ReturnType<ReturnType<typeof createPathGuard>['resolve']>) => {
  assert.ok(r.ok, JSON.stringify(r));
  return r;
};

test('a folder name selects that folder; otherwise the first; ./name is the first folder’s subfolder', () => {
  const { web, api, guard } = fixture();
  assert.equal(ok(guard.resolve('b.txt')).path, path.join(web, 'b.txt'));
  assert.equal(ok(guard.resolve('api/b.txt')).path, path.join(api, 'b.txt'));
  assert.equal(ok(guard.resolve('api')).path, api);
  assert.equal(ok(guard.resolve('./api/b.txt')).path, path.join(web, 'api', 'b.txt'));
  assert.equal(ok(guard.resolve(path.join(api, 'src'))).path, path.join(api, 'src'));
  assert.equal(ok(guard.resolve('api/b.txt')).root, api);
});

test('display paths are unambiguous and resolve back to the same file', () => {
  const { web, api, guard } = fixture();
  const cases: [string, string][] = [
    [path.join(web, 'b.txt'), 'b.txt'],
    [path.join(api, 'b.txt'), 'api/b.txt'],
    [path.join(web, 'api', 'b.txt'), './api/b.txt'],
    [api, 'api'],
  ];
  for (const [abs, shown] of cases) {
    assert.equal(guard.display(abs), shown);
    assert.equal(ok(guard.resolve(shown)).path, abs, `${shown} resolves back`);
  }
});

test('from the second folder, escapes end OUTSIDE_WORKSPACE', () => {
  const { out, guard } = fixture();
  for (const attempt of [
    'api/../../etc/passwd',
    'api/../outside/secret.txt',
    'api/outlink/secret.txt',
    'api/outlink',
    'api/src/up/outside/secret.txt',
    'api/src/../../outside',
    `${out}/secret.txt`,
  ]) {
    const r = guard.resolve(attempt);
    assert.ok(!r.ok && r.error.code === 'OUTSIDE_WORKSPACE', `${attempt}: ${JSON.stringify(r)}`);
  }
});

test('root names: the first folder has none, a repeated name selects nothing', () => {
  assert.deepEqual(workspaceRootNames(['/x/web', '/y/api', '/z/api', '/w/lib']), [
    undefined,
    'api',
    undefined,
    'lib',
  ]);
});
