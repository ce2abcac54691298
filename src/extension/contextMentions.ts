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
import type { Host } from '../agent/host.ts';
import { scrubEnvironment } from '../agent/tools/bash.ts';
import { toProblems } from './diagnostics.ts';
import { relativeTo } from './editReview/reviewManager.ts';

// `@problems` and `@changes` in a message sent from the panel (or any submit): gathered here, when
// the message is sent, and handed to the session as reminders next to that message (P3).

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

/**
 * The panel's completion puts a chosen `@problems` into the message's mentions like a file; it is one
 * only when the workspace really has a file of that name (then it stays a file mention).
 */
export function fileMentions(mentions: readonly string[], roots: readonly string[]): string[] {
  return mentions.filter((m) => !isContextMention(m) || roots.some((r) => fs.existsSync(path.join(r, m))));
}

/** The reminders for the context mentions in `text`; a failure becomes a reminder saying so. */
export async function mentionReminders(
  text: string,
  files: readonly string[],
  host: Host,
  signal?: AbortSignal,
): Promise<string[]> {
  const gather: Record<ContextMention, () => Promise<string>> = {
    problems: async () => problemsReminder(workspaceProblems(host)),
    changes: async () => changesReminder(await workingTreeChanges(host, signal)),
  };
  const out: string[] = [];
  for (const mention of contextMentionsIn(text, files)) {
    try {
      out.push(await gather[mention]());
    } catch (error) {
      out.push(`The user mentioned @${mention}, but it could not be gathered: ${String(error)}.`);
    }
  }
  return out;
}
