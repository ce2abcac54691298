import type { Problem } from '../host.ts';
import { wrapUntrusted } from '../safety/untrusted.ts';
import { formatProblem } from '../tools/editing/problems.ts';

// `@problems`, `@changes` (here), `@terminal` and `@selection` (editorMentions.ts) in a user's message: what the editor knows right now (its diagnostics,
// the working-tree diff), captured when the message is sent and given to the model as a reminder
// next to that message (P3: dynamic context after the last breakpoint, never in the prefix). The
// host gathers; this module decides the words and the caps, so every host says the same thing.

export const CONTEXT_MENTIONS = ['problems', 'changes', 'terminal', 'selection'] as const;
export type ContextMention = (typeof CONTEXT_MENTIONS)[number];

export function isContextMention(name: string): name is ContextMention {
  return (CONTEXT_MENTIONS as readonly string[]).includes(name);
}

/** The context mentions offered when the user has typed `@query` (before the file names). */
export function contextMentionCompletions(query: string): string[] {
  return CONTEXT_MENTIONS.filter((name) => name.startsWith(query.toLowerCase()));
}

/** At most this many problem lines in an @problems reminder. */
export const MAX_MENTION_PROBLEMS = 50;
/** An @changes diff is cut after this many lines or characters (the head is kept). */
export const MAX_DIFF_LINES = 400;
export const MAX_DIFF_CHARS = 20_000;

/**
 * The context mentions in `text`: `@problems` / `@changes` as a word of their own. A file the user
 * picked with that very name (`files` holds the chosen paths) stays a file mention.
 */
export function contextMentionsIn(text: string, files: readonly string[] = []): ContextMention[] {
  const found: ContextMention[] = [];
  for (const name of CONTEXT_MENTIONS) {
    if (files.includes(name)) continue;
    if (new RegExp(`(^|\\s)@${name}(?![\\w./-])`).test(text)) found.push(name);
  }
  return found;
}

export interface FileProblems {
  /** Workspace-relative path. */
  readonly display: string;
  readonly problems: readonly Problem[];
}

/** The @problems reminder: errors first, then warnings, by path and line; capped with a count. */
export function problemsReminder(files: readonly FileProblems[], cap = MAX_MENTION_PROBLEMS): string {
  const lines = files
    .flatMap((f) => f.problems.map((p) => ({ f, p })))
    .sort(
      (a, b) =>
        (a.p.severity === b.p.severity ? 0 : a.p.severity === 'error' ? -1 : 1) ||
        a.f.display.localeCompare(b.f.display) ||
        a.p.line - b.p.line ||
        a.p.column - b.p.column,
    )
    .map(({ f, p }) => formatProblem(f.display, p));
  if (lines.length === 0)
    return 'The user mentioned @problems: the editor reports no errors or warnings in the workspace right now.';
  const errors = files.reduce((n, f) => n + f.problems.filter((p) => p.severity === 'error').length, 0);
  const shown = lines.slice(0, cap);
  if (lines.length > cap) shown.push(`… and ${lines.length - cap} more`);
  // Messages quote the code they complain about: repository text, so data, not instructions.
  return `The user mentioned @problems: the editor's current problems (${errors} errors, ${lines.length - errors} warnings), as its language servers report them:\n${wrapUntrusted(shown.join('\n'), { source: 'diagnostics' })}`;
}

export interface WorkingTreeChanges {
  /** `git diff HEAD` output (staged and unstaged changes of tracked files). */
  readonly diff: string;
  /** Untracked files (not ignored), workspace-relative. */
  readonly untracked: readonly string[];
  /** Set when there is no diff to show: not a git repository, git missing or failing. */
  readonly unavailable?: string;
}

function capDiff(diff: string): string {
  const lines = diff.split('\n');
  let kept = lines.slice(0, MAX_DIFF_LINES).join('\n');
  if (kept.length > MAX_DIFF_CHARS) kept = kept.slice(0, MAX_DIFF_CHARS);
  if (kept.length === diff.length) return diff;
  const rest = lines.length - kept.split('\n').length;
  return `${kept}\n… diff cut here (${rest} more lines); run \`git diff HEAD -- <path>\` for a file's full diff.`;
}

/** The @changes reminder: the working-tree diff against HEAD (capped) and the untracked files. */
export function changesReminder(changes: WorkingTreeChanges): string {
  if (changes.unavailable)
    return `The user mentioned @changes, but there is no working-tree diff: ${changes.unavailable}.`;
  if (changes.diff.trim() === '' && changes.untracked.length === 0)
    return 'The user mentioned @changes: the working tree has no uncommitted changes.';
  const body: string[] = [];
  if (changes.diff.trim() !== '') body.push(capDiff(changes.diff));
  if (changes.untracked.length > 0) {
    const list = changes.untracked.slice(0, 50).map((p) => `- ${p}`);
    if (changes.untracked.length > 50) list.push(`… and ${changes.untracked.length - 50} more`);
    body.push(`Untracked files (not in the diff; Read them if they matter):\n${list.join('\n')}`);
  }
  // The diff and the file names are repository text: data, not instructions.
  return `The user mentioned @changes: the uncommitted changes in the working tree (git diff HEAD):\n${wrapUntrusted(body.join('\n'), { source: 'git-diff' })}`;
}
