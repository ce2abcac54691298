import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  type ContextMention,
  changesReminder,
  contextMentionsIn,
  type FileProblems,
  isContextMention,
  problemsReminder,
  type WorkingTreeChanges,
} from '../agent/context/mentionContext.ts';
import {
  type EditorSelection,
  type FolderListing,
  folderReminder,
  parseRangeMention,
  type RangeMention,
  selectionReminder,
  type TerminalOutput,
  terminalReminder,
} from '../agent/context/editorMentions.ts';
import type { Host } from '../agent/host.ts';
import { createPathGuard } from '../agent/safety/paths/pathGuard.ts';
import { scrubEnvironment } from '../agent/tools/bash.ts';
import { toProblems } from './diagnostics.ts';
import { relativeTo } from './editReview/reviewManager.ts';
import { selectionContext } from './taskPrompts.ts';

// `@problems`, `@changes`, `@terminal`, `@selection`, a chosen line range (`@src/a.ts:3-9`, from
// "Add Selection to Chat") and a chosen folder (`@src/`) in a message sent from the panel (or any
// submit): gathered here, when the message is sent, and handed to the session as reminders next to
// that message (P3). Paths go through the core's path guard: nothing outside the workspace is read.

function isInside(dir: string, p: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Every error and warning VS Code knows for files in the workspace (Keel's own .keel/ left out). */
export function workspaceProblems(host: Host): FileProblems[] {
  const roots = host.workspace.roots;
  const out: FileProblems[] = [];
  for (const [uri, diagnostics] of vscode.languages.getDiagnostics()) {
    if (uri.scheme !== 'file') continue;
    const p = uri.fsPath;
    if (!roots.some((r) => isInside(r, p)) || isInside(host.stateDir, p)) continue;
    const problems = toProblems(diagnostics);
    if (problems.length > 0) out.push({ display: relativeTo(roots, p), problems });
  }
  return out;
}

// git is run like a command of the model's (the session's shell: sandboxed where there is one),
// with the repository's own program hooks turned off: no fsmonitor, external diff or textconv.
// Without HEAD (no commit yet) the diff is against the empty tree.
const GIT = 'git -c core.fsmonitor=false -c core.untrackedCache=false --no-pager';
const CHANGES_COMMAND = [
  `base=$(${GIT} rev-parse -q --verify HEAD || echo 4b825dc642cb6eb9a060e54bf8d69288fbee4904)`,
  // --relative: this folder's changes only, with paths as the model uses them (workspace-relative).
  `${GIT} diff "$base" --relative --no-color --no-ext-diff --no-textconv`,
  "printf '\\0'",
  `${GIT} ls-files --others --exclude-standard`,
].join(' && ');

export async function workingTreeChanges(host: Host, signal?: AbortSignal): Promise<WorkingTreeChanges> {
  const diffs: string[] = [];
  const untracked: string[] = [];
  const failures: string[] = [];
  for (const root of host.workspace.roots) {
    const result = await host.shell.run({
      command: CHANGES_COMMAND,
      cwd: root,
      env: scrubEnvironment(process.env),
      timeoutMs: 15_000,
      sandbox: 'on',
      ...(signal ? { signal } : {}),
    });
    if (result.exitCode !== 0) {
      failures.push(
        /not a git repository/i.test(result.stderr) ? 'not a git repository' : result.stderr.trim(),
      );
      continue;
    }
    const [diff = '', files = ''] = result.stdout.split('\0');
    diffs.push(diff);
    for (const f of files.split('\n').filter(Boolean))
      untracked.push(relativeTo(host.workspace.roots, path.join(root, f)));
  }
  if (diffs.length === 0)
    return { diff: '', untracked: [], unavailable: failures[0]?.slice(0, 300) || 'git failed' };
  return { diff: diffs.join(''), untracked };
}

const existsIn = (roots: readonly string[], m: string) => roots.some((r) => fs.existsSync(path.join(r, m)));

/**
 * The chosen mentions that are files to read. A chosen `@problems` is one only when the workspace
 * really has a file of that name; a line range (`src/a.ts:3-9`) or a folder (`src/`) is not a file
 * to read: each becomes a reminder of its own (mentionReminders).
 */
export function fileMentions(mentions: readonly string[], roots: readonly string[]): string[] {
  return mentions.filter((m) => {
    if (isContextMention(m)) return existsIn(roots, m);
    if (m.endsWith('/')) return false;
    return !(parseRangeMention(m) && !existsIn(roots, m));
  });
}

/** Where the editor's own context comes from (the terminal recorder lives as long as the extension). */
export interface EditorSources {
  readonly terminal?: () => TerminalOutput | { unavailable: string };
}

/**
 * The reminders for the context mentions in `text` and the chosen line-range and folder mentions;
 * a failure becomes a reminder saying so.
 */
export async function mentionReminders(
  text: string,
  chosen: readonly string[],
  host: Host,
  sources: EditorSources = {},
  signal?: AbortSignal,
): Promise<string[]> {
  const roots = host.workspace.roots;
  const files = fileMentions(chosen, roots);
  const gather: Record<ContextMention, () => Promise<string>> = {
    problems: async () => problemsReminder(workspaceProblems(host)),
    changes: async () => changesReminder(await workingTreeChanges(host, signal)),
    terminal: async () =>
      terminalReminder(sources.terminal?.() ?? { unavailable: 'the terminal is not being recorded' }),
    selection: async () => selectionReminder('@selection', activeSelection(roots)),
  };
  const out: string[] = [];
  for (const mention of contextMentionsIn(text, files)) {
    try {
      out.push(await gather[mention]());
    } catch (error) {
      out.push(`The user mentioned @${mention}, but it could not be gathered: ${String(error)}.`);
    }
  }
  for (const m of chosen) {
    if (files.includes(m) || isContextMention(m)) continue;
    try {
      const range = parseRangeMention(m);
      if (m.endsWith('/')) out.push(folderReminder(folderListing(m, host)));
      else if (range) out.push(selectionReminder(`@${m}`, await rangeText(range, host)));
    } catch (error) {
      out.push(`The user mentioned @${m}, but it could not be gathered: ${String(error)}.`);
    }
  }
  return out;
}

/** A workspace-relative path (any root) to its canonical path inside the workspace, or why not. */
function resolveInWorkspace(rel: string, host: Host): { path: string } | { unavailable: string } {
  const guard = createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir });
  const tries = path.isAbsolute(rel) ? [rel] : host.workspace.roots.map((r) => path.join(r, rel));
  let refused: string | undefined;
  for (const candidate of tries) {
    const resolved = guard.resolve(candidate);
    if (!resolved.ok) {
      refused ??= resolved.error.message;
      continue;
    }
    if (fs.existsSync(resolved.path)) return { path: resolved.path };
  }
  return { unavailable: refused ?? 'no such file or folder in the workspace' };
}

/** The active editor's selection (the current line when nothing is selected). */
function activeSelection(roots: readonly string[]): EditorSelection | { unavailable: string } {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) return { unavailable: 'no editor is open' };
  return selectionContext(editor, roots);
}

async function rangeText(
  range: RangeMention,
  host: Host,
): Promise<EditorSelection | { unavailable: string }> {
  const where = resolveInWorkspace(range.path, host);
  if ('unavailable' in where) return { unavailable: `${range.path}: ${where.unavailable}` };
  if (fs.statSync(where.path).isDirectory()) return { unavailable: `${range.path} is a folder` };
  // The editor's text when the file is open (unsaved edits included), else the file on disk.
  const open = vscode.workspace.textDocuments.find(
    (d) => d.uri.scheme === 'file' && d.uri.fsPath === where.path,
  );
  const all = (open?.getText() ?? fs.readFileSync(where.path, 'utf8')).split(/\r?\n/);
  if (range.startLine > all.length) return { unavailable: `${range.path} has only ${all.length} lines` };
  const endLine = Math.min(range.endLine, all.length);
  return {
    path: range.path,
    startLine: range.startLine,
    endLine,
    ...(open ? { languageId: open.languageId } : {}),
    text: all.slice(range.startLine - 1, endLine).join('\n'),
  };
}

function folderListing(mention: string, host: Host): FolderListing | { path: string; unavailable: string } {
  const where = resolveInWorkspace(mention.replace(/\/+$/, '') || '.', host);
  if ('unavailable' in where) return { path: mention, unavailable: where.unavailable };
  if (!fs.statSync(where.path).isDirectory()) return { path: mention, unavailable: 'it is not a folder' };
  const entries = fs
    .readdirSync(where.path, { withFileTypes: true })
    .filter((e) => e.name !== '.git' && path.join(where.path, e.name) !== host.stateDir)
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name));
  return { path: mention, entries };
}
