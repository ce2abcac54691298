import { ok, type ToolResult } from '../protocol.ts';
import { buildDiff, diffSnippet } from './diff.ts';
import type { MatchLevel } from './normalize.ts';

// The success result every edit tool returns: a short deterministic line for the model (plus a capped
// diff snippet so it can check its own work) and the full diff for UIs.

export interface EditResultData {
  readonly path: string;
  readonly action: 'create' | 'modify';
  readonly replacements: number;
  readonly linesAdded: number;
  readonly linesRemoved: number;
  readonly firstChangedLine: number | undefined;
  /** True when some match needed whitespace/quote/dash normalisation. */
  readonly tolerant: boolean;
}

function countLines(text: string): number {
  if (text.length === 0) return 0;
  const breaks = text.split('\n').length - 1;
  return text.endsWith('\n') ? breaks : breaks + 1;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export function editResult(options: {
  readonly verb: string;
  readonly display: string;
  readonly action: 'create' | 'modify';
  readonly before: string;
  readonly after: string;
  /** Lines of the replacements; empty for Write. */
  readonly lines: readonly number[];
  readonly levels: readonly MatchLevel[];
  readonly edits?: number;
}): ToolResult<EditResultData> {
  const summary = buildDiff(options.display, options.before, options.after);
  const tolerant = options.levels.includes('tolerant');
  const lineList = [...new Set(options.lines)].sort((a, b) => a - b);
  const where =
    lineList.length === 0
      ? ''
      : lineList.length === 1
        ? ` at line ${lineList[0]}`
        : lineList.length <= 10
          ? ` at lines ${lineList.join(', ')}`
          : ` at lines ${lineList.slice(0, 10).join(', ')}, …`;
  const what =
    options.lines.length > 0
      ? `${options.edits !== undefined ? `${plural(options.edits, 'edit')}, ` : ''}${plural(options.lines.length, 'replacement')}${where}`
      : options.action === 'create'
        ? `created (${plural(countLines(options.after), 'line')})`
        : 'overwritten';
  let text = `${options.verb} ${options.display}: ${what} (+${summary.added} −${summary.removed} lines).`;
  if (tolerant) {
    text +=
      "\nNote: old_string matched only after normalising whitespace, quotes or dashes; the file's own text at that spot was replaced and everything else is unchanged.";
  }
  const snippet = options.action === 'modify' ? diffSnippet(summary.diff) : '';
  if (snippet) text += `\n${snippet}`;
  return ok<EditResultData>(
    {
      path: options.display,
      action: options.action,
      replacements: options.lines.length,
      linesAdded: summary.added,
      linesRemoved: summary.removed,
      firstChangedLine: summary.firstChangedLine,
      tolerant,
    },
    text,
    { replacements: options.lines.length, lines_added: summary.added, lines_removed: summary.removed },
    { diff: summary.diff, firstChangedLine: summary.firstChangedLine ?? 1, path: options.display },
  );
}
