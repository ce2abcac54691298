import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { findExecutable, probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { probeSandboxCached } from '../../src/agent/safety/sandbox/probeCache.ts';
import { createSandbox } from '../../src/agent/safety/sandbox/sandbox.ts';

// The probe (one bubblewrap start per session) is remembered for the boot: a second session does
// not start bwrap to learn what the first one learnt, a changed bwrap binary is probed again, and a
// failed probe is never remembered (the user who just fixed the machine sees it work at once).

const realBwrap = findExecutable('bwrap');
const available = realBwrap !== undefined && probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap';
const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-probe-cache-')));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A bwrap that counts its starts in `log`, then runs the real one (or fails when `broken`). */
function countingBwrap(name: string, broken = false): { path: string; starts: () => number } {
  const log = path.join(dir, `${name}.log`);
  const file = path.join(dir, name);
  fs.writeFileSync(
    file,
    `#!/bin/sh\necho start >> '${log}'\n${broken ? 'echo "bwrap: setting up uid map: Permission denied" >&2; exit 1' : `exec '${realBwrap}' "$@"`}\n`,
    { mode: 0o755 },
  );
  return {
    path: file,
    starts: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0),
  };
}

test('a working probe is remembered: the next session starts no bwrap to learn it again', {
  skip: !available && 'no bwrap',
}, () => {
  const bwrap = countingBwrap('bwrap-ok');
  const cacheFile = path.join(dir, 'ok', 'sandbox-probe.json');
  const first = probeSandboxCached({ bwrapPath: bwrap.path, cacheFile });
  assert.equal(first.tier, 'bwrap');
  assert.equal(bwrap.starts(), 1);
  assert.equal(fs.statSync(cacheFile).mode & 0o777, 0o600, 'the cache is private to the user');
  const second = probeSandboxCached({ bwrapPath: bwrap.path, cacheFile });
  assert.equal(second.tier, 'bwrap');
  assert.equal(second.bwrap, bwrap.path);
  assert.equal(bwrap.starts(), 1, 'the second probe was answered from the cache');
  assert.match(second.checks.map((c) => c.detail).join('\n'), /remembered from earlier in this boot/);

  // A sandbox made with the same cache file runs its commands with the remembered bwrap.
  const sandbox = createSandbox({
    roots: [dir],
    settings: { bwrapPath: bwrap.path, networkProxy: false },
    probeCacheFile: cacheFile,
  });
  try {
    assert.equal(sandbox.info.tier, 'bwrap');
    assert.equal(bwrap.starts(), 1);
  } finally {
    sandbox.dispose();
  }

  // Another bwrap (upgraded, replaced) is probed afresh.
  fs.appendFileSync(bwrap.path, '# upgraded\n');
  assert.equal(probeSandboxCached({ bwrapPath: bwrap.path, cacheFile }).tier, 'bwrap');
  assert.equal(bwrap.starts(), 2);
});

test('a failed probe is not remembered, and a cache it cannot read only means a fresh probe', {
  skip: !realBwrap && 'no bwrap',
}, () => {
  const bwrap = countingBwrap('bwrap-broken', true);
  const cacheFile = path.join(dir, 'broken', 'sandbox-probe.json');
  for (let i = 1; i <= 2; i++) {
    const status = probeSandboxCached({ bwrapPath: bwrap.path, cacheFile });
    assert.equal(status.tier, 'none');
    assert.match(status.reason ?? '', /Permission denied/);
    assert.equal(bwrap.starts(), i);
  }
  assert.equal(fs.existsSync(cacheFile), false);

  fs.mkdirSync(path.dirname(cacheFile), { recursive: true });
  fs.writeFileSync(cacheFile, '{"key": 1, "status": "bwrap"}');
  assert.equal(probeSandboxCached({ bwrapPath: bwrap.path, cacheFile }).tier, 'none');
  assert.equal(bwrap.starts(), 3);
});

test('turned off by setting is never answered from the cache', () => {
  const cacheFile = path.join(dir, 'off', 'sandbox-probe.json');
  const off = probeSandboxCached({ bwrapPath: 'bwrap', enabled: false, cacheFile });
  assert.equal(off.tier, 'none');
  assert.equal(off.disabled, true);
  assert.equal(fs.existsSync(cacheFile), false);
});
