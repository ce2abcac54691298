// Normalised views of text for locating an edit's span when the exact bytes differ in ways a model
// commonly gets wrong. Each view keeps, for every character it emits, the [start, end) range of the
// ORIGINAL text it came from, so a match in the view maps back to an exact span of the original —
// only that span is ever replaced.

export type MatchLevel = 'exact' | 'eol' | 'tolerant';

export interface NormalizedView {
  readonly text: string;
  /** Original offset where the view character i starts. */
  readonly starts: Uint32Array;
  /** Original offset where the view character i ends (exclusive). */
  readonly ends: Uint32Array;
}

const QUOTES: Record<string, string> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201a': "'",
  '\u201b': "'",
  '\u2032': "'",
  '\u00b4': "'",
  '\u201c': '"',
  '\u201d': '"',
  '\u201e': '"',
  '\u201f': '"',
  '\u2033': '"',
  '\u00ab': '"',
  '\u00bb': '"',
};
const DASHES = /[\u2010-\u2015\u2212\ufe58\ufe63\uff0d]/;
const SPACES = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/;
const INVISIBLE = /[\u200b-\u200d\u2060\ufeff]/;

/** How one code point looks in the tolerant view ('' = dropped). */
function foldCodePoint(cp: string): string {
  const quote = QUOTES[cp];
  if (quote !== undefined) return quote;
  if (DASHES.test(cp)) return '-';
  if (SPACES.test(cp) || cp === '\t') return ' ';
  if (INVISIBLE.test(cp)) return '';
  const code = cp.codePointAt(0)!;
  // Plain ASCII is its own NFKC form; skip the (slow) normalize call for it.
  return code < 0x80 ? cp : cp.normalize('NFKC');
}

/**
 * `eol`: CRLF reads as LF. `tolerant`: additionally quotes/dashes/odd spaces folded, NFKC, every run of
 * spaces/tabs reads as one space, and whitespace at the end of a line (or of the text) disappears.
 */
export function normalizedView(text: string, level: Exclude<MatchLevel, 'exact'>): NormalizedView {
  // Typed buffers, grown on demand: this runs over whole files (10k lines) on every failed match.
  let capacity = text.length + 16;
  let units = new Uint16Array(capacity);
  let starts = new Uint32Array(capacity);
  let ends = new Uint32Array(capacity);
  let n = 0;
  const grow = () => {
    capacity *= 2;
    const u = new Uint16Array(capacity);
    u.set(units);
    units = u;
    const s = new Uint32Array(capacity);
    s.set(starts);
    starts = s;
    const e = new Uint32Array(capacity);
    e.set(ends);
    ends = e;
  };
  const emitUnit = (unit: number, start: number, end: number) => {
    if (n === capacity) grow();
    units[n] = unit;
    starts[n] = start;
    ends[n] = end;
    n++;
  };
  // Every UTF-16 unit of a (possibly expanded) code point maps to the same original range.
  const emit = (s: string, start: number, end: number) => {
    for (let k = 0; k < s.length; k++) emitUnit(s.charCodeAt(k), start, end);
  };
  let runStart = -1;
  let runEnd = -1;
  const flushRun = (beforeBreak: boolean) => {
    if (runStart >= 0 && !beforeBreak) emitUnit(32, runStart, runEnd);
    runStart = -1;
  };
  const tolerant = level === 'tolerant';
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === 13 && text.charCodeAt(i + 1) === 10) {
      if (tolerant) flushRun(true);
      emitUnit(10, i, i + 2);
      i += 2;
      continue;
    }
    if (code < 0x80 || !tolerant) {
      // Fast path: ASCII (and everything, for the EOL-only view) is taken unit by unit.
      if (tolerant && (code === 32 || code === 9)) {
        if (runStart < 0) runStart = i;
        runEnd = i + 1;
      } else {
        if (tolerant) flushRun(code === 10);
        emitUnit(code, i, i + 1);
      }
      i++;
      continue;
    }
    const cp = String.fromCodePoint(text.codePointAt(i)!);
    const next = i + cp.length;
    const folded = foldCodePoint(cp);
    if (folded === ' ') {
      if (runStart < 0) runStart = i;
      runEnd = next;
    } else if (folded !== '') {
      flushRun(folded === '\n');
      emit(folded, i, next);
    }
    i = next;
  }
  if (tolerant) flushRun(true);
  const chunks: string[] = [];
  for (let k = 0; k < n; k += 8192)
    chunks.push(String.fromCharCode(...units.subarray(k, Math.min(n, k + 8192))));
  return { text: chunks.join(''), starts: starts.subarray(0, n), ends: ends.subarray(0, n) };
}

export interface Span {
  readonly start: number;
  readonly end: number;
}

/** Every occurrence (overlapping ones too, so "unique" really means unique). */
export function findAll(haystack: string, needle: string, overlapping: boolean): number[] {
  const found: number[] = [];
  if (needle.length === 0) return found;
  for (let i = haystack.indexOf(needle); i !== -1; ) {
    found.push(i);
    i = haystack.indexOf(needle, i + (overlapping ? 1 : needle.length));
  }
  return found;
}

/** Spans of the ORIGINAL text whose view matches the view of `needle`. */
export function findSpans(text: string, needle: string, level: MatchLevel, overlapping: boolean): Span[] {
  if (level === 'exact')
    return findAll(text, needle, overlapping).map((s) => ({ start: s, end: s + needle.length }));
  const view = normalizedView(text, level);
  const target = normalizedView(needle, level).text;
  return findAll(view.text, target, overlapping).map((s) => ({
    start: view.starts[s]!,
    end: view.ends[s + target.length - 1]!,
  }));
}
