import { createHash } from 'node:crypto';
import { diffArrays } from 'diff';

// Pure hunk arithmetic for edit review (no 'vscode' here, so it is unit-testable in plain Node).
// Hunks are always recomputed from (original baseline, current content): that is what makes
// "reject restores the original bytes of that hunk exactly, even after later edits elsewhere in the
// file" hold — there is no stored offset that could go stale.
// Lines keep their terminators ("\n", "\r\n"), so joining lines reproduces the text byte for byte.

export interface Hunk {
  /** Stable for the same change at the same original position; used by CodeLens and the webview. */
  readonly id: string;
  /** 0-based first line of the hunk in the original text. */
  readonly oldStart: number;
  readonly oldLines: readonly string[];
  /** 0-based first line of the hunk in the current text. */
  readonly newStart: number;
  readonly newLines: readonly string[];
}

/** Splits text into lines, each keeping its own terminator. "" → []. */
export function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function hunkId(oldStart: number, oldLines: readonly string[], newLines: readonly string[]): string {
  return createHash('sha1')
    .update(`${oldStart}\0${oldLines.join('')}\0${newLines.join('')}`)
    .digest('hex')
    .slice(0, 12);
}

export function computeHunks(original: string, current: string): Hunk[] {
  const a = splitLines(original);
  const b = splitLines(current);
  const changes = diffArrays(a, b);
  const hunks: Hunk[] = [];
  let oldLine = 0;
  let newLine = 0;
  let pending: { oldStart: number; newStart: number; oldLines: string[]; newLines: string[] } | undefined;
  const flush = () => {
    if (!pending) return;
    hunks.push({ id: hunkId(pending.oldStart, pending.oldLines, pending.newLines), ...pending });
    pending = undefined;
  };
  for (const change of changes) {
    const lines = change.value;
    if (!change.added && !change.removed) {
      flush();
      oldLine += lines.length;
      newLine += lines.length;
      continue;
    }
    pending ??= { oldStart: oldLine, newStart: newLine, oldLines: [], newLines: [] };
    if (change.removed) {
      pending.oldLines.push(...lines);
      oldLine += lines.length;
    } else {
      pending.newLines.push(...lines);
      newLine += lines.length;
    }
  }
  flush();
  return hunks;
}

function replaceLines(text: string, start: number, count: number, replacement: readonly string[]): string {
  const lines = splitLines(text);
  lines.splice(start, count, ...replacement);
  return lines.join('');
}

/** The current text with `hunk` undone: its lines go back to the original ones, byte for byte. */
export function rejectHunk(current: string, hunk: Hunk): string {
  return replaceLines(current, hunk.newStart, hunk.newLines.length, hunk.oldLines);
}

/** The new baseline once `hunk` is accepted: the change becomes part of the original. */
export function acceptHunk(original: string, hunk: Hunk): string {
  return replaceLines(original, hunk.oldStart, hunk.oldLines.length, hunk.newLines);
}

/**
 * The smallest whole-line range that turns `from` into `to`: what a WorkspaceEdit replaces, so the
 * user's cursor, folds and undo stack outside the change are left alone. Offsets are UTF-16 indices
 * into `from` and always fall on line starts (never inside "\r\n").
 */
export function minimalLineEdit(
  from: string,
  to: string,
): { start: number; end: number; text: string } | undefined {
  if (from === to) return undefined;
  const a = splitLines(from);
  const b = splitLines(to);
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  ) {
    suffix++;
  }
  const length = (lines: readonly string[]) => lines.reduce((n, l) => n + l.length, 0);
  const start = length(a.slice(0, prefix));
  const end = from.length - length(a.slice(a.length - suffix));
  const text = b.slice(prefix, b.length - suffix).join('');
  return { start, end, text };
}

/** Decodes UTF-8 exactly (BOM kept as U+FEFF); undefined when the bytes are not valid UTF-8. */
export function decodeExact(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

export function encodeText(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** One of Keel's own hunks (baseline → what Keel wrote), located in the current text. */
export interface KeelHunk extends Hunk {
  /** The user changed lines inside this hunk since Keel wrote it: rejecting it would drop their typing. */
  readonly conflict: boolean;
  /** 0-based first line of Keel's lines in the CURRENT text (`newStart` is in Keel's text). */
  readonly currentStart: number;
}

/**
 * Keel's hunks only: the diff between the baseline and what Keel itself wrote, each placed in the
 * current text past whatever the user typed since. The user's own edits are never among them.
 */
export function keelHunks(original: string, keel: string, current: string): KeelHunk[] {
  const mine = computeHunks(original, keel);
  const theirs = computeHunks(keel, current);
  return mine.map((k) => {
    const ks = k.newStart;
    const ke = k.newStart + k.newLines.length;
    let shift = 0;
    let conflict = false;
    for (const u of theirs) {
      const us = u.oldStart;
      const ue = u.oldStart + u.oldLines.length;
      const overlaps =
        us === ue
          ? ks < us && us < ke // the user inserted lines inside Keel's block
          : ks === ke
            ? us < ks && ks < ue // Keel deleted lines in the middle of a block the user rewrote
            : us < ke && ks < ue;
      if (overlaps) conflict = true;
      else if (ue <= ks) shift += u.newLines.length - u.oldLines.length;
    }
    return { ...k, conflict, currentStart: ks + shift };
  });
}

/** Undo one of Keel's hunks in the current text, keeping everything the user typed. */
export function rejectKeelHunk(current: string, hunk: KeelHunk): string {
  return replaceLines(current, hunk.currentStart, hunk.newLines.length, hunk.oldLines);
}

/**
 * The baseline with the user's own edits in it: `current` with every one of Keel's hunks undone.
 * Used when the user typed between two of Keel's writes to a file, so Keel's next write is not
 * measured against a baseline that lacks the user's text (which would then count as Keel's).
 * Undefined when the user typed inside one of Keel's hunks: the two cannot be told apart there.
 */
export function baselineWithUserEdits(original: string, keel: string, current: string): string | undefined {
  let mine = keel;
  let text = current;
  for (;;) {
    const hunks = keelHunks(original, mine, text);
    if (hunks.length === 0) return text;
    const hunk = hunks.find((h) => !h.conflict);
    if (!hunk) return undefined;
    text = rejectKeelHunk(text, hunk);
    mine = rejectHunk(mine, hunk);
  }
}
