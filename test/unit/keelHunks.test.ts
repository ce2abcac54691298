import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  baselineWithUserEdits,
  computeHunks,
  keelHunks,
  rejectHunk,
  rejectKeelHunk,
} from '../../src/extension/editReview/hunks.ts';

// Review shows only Keel's hunks; the user's later typing is never one of them and survives Reject.

const ORIGINAL = 'one\ntwo\nthree\nfour\nfive\nsix\nseven\n';
const KEEL = 'one\nTWO\nthree\nfour\nFIVE\nFIVE-B\nsix\nseven\n';

/** What the review does for Reject all: undo each of Keel's hunks the user did not type into. */
function rejectAll(original: string, keel: string, current: string): { text: string; conflicts: number } {
  let k = keel;
  let now = current;
  for (let hunk = keelHunks(original, k, now).find((h) => !h.conflict); hunk; ) {
    now = rejectKeelHunk(now, hunk);
    k = rejectHunk(k, hunk); // Keel's own text without that hunk
    hunk = keelHunks(original, k, now).find((h) => !h.conflict);
  }
  return { text: now, conflicts: keelHunks(original, k, now).length };
}

test('the user’s own edits are not offered as Keel’s hunks', () => {
  const current = `user top\n${KEEL.replace('seven\n', 'seven\nuser bottom\n')}`;
  const hunks = keelHunks(ORIGINAL, KEEL, current);
  assert.deepEqual(
    hunks.map((h) => [h.currentStart, h.newLines.join(''), h.conflict]),
    [
      [2, 'TWO\n', false],
      [5, 'FIVE\nFIVE-B\n', false],
    ],
  );
  // Plain diff against the baseline would have offered the user's two lines as hunks too.
  assert.equal(computeHunks(ORIGINAL, current).length, 4);
});

test('Reject all keeps every character typed outside Keel’s hunks and reports the hunk typed inside', () => {
  // Typed above, between and below Keel's hunks, and inside the second one.
  const current =
    'user top\none\nTWO\nthree\nuser middle\nfour\nFIVE\ntyped inside\nFIVE-B\nsix\nseven\nuser bottom\n';
  const result = rejectAll(ORIGINAL, KEEL, current);
  assert.equal(
    result.text,
    'user top\none\ntwo\nthree\nuser middle\nfour\nFIVE\ntyped inside\nFIVE-B\nsix\nseven\nuser bottom\n',
  );
  assert.equal(result.conflicts, 1, 'the hunk the user typed into stays, as a conflict');
});

test('with no typing, Reject all gives back the original exactly', () => {
  assert.equal(rejectAll(ORIGINAL, KEEL, KEEL).text, ORIGINAL);
  const crlf = 'a\r\nb\r\nc\r\n';
  const keel = 'a\r\nB\r\nc\r\nd\r\n';
  assert.equal(rejectAll(crlf, keel, `${keel}typed\r\n`).text, `${crlf}typed\r\n`);
});

test('the user types between two of Keel’s writes: Keel’s second write does not make their text Keel’s', () => {
  // Keel's first write, then the user adds lines (outside Keel's hunks), then Keel writes again
  // starting from what is on disk. The new baseline holds the user's text; Reject all keeps it.
  const afterUser = `user top\n${KEEL.replace('seven\n', 'seven\nuser bottom\n')}`;
  const baseline = baselineWithUserEdits(ORIGINAL, KEEL, afterUser);
  assert.equal(baseline, `user top\n${ORIGINAL.replace('seven\n', 'seven\nuser bottom\n')}`);
  const secondWrite = afterUser.replace('three\n', 'THREE by keel\n');
  const hunks = keelHunks(baseline!, secondWrite, secondWrite);
  assert.deepEqual(
    hunks.map((h) => h.newLines.join('')),
    ['TWO\nTHREE by keel\n', 'FIVE\nFIVE-B\n'],
    'only Keel’s lines are Keel’s hunks',
  );
  assert.equal(
    rejectAll(baseline!, secondWrite, secondWrite).text,
    baseline,
    'Reject all keeps every user line',
  );
});

test('the user typed inside Keel’s hunk between two writes: no baseline can separate them', () => {
  const afterUser = KEEL.replace('TWO\n', 'TWO and the user\n');
  assert.equal(baselineWithUserEdits(ORIGINAL, KEEL, afterUser), undefined);
  assert.equal(baselineWithUserEdits(ORIGINAL, KEEL, KEEL), ORIGINAL, 'no user edit: the baseline stays');
});
