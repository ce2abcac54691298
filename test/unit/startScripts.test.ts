import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { tempWorkspace } from './helpers/cli.ts';

// The first `npm start` (issue 20): apt busy on a fresh machine must be waited for, not fatal; and
// `npm start` builds the `keel` CLI too.

const APT = path.resolve('scripts/code-server/apt.mjs');

/** A fake apt-get on PATH: fails with apt's lock message `locked` times, then succeeds; logs its calls. */
function fakeAptGet(
  locked: number,
  message = 'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)',
): {
  bin: string;
  calls: () => string[];
} {
  const dir = tempWorkspace();
  const count = path.join(dir, 'count');
  const calls = path.join(dir, 'calls');
  fs.writeFileSync(count, '0');
  fs.writeFileSync(
    path.join(dir, 'apt-get'),
    `#!/bin/sh
echo "$*" >> "${calls}"
n=$(cat "${count}")
echo $((n + 1)) > "${count}"
if [ "$n" -lt ${locked} ]; then
  echo "${message}" >&2
  exit 100
fi
echo "apt-get $1 ok"
`,
    { mode: 0o755 },
  );
  return {
    bin: dir,
    calls: () => fs.readFileSync(calls, 'utf8').trim().split('\n'),
  };
}

function runApt(bin: string, env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [APT, 'build-essential', 'pkg-config'], {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, KEEL_APT_WAIT_MS: '10', ...env },
    encoding: 'utf8',
  });
}

describe('npm start: the apt step', () => {
  test('a busy apt lock is waited for (apt-get told to wait, then retried) instead of failing', () => {
    const apt = fakeAptGet(2);
    const run = runApt(apt.bin);
    assert.equal(run.status, 0, run.stderr);
    const calls = apt.calls();
    // Two lock failures of `update`, then update and install succeed.
    assert.equal(calls.length, 4, calls.join('\n'));
    for (const call of calls) assert.match(call, /^-o DPkg::Lock::Timeout=\d+ /);
    assert.deepEqual(
      calls.map((c) => c.split(' ')[2]),
      ['update', 'update', 'update', 'install'],
    );
    assert.match(calls[3]!, /install -y -qq --no-install-recommends build-essential pkg-config$/);
    assert.equal((run.stdout.match(/apt is busy \(another apt or dpkg holds its lock/g) ?? []).length, 2);
  });

  test('the wait is bounded: a lock that never goes says so and fails', () => {
    const apt = fakeAptGet(
      1000,
      'E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?',
    );
    const run = runApt(apt.bin);
    assert.equal(run.status, 1);
    assert.equal(apt.calls().length, 5, 'five tries, no more');
    assert.match(run.stderr, /apt is still locked by another process after 5 tries/);
  });

  test('any other apt failure stops at once', () => {
    const apt = fakeAptGet(1, 'E: Unable to locate package pkg-config');
    const run = runApt(apt.bin);
    assert.equal(run.status, 1);
    assert.equal(apt.calls().length, 1);
    assert.match(run.stderr, /apt-get update failed \(exit 100\)/);
  });

  test('install.sh runs apt through the lock-waiting step', () => {
    const script = fs.readFileSync('scripts/code-server/install.sh', 'utf8');
    assert.match(script, /node "\$ROOT\/scripts\/code-server\/apt\.mjs" \$APT_PKGS/);
    assert.doesNotMatch(script, /^\s*apt-get (update|install)/m, 'no direct apt-get call is left');
  });
});

describe('npm start: the build step', () => {
  test('builds the keel CLI (scripts/build.mjs) before packaging the .vsix, and start.mjs uses it', async () => {
    const { buildForStart } = (await import(pathToFileURL(path.resolve('scripts/start-build.mjs')).href)) as {
      buildForStart: (o: {
        run: (args: string[]) => void;
        pack: (o: { build: boolean }) => { path: string };
      }) => string;
    };
    const steps: string[] = [];
    const vsix = buildForStart({
      run: (args) => steps.push(`node ${args.join(' ')}`),
      pack: (o) => {
        steps.push(`package build=${o.build}`);
        return { path: '/x/keel.vsix' };
      },
    });
    assert.deepEqual(steps, ['node scripts/build.mjs', 'package build=true']);
    assert.equal(vsix, '/x/keel.vsix');
    // scripts/build.mjs is what writes the CLI `npx keel` runs.
    assert.match(
      fs.readFileSync('scripts/build.mjs', 'utf8'),
      /entryPoints: \{ cli: 'src\/cli\/entry\.ts' \}/,
    );
    assert.match(fs.readFileSync('scripts/start.mjs', 'utf8'), /vsix = buildForStart\(\);/);
  });
});
