import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { createNodeStorage } from '../../src/agent/node/nodeHost.ts';
import { ContainedPathError } from '../../src/agent/safety/paths/containedPath.ts';
import type { PendingFile } from '../../src/extension/editReview/reviewManager.ts';
import { persistReviews } from '../../src/extension/editReview/reviewPersistence.ts';
import { restoreReviews } from '../../src/extension/editReview/reviewRestore.ts';
import { createReviewStore } from '../../src/extension/editReview/reviewStore.ts';
import {
  type RejectFileOps,
  rejectWholeFile,
  type ReviewScope,
} from '../../src/extension/editReview/reviewTargets.ts';

// Stored pending reviews (`.keel/review/*.json`) are data a repository can commit. Loading them
// checks each with zod and contains its paths in the workspace; Reject writes only contained paths.
// Plain Node: the store, the restore and Reject's file plan carry no vscode import.

const made: string[] = [];
after(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const b64 = (text: string) => Buffer.from(text).toString('base64');

function setup() {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-review-contain-')));
  made.push(base);
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  fs.mkdirSync(path.join(ws, '.keel', 'review'), { recursive: true });
  fs.mkdirSync(outside);
  const victim = path.join(base, 'victim');
  fs.writeFileSync(victim, 'the victim\n');
  fs.writeFileSync(path.join(outside, 'x.txt'), 'outside\n');
  fs.symlinkSync(outside, path.join(ws, 'sub'));
  fs.writeFileSync(path.join(ws, 'ok.txt'), 'keel wrote this\n');
  fs.writeFileSync(path.join(ws, '.keel', 'settings.json'), '{}\n');
  const scope: ReviewScope = { roots: [ws], exclude: [path.join(ws, '.keel')] };
  const store = createReviewStore(path.join(ws, '.keel'), createNodeStorage());
  /** A record as a repository would commit it; the fingerprint matches the file, so only containment stops it. */
  const plant = (id: string, fields: Record<string, unknown>) =>
    fs.writeFileSync(
      path.join(ws, '.keel', 'review', `${id}.json`),
      JSON.stringify({
        version: 2,
        reviewId: id,
        kind: 'modify',
        originalBase64: b64('pwned\n'),
        savedAt: 1,
        ...fields,
      }),
    );
  return { base, ws, outside, victim, scope, store, plant };
}

const recordingOps = () => {
  const calls: string[] = [];
  const ops: RejectFileOps = {
    write: async (p) => {
      calls.push(`write ${p}`);
    },
    delete: async (p) => {
      calls.push(`delete ${p}`);
    },
    rename: async (from, to) => {
      calls.push(`rename ${from} ${to}`);
    },
  };
  return { calls, ops };
};

describe('stored review records are contained before anything uses them', () => {
  test('records naming /tmp/…/victim, ../victim, a symlinked folder or Keel’s state are dropped; a good one comes back', () => {
    const { ws, outside, victim, scope, store, plant } = setup();
    plant('abs-victim', { version: 1, path: victim, fingerprint: sha('the victim\n') });
    plant('up-victim', { path: '../victim', fingerprint: sha('the victim\n') });
    plant('nul', { path: 'ok.txt\0', fingerprint: sha('keel wrote this\n') });
    plant('through-link', { path: 'sub/x.txt', fingerprint: sha('outside\n') });
    plant('state', { path: '.keel/settings.json', fingerprint: sha('{}\n') });
    plant('renamed-from-outside', {
      path: 'ok.txt',
      renamedFrom: path.join(outside, 'gone.txt'),
      fingerprint: sha('keel wrote this\n'),
    });
    plant('good', { path: 'ok.txt', fingerprint: sha('keel wrote this\n') });
    const logged: string[] = [];
    const files = new Map<string, PendingFile>();
    const report = restoreReviews(store, files, scope, {
      display: (p) => p,
      log: (m) => logged.push(m),
    });

    assert.deepEqual(report.restored, [path.join(ws, 'ok.txt')]);
    assert.deepEqual([...files.keys()], [path.join(ws, 'ok.txt')]);
    assert.equal(
      files.get(path.join(ws, 'ok.txt'))?.renamedFrom,
      undefined,
      'the good record, not the forged rename',
    );
    const refused = report.dropped.filter((d) => d.refused);
    assert.deepEqual(
      refused.map((d) => d.path).sort(),
      [victim, '.keel/settings.json', path.join(ws, 'ok.txt'), 'sub/x.txt'].sort(),
    );
    assert.match(refused.find((d) => d.path === victim)!.reason, /outside the workspace/);
    assert.match(refused.find((d) => d.path === 'sub/x.txt')!.reason, /symlink/);
    // Invalid on their face (zod): never loaded, said so in the log, removed.
    assert.equal(
      logged.filter((m) => /up-victim\.json: invalid entry: path: .*"\.\."/.test(m)).length,
      1,
      logged.join('\n'),
    );
    assert.equal(
      logged.filter((m) => /nul\.json: invalid entry: path: .*NUL/.test(m)).length,
      1,
      logged.join('\n'),
    );
    assert.deepEqual(
      fs.readdirSync(path.join(ws, '.keel', 'review')),
      ['good.json'],
      'every refused record is removed',
    );
    assert.equal(fs.readFileSync(victim, 'utf8'), 'the victim\n');
    assert.equal(fs.readFileSync(path.join(outside, 'x.txt'), 'utf8'), 'outside\n');
  });

  test('Reject of a pending file whose path leads outside writes nothing', async () => {
    const { ws, outside, victim, scope } = setup();
    const forged = (p: string, extra: Partial<PendingFile> = {}): PendingFile => ({
      reviewId: 'x',
      path: p,
      kind: 'modify',
      original: 'pwned\n',
      originalBytes: Buffer.from('pwned\n'),
      ...extra,
    });
    for (const file of [
      forged(victim),
      forged(path.join(ws, '..', 'victim')),
      forged(path.join(ws, 'sub', 'x.txt')),
      forged(path.join(ws, 'sub', 'new.txt'), { kind: 'create' }),
      forged(path.join(ws, 'ok.txt'), { renamedFrom: path.join(outside, 'x.txt') }),
      forged(path.join(ws, 'ok.txt'), { kind: 'delete', path: path.join(ws, '.keel', 'settings.json') }),
    ]) {
      const { calls, ops } = recordingOps();
      await assert.rejects(rejectWholeFile(file, scope, ops), ContainedPathError, file.path);
      assert.deepEqual(calls, [], `nothing done for ${file.path}`);
    }
    assert.equal(fs.readFileSync(victim, 'utf8'), 'the victim\n');

    // A contained one goes ahead, with the contained path.
    const { calls, ops } = recordingOps();
    fs.mkdirSync(path.join(ws, 'real'));
    await rejectWholeFile(
      forged(path.join(ws, 'ok.txt'), { renamedFrom: path.join(ws, 'real', 'old.txt') }),
      scope,
      ops,
    );
    assert.deepEqual(calls, [
      `rename ${path.join(ws, 'ok.txt')} ${path.join(ws, 'real', 'old.txt')}`,
      `write ${path.join(ws, 'real', 'old.txt')}`,
    ]);
  });

  test('records are written relative to the primary root, and read back contained', () => {
    const { ws, scope, store } = setup();
    fs.mkdirSync(path.join(ws, 'src'));
    fs.writeFileSync(path.join(ws, 'src', 'a.ts'), 'new\n');
    const file: PendingFile = {
      reviewId: 'abc-1',
      path: path.join(ws, 'src', 'a.ts'),
      kind: 'modify',
      original: 'old\n',
      originalBytes: Buffer.from('old\n'),
    };
    persistReviews(store, [file], scope.roots, { log: undefined, restored: true });
    const stored = JSON.parse(fs.readFileSync(path.join(ws, '.keel', 'review', 'abc-1.json'), 'utf8')) as {
      version: number;
      path: string;
    };
    assert.equal(stored.version, 2);
    assert.equal(stored.path, 'src/a.ts');
    const files = new Map<string, PendingFile>();
    const report = restoreReviews(
      createReviewStore(path.join(ws, '.keel'), createNodeStorage()),
      files,
      scope,
      {
        display: (p) => p,
      },
    );
    assert.deepEqual(report.restored, [file.path]);
    assert.equal(files.get(file.path)?.original, 'old\n');
  });

  test('before this window restored them, persisting keeps a previous window’s records', () => {
    const { ws, scope, store, plant } = setup();
    plant('earlier', { path: 'ok.txt', fingerprint: sha('keel wrote this\n') });
    persistReviews(store, [], scope.roots, { log: undefined, restored: false });
    assert.ok(fs.existsSync(path.join(ws, '.keel', 'review', 'earlier.json')));
    persistReviews(store, [], scope.roots, { log: undefined, restored: true });
    assert.ok(!fs.existsSync(path.join(ws, '.keel', 'review', 'earlier.json')));
  });
});
