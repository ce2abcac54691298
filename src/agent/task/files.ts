import * as fs from 'node:fs';
import {
  appendContainedFile,
  type ContainedTarget,
  containRecordedPath,
  writeContainedFile,
} from '../safety/paths/containedPath.ts';
import { FEATURE_LIST, type Feature, type FeatureList, PROGRESS, parseFeatureList } from './featureList.ts';
import { showCommitted } from './git.ts';
import { type SessionLine, sessionLineSchema } from './sessionsLog.ts';

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

export function writeTaskFile(workspace: string, rel: string, text: string, mode?: number): void {
  writeContainedFile(taskTarget(workspace, rel), Buffer.from(text), mode !== undefined ? { mode } : {});
}

export function appendLine(workspace: string, rel: string, line: SessionLine): void {
  appendContainedFile(taskTarget(workspace, rel), `${JSON.stringify(sessionLineSchema.parse(line))}\n`);
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
