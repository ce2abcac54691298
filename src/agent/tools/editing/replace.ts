import { ToolFailure } from '../protocol.ts';
import { convertEol, type Eol } from './codec.ts';
import { findSpans, type MatchLevel, type Span } from './normalize.ts';
import { excerpt, findSimilarRegions, splitLines } from './similar.ts';

// Pure string surgery: one edit against one text. No I/O, so MultiEdit can chain edits in memory and
// write once (all or nothing), and tests can hammer it directly.

export interface EditSpec {
  readonly old_string: string;
  readonly new_string: string;
  readonly replace_all?: boolean | undefined;
}

export interface AppliedEdit {
  readonly text: string;
  /** 1-based line of each replacement in the text the edit was applied to. */
  readonly lines: readonly number[];
  readonly level: MatchLevel;
}

const MAX_LISTED_LINES = 50;

function lineNumbers(text: string, spans: readonly Span[]): number[] {
  const out: number[] = [];
  let line = 1;
  let pos = 0;
  for (const span of spans) {
    for (let k = text.indexOf('\n', pos); k !== -1 && k < span.start; k = text.indexOf('\n', k + 1)) line++;
    pos = span.start;
    out.push(line);
  }
  return out;
}

function listLines(lines: readonly number[]): string {
  const shown = lines.slice(0, MAX_LISTED_LINES).join(', ');
  return lines.length > MAX_LISTED_LINES ? `${shown}, … (${lines.length - MAX_LISTED_LINES} more)` : shown;
}

/** The line ending new_string gets: whatever the replaced span uses, else the file's dominant one. */
function eolFor(spanText: string, fileEol: Eol | undefined): Eol | undefined {
  if (spanText.includes('\r\n')) return '\r\n';
  if (spanText.includes('\n')) return '\n';
  return fileEol;
}

function looksLineNumbered(s: string): boolean {
  const nonEmpty = s.split(/\r?\n/).filter((l) => l.trim().length > 0);
  return nonEmpty.length > 0 && nonEmpty.every((l) => /^\s*\d+(\t|→|: | \| )/.test(l));
}

function noMatch(text: string, edit: EditSpec, label: string): ToolFailure {
  const parts = [`old_string was not found in ${label}.`];
  const tolerant = edit.replace_all ? findSpans(text, edit.old_string, 'tolerant', false) : [];
  if (tolerant.length > 0) {
    parts.push(
      `replace_all needs the exact text; a whitespace/quote-insensitive match exists at line(s) ${listLines(lineNumbers(text, tolerant))}.`,
    );
  }
  const fileLines = splitLines(text);
  const regions = findSimilarRegions(text, edit.old_string);
  if (regions.length === 0) parts.push('Nothing similar was found in the file.');
  for (const [i, r] of regions.entries()) {
    const where = r.startLine === r.endLine ? `line ${r.startLine}` : `lines ${r.startLine}-${r.endLine}`;
    parts.push(
      `${i === 0 ? 'Most similar' : 'Also similar'}: ${where} (${Math.round(r.score * 100)}% similar):\n${excerpt(fileLines, r.startLine, r.endLine)}`,
    );
  }
  const suggestion = looksLineNumbered(edit.old_string)
    ? 'old_string seems to include line-number prefixes from Read output; pass only the file text itself.'
    : regions.length > 0
      ? 'Copy the exact current text (without the line-number prefix) from the region above into old_string and retry.'
      : 'Read the file again to see its current content, then retry with text copied from it.';
  return new ToolFailure('NO_MATCH', parts.join('\n'), suggestion);
}

/**
 * Apply one edit. Exact match first; then CRLF/LF-insensitive; then (single replacement only)
 * tolerant. The first level that finds anything decides: a level that finds two places is ambiguous
 * even if a stricter reading elsewhere would be unique.
 */
export function applyEdit(
  text: string,
  fileEol: Eol | undefined,
  edit: EditSpec,
  label: string,
): AppliedEdit {
  if (edit.old_string.length === 0) {
    throw new ToolFailure(
      'INVALID_PARAM',
      `old_string is empty for ${label}.`,
      'Give the exact text to replace. To create a file or replace all of its content, use Write.',
    );
  }
  if (edit.old_string === edit.new_string) {
    throw new ToolFailure(
      'INVALID_PARAM',
      `old_string and new_string are identical for ${label}: the edit would change nothing.`,
      'Make new_string the text you want instead, or skip this edit.',
    );
  }
  const replaceAll = edit.replace_all === true;
  const levels: MatchLevel[] = replaceAll ? ['exact', 'eol'] : ['exact', 'eol', 'tolerant'];
  for (const level of levels) {
    const spans = findSpans(text, edit.old_string, level, !replaceAll);
    if (spans.length === 0) continue;
    const lines = lineNumbers(text, spans);
    if (spans.length > 1 && !replaceAll) {
      throw new ToolFailure(
        'AMBIGUOUS_MATCH',
        `old_string matches ${spans.length} places in ${label}, at lines ${listLines(lines)}.`,
        `Add surrounding lines to old_string so it matches exactly one place, or set replace_all: true to change all ${spans.length}.`,
      );
    }
    let result = '';
    let cursor = 0;
    for (const span of spans) {
      const original = text.slice(span.start, span.end);
      result += text.slice(cursor, span.start) + convertEol(edit.new_string, eolFor(original, fileEol));
      cursor = span.end;
    }
    result += text.slice(cursor);
    if (result === text) {
      throw new ToolFailure(
        'INVALID_PARAM',
        `The edit to ${label} would leave the file unchanged (new_string equals the text it replaces).`,
        'Make new_string the text you want instead, or skip this edit.',
      );
    }
    return { text: result, lines, level };
  }
  throw noMatch(text, edit, label);
}
