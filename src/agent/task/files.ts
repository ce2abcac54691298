import * as fs from 'node:fs';
import {
  appendContainedFile,
  type ContainedTarget,
  containRecordedPath,
  writeContainedFile,
} from '../safety/paths/containedPath.ts';
import {
  FEATURE_LIST,
  type Feature,
  type FeatureList,
  PROGRESS,
  parseFeatureList,
  TASK_DIR,
} from './featureList.ts';
import { showCommitted } from './git.ts';
import { type SessionLine, sessionLineSchema } from './sessionsLog.ts';
import { TASK_FILES } from '../trust/items.ts';
import { sha256, stateLedger } from '../trust/ledger.ts';
import { createTrustRoom } from '../trust/room.ts';

// The harness's file chores: reading task files, appending to progress.md and sessions.jsonl.
// `keel-task/` lives in the workspace, which the repository (and every command the agent runs)
// controls: a planted `keel-task -> ~` or `progress.md -> ~/.bashrc` must not turn a harness write
// into a write elsewhere, so every task file goes through the contained-path helper.

export class TaskError extends Error {}

/** Where a task file is, checked now: inside the workspace, no symlink on the way or at the file. */
export function taskTarget(workspace: string, rel: string): ContainedTarget {
  const result = containRecordedPath(workspace, rel);
  if (!result.ok) throw new TaskError(`Refusing ${rel}: ${result.error.message}`);
  return result.target;
}

export const read = (workspace: string, rel: string): string | undefined => {
  const target = taskTarget(workspace, rel);
  try {
    return fs.readFileSync(target.abs, 'utf8');
  } catch {
    return undefined;
  }
};

/**
 * Appends a record and notes its hash in the state ledger outside the workspace: the harness acts
 * only on records it wrote itself (a command in a session can append to the file as well).
 */
export function appendLine(workspace: string, rel: string, line: SessionLine): void {
  const text = JSON.stringify(sessionLineSchema.parse(line));
  const target = taskTarget(workspace, rel);
  stateLedger(workspace).recordLine(rel, text);
  appendContainedFile(target, `${text}\n`);
}

/** The records of `rel` that the harness wrote here; forged or foreign lines are left out. */
export function readOwnLines(workspace: string, rel: string): string {
  const own = stateLedger(workspace).ownLines(rel);
  return (read(workspace, rel) ?? '')
    .split('\n')
    .filter((line) => own.has(sha256(line)))
    .join('\n');
}

/** Writes a task file the harness owns and records its hash (trust/items.ts reads it back). */
export function writeOwnTaskFile(workspace: string, rel: string, text: string): void {
  const target = taskTarget(workspace, rel);
  stateLedger(workspace).recordFile(rel, text);
  writeContainedFile(target, Buffer.from(text));
}

export function writeTaskFile(workspace: string, rel: string, text: string, mode?: number): void {
  writeContainedFile(taskTarget(workspace, rel), Buffer.from(text), mode !== undefined ? { mode } : {});
}

/** The task files as they are now are Keel's (written in a session the user ran): recorded as such. */
export function recordTaskFiles(workspace: string): void {
  for (const rel of TASK_FILES) {
    const text = read(workspace, rel);
    if (text !== undefined) stateLedger(workspace).recordFile(rel, text);
  }
}

/**
 * `keel task run` on a task Keel did not set up here (it came with the repository) first needs the
 * user's approval of its exact init.sh and feature list: both decide what runs.
 */
export function assertTaskTrusted(workspace: string): void {
  const room = createTrustRoom({ root: workspace });
  const item = room.pending().find((i) => i.kind === 'task');
  if (item)
    throw new TaskError(
      `${TASK_DIR}/ was not set up by Keel on this machine (it came with the repository, or changed outside a Keel session): ${item.grants.join('; ')}. Review it and approve it with \`keel trust\`, then run keel task run again.`,
    );
  // Approved as it is now: from here on the harness keeps it, and records each version it writes.
  recordTaskFiles(workspace);
}

/** The list the agent may not change: the committed one (the working file when nothing is committed). */
export function committedList(workspace: string): FeatureList {
  const text = showCommitted(workspace, FEATURE_LIST) ?? read(workspace, FEATURE_LIST);
  if (text === undefined)
    throw new TaskError(`No ${FEATURE_LIST} in ${workspace}. Start the task with: keel task init "SPEC"`);
  return parseFeatureList(text);
}

export function stamp(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function appendProgress(workspace: string, lines: string[]): void {
  const existing = read(workspace, PROGRESS) ?? '# Progress\n';
  writeTaskFile(workspace, PROGRESS, `${existing.replace(/\n*$/, '\n')}\n${lines.join('\n')}\n`);
}

export function featureLabel(f: Feature | undefined): string {
  return f ? `${f.id} (${f.category}) — ${f.description}` : '(none)';
}

export function clip(text: string, max: number): string {
  const t = text.trim();
  return t.length <= max ? t : `${t.slice(0, max)}…`;
}
