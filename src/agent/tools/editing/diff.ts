import {
  FILE_HEADERS_ONLY,
  formatPatch,
  type StructuredPatch,
  type StructuredPatchHunk,
  structuredPatch,
} from 'diff';

// Unified diffs for UIs (the review view) plus the short summary the model reads. Line endings are
// normalised for display: our edits preserve them, so CR noise would only hide the real change.

export interface DiffSummary {
  /** Unified diff with `a/` `b/` headers. */
  readonly diff: string;
  readonly added: number;
  readonly removed: number;
  /** 1-based line in the new text; undefined when nothing changed. */
  readonly firstChangedLine: number | undefined;
}

const CONTEXT = 3;
const DIFF_TIMEOUT_MS = 250;

function lines(text: string): string[] {
  const all = text.split('\n');
  return text.endsWith('\n') ? all.slice(0, -1) : all;
}

/** A single coarse hunk from common prefix/suffix trimming: used when the real diff is too costly. */
function coarsePatch(name: string, before: string, after: string): StructuredPatch {
  const a = lines(before);
  const b = lines(after);
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  const lo = Math.max(0, p - CONTEXT);
  const aHi = Math.min(a.length, a.length - s + CONTEXT);
  const bHi = Math.min(b.length, b.length - s + CONTEXT);
  const hunk: StructuredPatchHunk = {
    oldStart: lo + 1,
    oldLines: aHi - lo,
    newStart: lo + 1,
    newLines: bHi - lo,
    lines: [
      ...a.slice(lo, p).map((l) => ` ${l}`),
      ...a.slice(p, a.length - s).map((l) => `-${l}`),
      ...b.slice(p, b.length - s).map((l) => `+${l}`),
      ...a.slice(a.length - s, aHi).map((l) => ` ${l}`),
    ],
  };
  return { oldFileName: `a/${name}`, newFileName: `b/${name}`, oldHeader: '', newHeader: '', hunks: [hunk] };
}

export function firstChangedLine(before: string, after: string): number | undefined {
  if (before === after) return undefined;
  let i = 0;
  const max = Math.min(before.length, after.length);
  while (i < max && before.charCodeAt(i) === after.charCodeAt(i)) i++;
  let line = 1;
  for (let k = after.indexOf('\n'); k !== -1 && k < i; k = after.indexOf('\n', k + 1)) line++;
  return line;
}

/** Lines with their terminators, so slices join back to exact substrings. */
function linesWithEnds(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function countChanges(patch: StructuredPatch | undefined): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const hunk of patch?.hunks ?? []) {
    for (const l of hunk.lines) {
      if (l.startsWith('+')) added++;
      else if (l.startsWith('-')) removed++;
    }
  }
  return { added, removed };
}

export function buildDiff(displayPath: string, beforeRaw: string, afterRaw: string): DiffSummary {
  const before = beforeRaw.replace(/\r\n/g, '\n');
  const after = afterRaw.replace(/\r\n/g, '\n');
  const name = displayPath.split('\\').join('/');
  if (before === after) return { diff: '', added: 0, removed: 0, firstChangedLine: undefined };
  // jsdiff does not trim the common head and tail itself; on a 10k-line file with a one-line edit
  // trimming first turns tens of milliseconds into almost nothing.
  const a = linesWithEnds(before);
  const b = linesWithEnds(after);
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  const lo = Math.max(0, p - CONTEXT);
  const keepTail = Math.max(0, s - CONTEXT);
  const middle = structuredPatch(
    `a/${name}`,
    `b/${name}`,
    a.slice(lo, a.length - keepTail).join(''),
    b.slice(lo, b.length - keepTail).join(''),
    '',
    '',
    { context: CONTEXT, timeout: DIFF_TIMEOUT_MS },
  );
  const patch: StructuredPatch = middle
    ? {
        ...middle,
        hunks: middle.hunks.map((h) => ({ ...h, oldStart: h.oldStart + lo, newStart: h.newStart + lo })),
      }
    : coarsePatch(name, before, after);
  const { added, removed } = countChanges(patch);
  const diff = patch.hunks.length > 0 ? formatPatch(patch, FILE_HEADERS_ONLY) : '';
  return { diff, added, removed, firstChangedLine: firstChangedLine(before, after) };
}

const SNIPPET_LINES = 40;
const SNIPPET_LINE_CHARS = 300;

/** The hunks without file headers, capped, for the model's result text. */
export function diffSnippet(diff: string): string {
  const body = diff.split('\n');
  const start = body.findIndex((l) => l.startsWith('@@'));
  if (start < 0) return '';
  const hunkLines = body.slice(start).filter((l, i, all) => !(i === all.length - 1 && l === ''));
  const shown = hunkLines
    .slice(0, SNIPPET_LINES)
    .map((l) => (l.length > SNIPPET_LINE_CHARS ? `${l.slice(0, SNIPPET_LINE_CHARS)}… [line cut]` : l));
  if (hunkLines.length > SNIPPET_LINES) shown.push(`… (${hunkLines.length - SNIPPET_LINES} more diff lines)`);
  return shown.join('\n');
}
