import { wrapUntrusted } from '../safety/untrusted.ts';

// `@terminal`, `@selection`, `@path:12-20` and `@folder/` in a user's message: what the editor shows
// right now, captured when the message is sent and given to the model as a reminder next to that
// message (P3). The host gathers; this module decides the words and the caps.
//
// Threat: terminal output, selected code and file names are text the user did not write for the model
// (a command's output, a file from the repository can carry a prompt injection). All of it reaches the
// model wrapped as untrusted data, never as part of the user's own words.

/** A terminal's output is cut to its last this-many characters / lines (the tail is what matters). */
export const MAX_TERMINAL_CHARS = 16_000;
export const MAX_TERMINAL_LINES = 300;
/** A selection or line range is cut after this many lines or characters (the head is kept). */
export const MAX_SELECTION_LINES = 400;
export const MAX_SELECTION_CHARS = 20_000;
/** A folder listing shows at most this many entries. */
export const MAX_FOLDER_ENTRIES = 200;

// CSI (colours, cursor moves), OSC (titles, shell-integration marks, ended by BEL or ST), other
// two-byte escapes, and the control characters a terminal would not print.
const ESCAPES =
  /\x1b\][\s\S]*?(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[PX^_][\s\S]*?\x1b\\|\x1b[@-Z\\-_]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;

/** A terminal's raw output as text: escape sequences gone, CRLF as LF, overwritten lines collapsed. */
export function terminalText(raw: string): string {
  return raw
    .replace(/\r\n/g, '\n')
    .replace(ESCAPES, '')
    .split('\n')
    .map((line) => {
      // A carriage return rewinds the line (progress bars): what shows is the part written last.
      const parts = line.split('\r').filter((p) => p.length > 0);
      return parts.at(-1) ?? '';
    })
    .join('\n');
}

function tail(text: string, maxLines: number, maxChars: number): { text: string; cut: number } {
  const lines = text.split('\n');
  let kept = lines.slice(-maxLines).join('\n');
  if (kept.length > maxChars) kept = kept.slice(kept.length - maxChars);
  return { text: kept, cut: text.length === kept.length ? 0 : lines.length - kept.split('\n').length };
}

function head(text: string, maxLines: number, maxChars: number): { text: string; cut: number } {
  const lines = text.split('\n');
  let kept = lines.slice(0, maxLines).join('\n');
  if (kept.length > maxChars) kept = kept.slice(0, maxChars);
  return { text: kept, cut: text.length === kept.length ? 0 : lines.length - kept.split('\n').length };
}

export interface TerminalOutput {
  /** The terminal's name as VS Code shows it. */
  readonly terminal: string;
  /** The command line as shell integration reported it, when it did. */
  readonly command?: string;
  readonly cwd?: string;
  readonly exitCode?: number;
  /** Raw output of the command (escape sequences are removed here). */
  readonly output: string;
  /** The command is still running: the output so far. */
  readonly running?: boolean;
}

// VS Code hands a command's output to extensions in batches, and drops the last one when the
// command ends within a few tens of milliseconds of printing (seen in VS Code 1.139: an `echo`
// alone arrives empty). "No output" would then be a claim Keel cannot make.
function noOutput(out: TerminalOutput): string {
  if (out.running) return '(no output yet)';
  return '(no output reached Keel: VS Code can drop the output of a command that ends within milliseconds, so it may have printed something; run it with Bash to see)';
}

/** The @terminal reminder: the last command of the active terminal and its output (tail, capped). */
export function terminalReminder(out: TerminalOutput | { readonly unavailable: string }): string {
  if ('unavailable' in out)
    return `The user mentioned @terminal, but there is no terminal output: ${out.unavailable}.`;
  const text = terminalText(out.output).replace(/\n+$/, '');
  const { text: shown, cut } = tail(text, MAX_TERMINAL_LINES, MAX_TERMINAL_CHARS);
  const facts = [
    out.command ? `command \`${out.command.replace(/`/g, "'").slice(0, 500)}\`` : 'the last command',
    out.cwd ? `in ${out.cwd}` : '',
    out.running
      ? 'still running (output so far)'
      : out.exitCode !== undefined
        ? `exit code ${out.exitCode}`
        : '',
  ].filter(Boolean);
  const body = `${cut > 0 ? `… ${cut} earlier lines cut\n` : ''}${shown || noOutput(out)}`;
  return `The user mentioned @terminal: the output of ${facts.join(', ')} in the terminal "${out.terminal}":\n${wrapUntrusted(body, { source: 'terminal', ...(out.command ? { command: out.command.slice(0, 500) } : {}) })}`;
}

export interface EditorSelection {
  /** Workspace-relative path (or the document's URI when it is not a file in the workspace). */
  readonly path: string;
  /** 1-based, inclusive. */
  readonly startLine: number;
  readonly endLine: number;
  readonly languageId?: string;
  readonly text: string;
}

function linesLabel(s: { startLine: number; endLine: number }): string {
  return s.startLine === s.endLine ? `line ${s.startLine}` : `lines ${s.startLine}-${s.endLine}`;
}

/** The reminder for a selection (`@selection`) or a line range (`@path:12-20`): the text, capped. */
export function selectionReminder(
  mention: string,
  sel: EditorSelection | { readonly unavailable: string },
): string {
  if ('unavailable' in sel) return `The user mentioned ${mention}, but ${sel.unavailable}.`;
  const { text, cut } = head(sel.text.replace(/\n$/, ''), MAX_SELECTION_LINES, MAX_SELECTION_CHARS);
  const more = cut > 0 ? `\n… ${cut} more lines cut; Read ${sel.path} for the rest` : '';
  const where = `${sel.path}:${sel.startLine}${sel.endLine !== sel.startLine ? `-${sel.endLine}` : ''}`;
  // The code is the repository's text: data to work on, not instructions.
  return `The user mentioned ${mention}: ${linesLabel(sel)} of ${sel.path} (${where}${sel.languageId ? `, ${sel.languageId}` : ''}):\n${wrapUntrusted(`${text}${more}`, { source: 'selection', path: sel.path })}`;
}

export interface RangeMention {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
}

/** `src/a.ts:12-20` or `src/a.ts:12` → the path and the 1-based line range; otherwise undefined. */
export function parseRangeMention(mention: string): RangeMention | undefined {
  const match = /^(.+?):(\d{1,9})(?:-(\d{1,9}))?$/.exec(mention);
  if (!match) return undefined;
  const start = Number(match[2]);
  const end = match[3] === undefined ? start : Number(match[3]);
  if (start < 1 || end < start) return undefined;
  return { path: match[1]!, startLine: start, endLine: end };
}

/** The mention text for a selection: `path:12-20`, or `path:12` for one line. */
export function rangeMentionText(sel: { path: string; startLine: number; endLine: number }): string {
  return `${sel.path}:${sel.startLine}${sel.endLine !== sel.startLine ? `-${sel.endLine}` : ''}`;
}

export interface FolderListing {
  /** Workspace-relative folder, ending in '/'. */
  readonly path: string;
  /** Entry names; sub-folders end in '/'. */
  readonly entries: readonly string[];
}

/** The `@folder/` reminder: the folder's entries (one level, capped). */
export function folderReminder(listing: FolderListing | { path: string; unavailable: string }): string {
  if ('unavailable' in listing)
    return `The user mentioned @${listing.path}, but it cannot be listed: ${listing.unavailable}.`;
  const entries = [...listing.entries].sort((a, b) =>
    a.endsWith('/') === b.endsWith('/') ? a.localeCompare(b) : a.endsWith('/') ? -1 : 1,
  );
  const shown = entries.slice(0, MAX_FOLDER_ENTRIES);
  if (entries.length > shown.length) shown.push(`… and ${entries.length - shown.length} more`);
  const body = shown.length > 0 ? shown.join('\n') : '(empty)';
  // File names are repository text too.
  return `The user mentioned the folder @${listing.path} (${entries.length} entries; Read or Glob inside it as needed):\n${wrapUntrusted(body, { source: 'folder-listing', path: listing.path })}`;
}
