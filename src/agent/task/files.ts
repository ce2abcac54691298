import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  FEATURE_LIST,
  type Feature,
  type FeatureList,
  PROGRESS,
  parseFeatureList,
  taskPath,
} from './featureList.ts';
import { showCommitted } from './git.ts';
import { type SessionLine, sessionLineSchema } from './sessionsLog.ts';

// The harness's file chores: reading task files, appending to progress.md and sessions.jsonl.

export class TaskError extends Error {}

export const read = (workspace: string, rel: string): string | undefined => {
  try {
    return fs.readFileSync(taskPath(workspace, rel), 'utf8');
  } catch {
    return undefined;
  }
};

export function appendLine(workspace: string, rel: string, line: SessionLine): void {
  const file = taskPath(workspace, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.appendFileSync(file, `${JSON.stringify(sessionLineSchema.parse(line))}\n`);
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
  const file = taskPath(workspace, PROGRESS);
  const existing = read(workspace, PROGRESS) ?? '# Progress\n';
  fs.writeFileSync(file, `${existing.replace(/\n*$/, '\n')}\n${lines.join('\n')}\n`);
}

export function featureLabel(f: Feature | undefined): string {
  return f ? `${f.id} (${f.category}) — ${f.description}` : '(none)';
}

export function clip(text: string, max: number): string {
  const t = text.trim();
  return t.length <= max ? t : `${t.slice(0, max)}…`;
}
