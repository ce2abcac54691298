import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { createEditTool } from '../../../src/agent/tools/edit.ts';
import { createReadTool } from '../../../src/agent/tools/read.ts';
import { createWriteTool } from '../../../src/agent/tools/write.ts';
import { bytes, createHarness, disk, type Harness, typeInto } from './helpers.ts';

// The VS Code host as the agent core sees it, inside a real VS Code: reads honour unsaved buffers,
// the optimistic lock notices the user typing, and every write is a saved WorkspaceEdit under review.

describe('VS Code host: reads and the optimistic lock', () => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness();
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('reads the unsaved editor buffer, not the stale file on disk', async () => {
    const p = h.file('dirty.txt');
    fs.writeFileSync(p, 'alpha\nbeta\n');
    const doc = await typeInto(p, 1, 'typed by the user\n');
    assert.equal(doc.isDirty, true);
    const seen = new TextDecoder().decode(await h.host.workspace.readFile(p));
    assert.equal(seen, 'alpha\ntyped by the user\nbeta\n');
    assert.equal(disk(p), 'alpha\nbeta\n', 'the disk is untouched until the user saves');
    const stat = await h.host.workspace.stat(p);
    assert.equal(stat?.size, Buffer.byteLength('alpha\ntyped by the user\nbeta\n'));
  });

  it('reads a closed file from disk through workspace.fs', async () => {
    const p = h.file('closed.txt');
    fs.writeFileSync(p, 'on disk only\r\n');
    assert.equal(new TextDecoder().decode(await h.host.workspace.readFile(p)), 'on disk only\r\n');
    await assert.rejects(h.host.workspace.readFile(h.file('missing.txt')), { code: 'ENOENT' });
    assert.equal(await h.host.workspace.stat(h.file('missing.txt')), undefined);
  });

  it('Edit returns CONFLICT when the user types between the Read and the Edit', async () => {
    const p = h.file('race.ts');
    fs.writeFileSync(p, 'const a = 1;\nconst b = 2;\n');
    const read = await createReadTool().execute({ path: p }, h.context());
    assert.equal(read.status, 'success', read.text);
    await typeInto(p, 0, '// the user was here\n');
    const edit = await createEditTool().execute(
      { path: p, old_string: 'const b = 2;', new_string: 'const b = 3;' },
      h.context(),
    );
    assert.equal(edit.status, 'error');
    assert.equal(edit.error?.code, 'CONFLICT', edit.text);
    assert.equal(disk(p), 'const a = 1;\nconst b = 2;\n', 'nothing was written');
    assert.equal(h.review.pending().length, 0);
  });

  it('Edit after a fresh Read of the dirty buffer keeps the user text and saves both', async () => {
    const p = h.file('merge.ts');
    fs.writeFileSync(p, 'const a = 1;\nconst b = 2;\n');
    const doc = await typeInto(p, 0, '// typed\n');
    await createReadTool().execute({ path: p }, h.context());
    const edit = await createEditTool().execute(
      { path: p, old_string: 'const b = 2;', new_string: 'const b = 3;' },
      h.context(),
    );
    assert.equal(edit.status, 'success', edit.text);
    assert.equal(disk(p), '// typed\nconst a = 1;\nconst b = 3;\n');
    assert.equal(doc.isDirty, false, 'the edit is saved');
  });
});

describe('VS Code host: edits under review', () => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness();
  });
  afterEach(async () => {
    await h.dispose();
  });

  const ORIGINAL = [
    'line 1',
    'line 2',
    'line 3',
    'line 4',
    'line 5',
    'line 6',
    'line 7',
    'line 8',
    'line 9',
    '',
  ].join('\n');

  it('an agent Edit is a saved WorkspaceEdit: on disk, in the open document, pending review with a hunk', async () => {
    const p = h.file('applied.txt');
    fs.writeFileSync(p, ORIGINAL);
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(p));
    await createReadTool().execute({ path: p }, h.context());
    const edit = await createEditTool().execute(
      { path: p, old_string: 'line 2', new_string: 'LINE TWO' },
      h.context(),
    );
    assert.equal(edit.status, 'success', edit.text);
    assert.equal(disk(p), ORIGINAL.replace('line 2', 'LINE TWO'));
    assert.equal(doc.getText(), ORIGINAL.replace('line 2', 'LINE TWO'));
    assert.equal(doc.isDirty, false);
    const hunks = await h.review.hunks(p);
    assert.deepEqual(
      hunks.map((x) => ({ line: x.line, added: x.added, removed: x.removed })),
      [{ line: 1, added: 1, removed: 1 }],
    );
  });

  it('rejecting one hunk restores its original bytes exactly, even after later edits elsewhere', async () => {
    const p = h.file('hunks.txt');
    fs.writeFileSync(p, ORIGINAL);
    await h.host.workspace.writeFile(p, bytes(ORIGINAL.replace('line 2', 'two').replace('line 8', 'eight')));
    // A later agent edit elsewhere in the same file, and a user edit, both after the first write.
    const afterSecond = ORIGINAL.replace('line 2', 'two')
      .replace('line 8', 'eight')
      .replace('line 5\n', 'line 5\nnew 5b\n');
    await h.host.workspace.writeFile(p, bytes(afterSecond));
    const hunks = await h.review.hunks(p);
    assert.equal(hunks.length, 3);
    const first = hunks.find((x) => x.line === 1);
    assert.ok(first);
    assert.equal(await h.review.reject(p, first.id), true);
    assert.equal(disk(p), ORIGINAL.replace('line 8', 'eight').replace('line 5\n', 'line 5\nnew 5b\n'));
    assert.equal((await h.review.hunks(p)).length, 2);
    assert.equal(h.rejections.length, 1);
    assert.match(h.rejections[0]!.description, /rejected your change to line 2 in t[^ ]+\/hunks\.txt/);
  });

  it('Reject all after the user typed inside and outside Keel’s hunks: every typed character survives', async () => {
    const p = h.file('typed.txt');
    fs.writeFileSync(p, ORIGINAL);
    await h.host.workspace.writeFile(p, bytes(ORIGINAL.replace('line 2', 'two').replace('line 8', 'eight')));
    // The user types above everything (outside), then at the start of Keel's "eight" line (inside).
    await typeInto(p, 0, 'typed above\n');
    const doc = await typeInto(p, 8, 'X');
    assert.equal(doc.getText().split('\n')[8], 'Xeight');
    // The user's lines are not offered as Keel's hunks: two hunks, the one typed into is a conflict.
    const hunks = await h.review.hunks(p);
    assert.deepEqual(
      hunks.map((x) => [x.line, x.conflict === true]),
      [
        [2, false],
        [8, true],
      ],
    );
    assert.equal(await h.review.rejectAll(), 1);
    const expected = `typed above\n${ORIGINAL.replace('line 8', 'Xeight')}`;
    assert.equal(doc.getText(), expected, 'Keel’s "two" is undone; "typed above" and "X" survive');
    assert.equal(disk(p), expected);
    assert.equal(h.review.pending().length, 1, 'the hunk the user typed into stays for review');
    assert.match(h.rejections.at(-1)!.description, /keeping the user's own edits/);
  });

  it('the user types between two Keel writes to a file: Reject all still keeps what they typed', async () => {
    const p = h.file('between.txt');
    fs.writeFileSync(p, ORIGINAL);
    await h.host.workspace.writeFile(p, bytes(ORIGINAL.replace('line 2', 'two')));
    const doc = await typeInto(p, 0, 'typed between\n');
    // Keel writes again, from what is there now (the user's line included).
    await h.host.workspace.writeFile(p, bytes(doc.getText().replace('line 8', 'eight')));
    const hunks = await h.review.hunks(p);
    assert.deepEqual(
      hunks.map((x) => [x.line, x.added, x.conflict === true]),
      [
        [2, 1, false],
        [8, 1, false],
      ],
      'only Keel’s two changes are offered; the typed line is not one of them',
    );
    assert.equal(await h.review.rejectAll(), 1);
    const expected = `typed between\n${ORIGINAL}`;
    assert.equal(doc.getText(), expected, 'both of Keel’s changes undone, the typed line kept');
    assert.equal(disk(p), expected);
    assert.equal(h.review.pending().length, 0);
  });

  it('accepting a hunk keeps it through a later Reject all; Reject all restores the rest byte for byte', async () => {
    const p = h.file('crlf.txt');
    const original = '\uFEFFalpha\r\nbeta\r\ngamma\r\ndelta\r\n';
    fs.writeFileSync(p, original);
    await h.host.workspace.writeFile(p, bytes('\uFEFFALPHA\r\nbeta\r\ngamma\r\nDELTA\r\n'));
    assert.equal(disk(p), '\uFEFFALPHA\r\nbeta\r\ngamma\r\nDELTA\r\n');
    const hunks = await h.review.hunks(p);
    assert.equal(hunks.length, 2);
    assert.equal(await h.review.accept(p, hunks[1]!.id), true);
    assert.equal((await h.review.hunks(p)).length, 1);
    assert.equal(await h.review.rejectAll(), 1);
    assert.equal(disk(p), '\uFEFFalpha\r\nbeta\r\ngamma\r\nDELTA\r\n');
    assert.equal(h.review.pending().length, 0);
  });

  it('accepting every hunk clears the file from review without touching it', async () => {
    const p = h.file('accept.txt');
    fs.writeFileSync(p, ORIGINAL);
    await h.host.workspace.writeFile(p, bytes(ORIGINAL.replace('line 9', 'nine')));
    const [only] = await h.review.hunks(p);
    assert.ok(only);
    await h.review.accept(p, only.id);
    assert.equal(h.review.get(p), undefined);
    assert.equal(disk(p), ORIGINAL.replace('line 9', 'nine'));
  });

  it('keeps the executable bit of a file it rewrites', async () => {
    const p = h.file('run.sh');
    fs.writeFileSync(p, '#!/bin/sh\necho one\n', { mode: 0o755 });
    await h.host.workspace.writeFile(p, bytes('#!/bin/sh\necho two\n'), { mode: 0o755 });
    assert.equal(fs.statSync(p).mode & 0o777, 0o755);
    assert.equal(disk(p), '#!/bin/sh\necho two\n');
  });

  it('create, then Reject, deletes the created file', async () => {
    const p = h.file('sub/created.ts');
    const write = await createWriteTool().execute({ path: p, content: 'export const x = 1;\n' }, h.context());
    assert.equal(write.status, 'success', write.text);
    assert.equal(disk(p), 'export const x = 1;\n');
    assert.equal(h.review.get(p)?.kind, 'create');
    await h.review.reject(p);
    assert.equal(fs.existsSync(p), false);
    assert.match(h.rejections[0]!.description, /deleted .*created\.ts, which you created/);
  });

  it('delete, then Reject, restores the exact original bytes', async () => {
    const p = h.file('doomed.bin.txt');
    const original = Buffer.from('keep\r\nthese\nbytes\u00e9\n', 'utf8');
    fs.writeFileSync(p, original);
    await h.host.workspace.deleteFile(p);
    assert.equal(fs.existsSync(p), false);
    assert.equal(h.review.get(p)?.kind, 'delete');
    await h.review.reject(p);
    assert.ok(fs.readFileSync(p).equals(original));
  });

  it('rename, then Reject, moves the file back with its original content', async () => {
    const from = h.file('old-name.txt');
    const to = h.file('moved/new-name.txt');
    fs.writeFileSync(from, 'original\n');
    await h.host.workspace.rename(from, to);
    assert.equal(fs.existsSync(from), false);
    assert.equal(disk(to), 'original\n');
    await h.host.workspace.writeFile(to, bytes('changed after the move\n'));
    assert.equal(h.review.get(to)?.renamedFrom, from);
    await h.review.reject(to);
    assert.equal(fs.existsSync(to), false);
    assert.equal(disk(from), 'original\n');
  });

  it('beforeApply: the write waits for the decision; Reject reaches the agent as DENIED_BY_USER', async () => {
    h.mode = 'beforeApply';
    const p = h.file('proposal.txt');
    fs.writeFileSync(p, 'before\n');
    await createReadTool().execute({ path: p }, h.context());
    const pending = createEditTool().execute(
      { path: p, old_string: 'before', new_string: 'after' },
      h.context(),
    );
    const proposal = await waitForProposal(h, p);
    assert.equal(proposal.after, 'after\n');
    assert.equal(disk(p), 'before\n', 'nothing is written while the user decides');
    h.proposals.decide(p, false);
    const result = await pending;
    assert.equal(result.error?.code, 'DENIED_BY_USER', result.text);
    assert.equal(disk(p), 'before\n');

    const accepted = createEditTool().execute(
      { path: p, old_string: 'before', new_string: 'after' },
      h.context(),
    );
    await waitForProposal(h, p);
    h.proposals.decide(p, true);
    assert.equal((await accepted).status, 'success');
    assert.equal(disk(p), 'after\n');
    assert.equal(h.review.pending().length, 0, 'an accepted proposal is not pending review again');
  });
});

async function waitForProposal(h: Harness, p: string) {
  for (let i = 0; i < 200; i++) {
    const found = h.proposals.pending().find((x) => x.path === p);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no proposal appeared');
}

describe('VS Code host: stop and races', () => {
  let h: Harness;
  beforeEach(() => {
    h = createHarness();
  });
  afterEach(async () => {
    await h.dispose();
  });

  it('beforeApply: Stop rejects the waiting proposal and the write ends as ABORTED', async () => {
    h.mode = 'beforeApply';
    const p = h.file('stopped.txt');
    fs.writeFileSync(p, 'before\n');
    await createReadTool().execute({ path: p }, h.context());
    const pending = createEditTool().execute(
      { path: p, old_string: 'before', new_string: 'after' },
      h.context(),
    );
    await waitForProposal(h, p);
    h.run.abort();
    const result = await pending;
    assert.equal(result.status, 'error');
    assert.equal(result.error?.code, 'ABORTED', result.text);
    assert.equal(h.proposals.pending().length, 0, 'no proposal is left open');
    assert.equal(disk(p), 'before\n');
    // A write after Stop does not even ask.
    await assert.rejects(h.host.workspace.writeFile(p, bytes('later\n')), { code: 'ABORTED' });
    assert.equal(h.proposals.pending().length, 0);
  });

  it('keystrokes typed after the agent read the file are never overwritten (CONFLICT)', async () => {
    const p = h.file('typing.ts');
    fs.writeFileSync(p, 'const a = 1;\nconst b = 2;\n');
    // What the core does right before writing: read (and hash-check) through the port …
    await h.host.workspace.readFile(p);
    // … then the user types before the WorkspaceEdit lands.
    const doc = await typeInto(p, 1, '// typed just now\n');
    await assert.rejects(
      h.host.workspace.writeFile(p, bytes('const a = 1;\nconst b = 3;\n')),
      (error: Error & { code?: string }) =>
        error.code === 'CONFLICT' && /user's text is kept/.test(error.message),
    );
    assert.equal(doc.getText(), 'const a = 1;\n// typed just now\nconst b = 2;\n');
    assert.equal(disk(p), 'const a = 1;\nconst b = 2;\n');
    assert.equal(h.review.pending().length, 0, 'no review for a write that did not happen');
  });

  it('beforeApply: typing while the proposal waits makes Accept fail with CONFLICT, keeping the typing', async () => {
    h.mode = 'beforeApply';
    const p = h.file('typing-proposal.ts');
    fs.writeFileSync(p, 'one\ntwo\n');
    await h.host.workspace.readFile(p);
    const write = h.host.workspace.writeFile(p, bytes('one\nTWO\n'));
    await waitForProposal(h, p);
    const doc = await typeInto(p, 0, 'zero\n');
    h.proposals.decide(p, true);
    await assert.rejects(write, { code: 'CONFLICT' });
    assert.equal(doc.getText(), 'zero\none\ntwo\n');
    assert.equal(h.review.pending().length, 0);
  });
});
