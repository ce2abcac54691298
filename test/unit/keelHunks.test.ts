import assert from 'node:assert/strict';
import { test } from 'node:test';
import { computeHunks, keelHunks, rejectHunk, rejectKeelHunk } from '../../src/extension/editReview/hunks.ts';

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
