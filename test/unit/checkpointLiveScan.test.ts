import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { createLiveScan, type LiveScan } from '../../src/agent/checkpoints/liveScan.ts';
import { DEFAULT_IGNORED_SIZE_CAP, type Scan, scanWorkspace } from '../../src/agent/checkpoints/scan.ts';
import { tempWorkspace } from './helpers/cli.ts';

// The kept-up-to-date scan must always equal a fresh full scan: whatever wrote the files (this
// process, a shell, a separate process while nothing waits), after a refresh it knows the same
// entries with the same signatures, and it reports exactly the paths whose signature changed.

const linux = process.platform === 'linux';

function setup(files: Record<string, string>) {
  const ws = tempWorkspace(files);
  const stateDir = path.join(ws, '.keel');
  fs.mkdirSync(stateDir, { recursive: true });
  const options = { root: ws, skipDirs: [stateDir], ignoredSizeCap: DEFAULT_IGNORED_SIZE_CAP };
  const live = createLiveScan({ ...options, fenceDir: path.join(stateDir, 'fence') });
  const full = () => scanWorkspace(options);
  return { ws, live, full };
}

function signatures(scan: Scan | ((rel: string) => unknown), keys: string[]) {
  const get = typeof scan === 'function' ? scan : (rel: string) => scan.get(rel);
  return Object.fromEntries(
    keys.sort().map((k) => {
      const e = get(k) as { size: number; mtimeMs: number; ino: number } | undefined;
      return [k, e ? `${e.size}/${e.mtimeMs}/${e.ino}` : 'absent'];
    }),
  );
}

async function assertMatchesFullScan(live: LiveScan, full: () => Scan, previous: Scan) {
  const changes = await live.refresh();
  const now = full();
  const keys = [...new Set([...now.keys(), ...previous.keys()])];
  assert.deepEqual(
    signatures((rel) => live.entry(rel), keys),
    signatures(now, keys),
    'the live scan knows the same files as a full scan',
  );
  const changed = keys.filter((k) => {
    const a = previous.get(k);
    const b = now.get(k);
    return !a || !b ? a !== b : a.size !== b.size || a.mtimeMs !== b.mtimeMs || a.ino !== b.ino;
  });
  assert.deepEqual(changes.map((c) => c.rel).sort(), changed.sort(), 'it reports exactly what changed');
  return now;
}

test('after the first walk, refreshes re-stat only what the kernel reported and still equal a full scan', async () => {
  const { ws, live, full } = setup({
    'a.txt': 'a\n',
    'src/b.ts': 'b\n',
    'src/deep/c.ts': 'c\n',
    'old/x.txt': 'x\n',
    'gone/y.txt': 'y\n',
    '.gitignore': 'build/\n',
    'build/out.js': 'o\n',
  });
  try {
    const first = await live.refresh();
    assert.equal(live.lastRefresh, 'full');
    assert.equal(first.length, 7);
    let previous = full();

    const steps: Array<[string, () => void]> = [
      [
        'a shell command edits, creates in a new folder, deletes',
        () => {
          execFileSync(
            'sh',
            ['-c', 'echo A2 >> a.txt && mkdir -p new/deeper && echo n > new/deeper/n.txt && rm src/b.ts'],
            { cwd: ws },
          );
        },
      ],
      [
        'an editor-style save (write to a temp file, rename over)',
        () => {
          fs.writeFileSync(path.join(ws, 'src/deep/.c.ts.tmp'), 'c saved by the editor\n');
          fs.renameSync(path.join(ws, 'src/deep/.c.ts.tmp'), path.join(ws, 'src/deep/c.ts'));
        },
      ],
      [
        'a folder renamed, then written into under its new name',
        () => {
          execFileSync('sh', ['-c', 'mv old renamed && echo x2 > renamed/x.txt'], { cwd: ws });
        },
      ],
      [
        'a folder removed and re-created with other content',
        () => {
          execFileSync('sh', ['-c', 'rm -rf gone && mkdir gone && echo z > gone/z.txt'], { cwd: ws });
        },
      ],
      [
        'a separate process writes in an ignored folder while nothing is waiting',
        () => {
          execFileSync(process.execPath, [
            '-e',
            `require('fs').writeFileSync(${JSON.stringify(path.join(ws, 'build/out.js'))}, 'rebuilt\\n')`,
          ]);
        },
      ],
      [
        'a file replaced by a folder of the same name',
        () => {
          execFileSync('sh', ['-c', 'rm a.txt && mkdir a.txt && echo in > a.txt/inner'], { cwd: ws });
        },
      ],
      ['nothing at all', () => {}],
    ];
    for (const [what, act] of steps) {
      act();
      previous = await assertMatchesFullScan(live, full, previous).catch((error) => {
        throw new Error(`${what}: ${error.message}`);
      });
      if (linux) assert.equal(live.lastRefresh, 'incremental', what);
    }
  } finally {
    live.dispose();
  }
});

test('a changed .gitignore makes the next refresh a full scan (the rules decide what is scanned)', async () => {
  const { ws, live, full } = setup({ 'a.txt': 'a\n', '.gitignore': '\n' });
  try {
    await live.refresh();
    const previous = full();
    fs.writeFileSync(path.join(ws, '.gitignore'), 'dist/\n');
    fs.mkdirSync(path.join(ws, 'dist'));
    fs.writeFileSync(path.join(ws, 'dist/big.bin'), Buffer.alloc(DEFAULT_IGNORED_SIZE_CAP + 1));
    await assertMatchesFullScan(live, full, previous);
    assert.equal(live.lastRefresh, 'full');
    assert.equal(live.entry('dist/big.bin'), undefined, 'an ignored file above the cap is not scanned');
  } finally {
    live.dispose();
  }
});

test('the `full` detector rescans everything on every refresh and finds the same changes', async () => {
  const ws = tempWorkspace({ 'a.txt': 'a\n' });
  const stateDir = path.join(ws, '.keel');
  const options = { root: ws, skipDirs: [stateDir], ignoredSizeCap: DEFAULT_IGNORED_SIZE_CAP };
  const live = createLiveScan({ ...options, fenceDir: path.join(stateDir, 'fence'), detector: 'full' });
  try {
    await live.refresh();
    fs.writeFileSync(path.join(ws, 'b.txt'), 'b\n');
    const changes = await live.refresh();
    assert.equal(live.lastRefresh, 'full');
    assert.deepEqual(
      changes.map((c) => [c.rel, c.before === undefined, c.after === undefined]),
      [['b.txt', true, false]],
    );
  } finally {
    live.dispose();
  }
});
