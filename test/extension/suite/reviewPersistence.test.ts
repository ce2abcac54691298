import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createNodeStorage } from '../../../src/agent/node/nodeHost.ts';
import { createEditTool } from '../../../src/agent/tools/edit.ts';
import { createReadTool } from '../../../src/agent/tools/read.ts';
import { createWriteTool } from '../../../src/agent/tools/write.ts';
import {
  createReviewManager,
  type RejectionNote,
  relativeTo,
  type ReviewManager,
} from '../../../src/extension/editReview/reviewManager.ts';
import { createReviewStore, type ReviewStore } from '../../../src/extension/editReview/reviewStore.ts';
import { bytes, createHarness, disk, type Harness, typeInto } from './helpers.ts';

// Pending reviews survive a window reload: the extension host that made the edits goes away (its
// review manager with it), a new one restores the review from `<stateDir>/review/` and Reject still
// brings back the exact original bytes. A file changed outside Keel meanwhile is dropped, untouched.

describe('Pending edit review across a window reload', () => {
  let stateDir: string;
  let store: ReviewStore;
  let h: Harness;
  let reopened: ReviewManager | undefined;
  const notes: RejectionNote[] = [];

  beforeEach(() => {
    stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-review-state-'));
    store = createReviewStore(stateDir, createNodeStorage());
    h = createHarness('allow_once', { reviewStore: store });
    notes.length = 0;
  });
  afterEach(async () => {
    reopened?.dispose();
    reopened = undefined;
    await h.dispose();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  /** What activation does in the next window: a fresh manager on the same state dir. */
  const reload = async () => {
    h.review.dispose();
    reopened?.dispose();
    reopened = createReviewManager({
      display: (p) => relativeTo([h.root], p),
      roots: () => [h.root],
      onRejected: (n) => notes.push(n),
      // A new store object too: nothing is shared with the old window but the disk.
      store: createReviewStore(stateDir, createNodeStorage()),
    });
    return { manager: reopened, report: await reopened.restore() };
  };

  it('restores an agent edit after a reload, and rejecting its hunk brings back the exact bytes', async () => {
    const p = h.file('kept.ts');
    const original = '\uFEFF// header\r\nconst a = 1;\nconst b = 2;\r\n// unchanged\nconst c = 3;\n';
    fs.writeFileSync(p, original);
    await createReadTool().execute({ path: p }, h.context());
    const edit = await createEditTool().execute(
      { path: p, old_string: 'const b = 2;', new_string: 'const b = 20;' },
      h.context(),
    );
    assert.equal(edit.status, 'success', edit.text);
    // A second agent edit elsewhere, so the reopened review has two hunks to tell apart.
    await h.host.workspace.writeFile(p, bytes(disk(p).replace('const c = 3;', 'const c = 30;')));
    assert.equal(fs.readdirSync(path.join(stateDir, 'review')).length, 1, 'one entry per file under review');

    const { manager, report } = await reload();
    assert.deepEqual(report.restored, [p]);
    assert.deepEqual(report.dropped, []);
    const hunks = await manager.hunks(p);
    assert.equal(hunks.length, 2);
    await manager.reject(p, hunks.find((x) => x.line === 2)!.id);
    assert.equal(disk(p), original.replace('const c = 3;', 'const c = 30;'));
    assert.match(notes[0]!.description, /rejected your change to line 3/);
    await manager.rejectAll();
    assert.equal(disk(p), original, 'the original bytes, BOM and mixed line endings included');
    assert.equal(manager.pending().length, 0);
    // The folder goes with its last entry: `workspaceContains:.keel/review` activates Keel only when
    // something is pending.
    assert.equal(fs.existsSync(path.join(stateDir, 'review')), false, 'nothing left to restore');
  });

  it('restores created, deleted and non-UTF-8 files and rejects them exactly', async () => {
    const created = h.file('new/created.ts');
    const doomed = h.file('doomed.txt');
    const latin1 = h.file('latin1.txt');
    const latin1Bytes = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]); // "café\n" in Latin-1
    fs.writeFileSync(doomed, 'keep me\r\n');
    fs.writeFileSync(latin1, latin1Bytes);
    const write = await createWriteTool().execute({ path: created, content: 'export {};\n' }, h.context());
    assert.equal(write.status, 'success', write.text);
    await h.host.workspace.deleteFile(doomed);
    await h.host.workspace.writeFile(latin1, bytes('cafe\n'));

    const { manager, report } = await reload();
    assert.deepEqual([...report.restored].sort(), [created, doomed, latin1].sort());
    assert.equal(manager.get(created)?.kind, 'create');
    assert.equal(manager.get(doomed)?.kind, 'delete');
    assert.equal(await manager.rejectAll(), 3);
    assert.equal(fs.existsSync(created), false);
    assert.equal(disk(doomed), 'keep me\r\n');
    assert.ok(fs.readFileSync(latin1).equals(latin1Bytes));
  });

  it('keeps the review when the user saved the file in VS Code before the reload', async () => {
    const p = h.file('saved.txt');
    fs.writeFileSync(p, 'one\ntwo\nthree\n');
    await h.host.workspace.writeFile(p, bytes('one\nTWO\nthree\n'));
    const doc = await typeInto(p, 3, 'four (typed)\n');
    assert.equal(await doc.save(), true);
    const { manager, report } = await reload();
    assert.deepEqual(report.dropped, []);
    const hunks = await manager.hunks(p);
    assert.equal(hunks.length, 2, 'the agent change and the user addition');
    await manager.reject(p, hunks.find((x) => x.line === 1)!.id);
    assert.equal(disk(p), 'one\ntwo\nthree\nfour (typed)\n');
  });

  it('drops the review of a file changed outside Keel since, and leaves the file alone', async () => {
    const changed = h.file('changed.txt');
    const gone = h.file('gone.txt');
    fs.writeFileSync(changed, 'a\nb\n');
    fs.writeFileSync(gone, 'x\n');
    await h.host.workspace.writeFile(changed, bytes('a\nB\n'));
    await h.host.workspace.writeFile(gone, bytes('X\n'));
    // While no window was open: another tool rewrote one file and deleted the other.
    fs.writeFileSync(changed, 'a\nB\nc from git pull\n');
    fs.rmSync(gone);

    const { manager, report } = await reload();
    assert.deepEqual(report.restored, []);
    assert.deepEqual(
      [...report.dropped].sort((x, y) => x.path.localeCompare(y.path)),
      [
        { path: changed, reason: 'it changed outside Keel' },
        { path: gone, reason: 'it was deleted outside Keel' },
      ],
    );
    assert.equal(manager.pending().length, 0);
    assert.equal(disk(changed), 'a\nB\nc from git pull\n', 'not "restored" over the outside change');
    assert.equal(fs.existsSync(gone), false);
    assert.deepEqual(
      (await reload()).report,
      { restored: [], dropped: [] },
      'dropped for good, not re-reported',
    );
  });

  it('ignores a corrupt entry instead of failing activation', async () => {
    fs.mkdirSync(path.join(stateDir, 'review'), { recursive: true });
    fs.writeFileSync(path.join(stateDir, 'review', 'broken.json'), '{"version":1,');
    const { report } = await reload();
    assert.deepEqual(report, { restored: [], dropped: [] });
    assert.equal(fs.existsSync(path.join(stateDir, 'review', 'broken.json')), false);
  });
});
