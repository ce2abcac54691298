import type * as vscode from 'vscode';
import { relativeTo } from './editReview/reviewManager.ts';

// The text Keel's task commands send. The selection travels with its file and line range so the
// agent can Read around it; file contents otherwise stay out of the prompt (P3).

export interface SelectionContext {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
  readonly languageId: string;
  readonly text: string;
}

export function selectionContext(editor: vscode.TextEditor, roots: readonly string[]): SelectionContext {
  const doc = editor.document;
  const sel = editor.selection;
  // An empty selection means "this line", like VS Code's own copy/cut.
  const range = sel.isEmpty ? doc.lineAt(sel.active.line).range : sel;
  const endLine =
    range.end.character === 0 && range.end.line > range.start.line ? range.end.line - 1 : range.end.line;
  return {
    path: doc.uri.scheme === 'file' ? relativeTo(roots, doc.uri.fsPath) : doc.uri.toString(),
    startLine: range.start.line + 1,
    endLine: endLine + 1,
    languageId: doc.languageId,
    text: doc.getText(range),
  };
}

function fence(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return '`'.repeat(longest + 1);
}

export function selectionBlock(ctx: SelectionContext): string {
  const lines =
    ctx.startLine === ctx.endLine ? `line ${ctx.startLine}` : `lines ${ctx.startLine}-${ctx.endLine}`;
  const f = fence(ctx.text);
  return `Selection from ${ctx.path} (${lines}):\n${f}${ctx.languageId}\n${ctx.text}\n${f}`;
}

export function askPrompt(question: string, ctx: SelectionContext): string {
  return `${question.trim() || 'Explain this code.'}\n\n${selectionBlock(ctx)}`;
}

export function explainPrompt(ctx: SelectionContext): string {
  return `Explain what this code does, how it fits into the surrounding code, and anything surprising about it.\n\n${selectionBlock(ctx)}`;
}

export function testsPrompt(ctx: SelectionContext): string {
  return `Write tests for this code, following the project's existing test framework and conventions (find them first). Run the tests when you are done.\n\n${selectionBlock(ctx)}`;
}

const SEVERITY = ['error', 'warning', 'info', 'hint'] as const;

export function fixProblemsPrompt(rel: string, diagnostics: readonly vscode.Diagnostic[]): string {
  const lines = diagnostics.map((d) => {
    const where = `${d.range.start.line + 1}:${d.range.start.character + 1}`;
    const source = d.source
      ? ` [${d.source}${d.code !== undefined ? ` ${typeof d.code === 'object' ? d.code.value : d.code}` : ''}]`
      : '';
    return `- ${where} ${SEVERITY[d.severity] ?? 'problem'}: ${d.message}${source}`;
  });
  return `Fix the problems VS Code reports in ${rel}. Read the file first; change only what the fixes need.\n\nProblems:\n${lines.join('\n')}`;
}

export const REVIEW_CHANGES_PROMPT =
  'Review the uncommitted changes in this repository: look at `git status` and `git diff` (staged and unstaged), then report bugs, risky changes, missing tests and style problems, most important first, with file and line. Do not change any files.';

const MAX_STATUS_LINES = 60;

/** The review prompt with `git status --porcelain` attached (names only, no contents: P3). */
export function reviewChangesPrompt(porcelain: string | undefined): string {
  const lines = (porcelain ?? '').split('\n').filter((l) => l.trim());
  if (lines.length === 0) return REVIEW_CHANGES_PROMPT;
  const shown = lines.slice(0, MAX_STATUS_LINES);
  const more = lines.length > shown.length ? `\n… and ${lines.length - shown.length} more` : '';
  const f = fence(shown.join('\n'));
  return `${REVIEW_CHANGES_PROMPT}\n\nChanged files (git status --porcelain):\n${f}\n${shown.join('\n')}${more}\n${f}`;
}
