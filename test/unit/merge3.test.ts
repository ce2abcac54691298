import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { merge3 } from '../../src/agent/subagents/merge3.ts';

// The three-way merge that brings a writer sub-agent's file back: both sides' changes to different
// lines arrive, the same lines changed differently are a conflict (never a guess).

const labels = { ours: 'workspace', theirs: 'writer' };
const lines = (...l: string[]) => `${l.join('\n')}\n`;
const base = lines('a', 'b', 'c', 'd', 'e', 'f', 'g');

describe('merge3', () => {
  test('changes to different regions both arrive', () => {
    const ours = lines('A', 'b', 'c', 'd', 'e', 'f', 'g');
    const theirs = lines('a', 'b', 'c', 'd', 'e', 'F', 'g', 'h');
    assert.deepEqual(merge3(base, ours, theirs, labels), {
      text: lines('A', 'b', 'c', 'd', 'e', 'F', 'g', 'h'),
      conflicts: 0,
    });
  });

  test('the same change on both sides is taken once', () => {
    const both = lines('a', 'b', 'C', 'd', 'e', 'f', 'g');
    assert.deepEqual(merge3(base, both, both, labels), { text: both, conflicts: 0 });
  });

  test('different changes to the same line are a conflict, shown with both sides', () => {
    const ours = lines('a', 'b', 'ours', 'd', 'e', 'f', 'g');
    const theirs = lines('a', 'b', 'theirs', 'd', 'e', 'f', 'g');
    const merged = merge3(base, ours, theirs, labels);
    assert.equal(merged.conflicts, 1);
    assert.equal(
      merged.text,
      lines('a', 'b', '<<<<<<< workspace', 'ours', '=======', 'theirs', '>>>>>>> writer', 'd', 'e', 'f', 'g'),
    );
  });

  test('changes to adjacent lines count as a conflict, like git', () => {
    const ours = lines('a', 'B', 'c', 'd', 'e', 'f', 'g');
    const theirs = lines('a', 'b', 'C', 'd', 'e', 'f', 'g');
    assert.equal(merge3(base, ours, theirs, labels).conflicts, 1);
  });

  test('a deletion on one side and an edit far away on the other merge; no final newline is kept as is', () => {
    const ours = lines('a', 'c', 'd', 'e', 'f', 'g');
    const theirs = 'a\nb\nc\nd\ne\nf\nG';
    assert.deepEqual(merge3(base, ours, theirs, labels), { text: 'a\nc\nd\ne\nf\nG', conflicts: 0 });
  });

  test('CRLF lines are kept byte for byte', () => {
    const b = 'x\r\ny\r\nz\r\n';
    assert.deepEqual(merge3(b, 'X\r\ny\r\nz\r\n', 'x\r\ny\r\nZ\r\n', labels), {
      text: 'X\r\ny\r\nZ\r\n',
      conflicts: 0,
    });
  });
});
