import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  acceptHunk,
  computeHunks,
  decodeExact,
  minimalLineEdit,
  rejectHunk,
  splitLines,
} from '../../src/extension/editReview/hunks.ts';

// The review arithmetic behind Accept/Reject per hunk (pure; the VS Code side is in test/extension).

const line = fc.constantFrom('a', 'b', 'c', 'const x = 1;', '', '  indented', 'é ünïcode');
const eol = fc.constantFrom('\n', '\r\n');
const text = fc
  .tuple(fc.array(fc.tuple(line, eol), { maxLength: 12 }), fc.option(line, { nil: undefined }))
  .map(([lines, tail]) => lines.map(([l, e]) => l + e).join('') + (tail ?? ''));

test('splitLines keeps every terminator, so joining gives the text back', () => {
  fc.assert(fc.property(text, (t) => splitLines(t).join('') === t));
  assert.deepEqual(splitLines('a\r\nb\nc'), ['a\r\n', 'b\n', 'c']);
  assert.deepEqual(splitLines(''), []);
});

test('rejecting every hunk, in any order, restores the original byte for byte', () => {
  fc.assert(
    fc.property(text, text, fc.integer(), (original, current, seed) => {
      let now = current;
      for (let hunks = computeHunks(original, now); hunks.length > 0; hunks = computeHunks(original, now)) {
        now = rejectHunk(now, hunks[Math.abs(seed) % hunks.length]!);
      }
      return now === original;
    }),
  );
});

test('accepting every hunk makes the baseline equal the current text', () => {
  fc.assert(
    fc.property(text, text, (original, current) => {
      let base = original;
      for (let hunks = computeHunks(base, current); hunks.length > 0; hunks = computeHunks(base, current)) {
        base = acceptHunk(base, hunks[0]!);
      }
      return base === current;
    }),
  );
});

test('rejecting one hunk leaves a later change elsewhere in the file alone', () => {
  const original = 'one\ntwo\nthree\nfour\nfive\n';
  const current = 'one\nTWO\nthree\nfour\nFIVE\n';
  const hunks = computeHunks(original, current);
  assert.equal(hunks.length, 2);
  assert.equal(rejectHunk(current, hunks[0]!), 'one\ntwo\nthree\nfour\nFIVE\n');
  assert.deepEqual(
    hunks.map((h) => [h.newStart, h.newLines.length, h.oldLines.length]),
    [
      [1, 1, 1],
      [4, 1, 1],
    ],
  );
});

test('minimalLineEdit replaces only whole changed lines and never splits CRLF', () => {
  fc.assert(
    fc.property(text, text, (from, to) => {
      const change = minimalLineEdit(from, to);
      if (!change) return from === to;
      const result = from.slice(0, change.start) + change.text + from.slice(change.end);
      const onBoundary = (i: number) => i === 0 || i === from.length || from[i - 1] === '\n';
      return result === to && onBoundary(change.start) && onBoundary(change.end);
    }),
  );
  assert.deepEqual(minimalLineEdit('a\r\nb\r\nc\r\n', 'a\r\nB\r\nc\r\n'), {
    start: 3,
    end: 6,
    text: 'B\r\n',
  });
});

test('decodeExact refuses bytes that are not UTF-8 and keeps a BOM', () => {
  assert.equal(decodeExact(new Uint8Array([0xff, 0xfe, 0x00])), undefined);
  assert.equal(decodeExact(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])), '\uFEFFa');
});
