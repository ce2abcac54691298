import * as fs from 'node:fs';
import { type ContainedTarget, containRecordedPath } from '../safety/paths/containedPath.ts';
import {
  type ChangeRecord,
  type CheckpointStore,
  type FileState,
  openCheckpointStore,
  readForkOrigin,
  type SkippedRecord,
  sameState,
  sessionCheckpointDir,
  sha256,
} from './store.ts';

// Restore: every file Keel (or a command it ran) changed at or after prompt N goes back to what it
// was before prompt N. A file whose current content is not what Keel left there is someone else's
// work now: it is reported as a conflict and left alone (unless forced). Files Keel never changed
// are never opened for writing. Recorded paths are the repository's as much as Keel's (a repo can
// commit `.keel/checkpoints`, a folder can become a symlink after recording): each one is contained
// (containedPath.ts) when planned and again right before it is written; a refused one is reported.

export type RestoreAction = 'write' | 'delete' | 'none';
/** `refused`: the recorded path leads outside the workspace, or through a symlink now: never written. */
export type RestoreStatus = 'ok' | 'conflict' | 'unrecoverable' | 'refused';

export interface RestoreItem {
  readonly path: string;
  readonly action: RestoreAction;
  readonly status: RestoreStatus;
  /** Why it is a conflict / unrecoverable, or what will happen. */
  readonly reason: string;
  readonly target: FileState;
  readonly current: FileState;
  /** Prompts (≥ N) whose runs changed this file. */
  readonly prompts: number[];
}

export interface RestorePlan {
  readonly sessionId: string;
  readonly beforePrompt: number;
  readonly items: RestoreItem[];
  /** What the restore cannot undo and the user should know (background jobs' writes). */
  readonly notes: string[];
  /** Record lines that are not valid records (forged or damaged): left out, and reported. */
  readonly skipped: SkippedRecord[];
}

export class RestoreError extends Error {}

/** The prompt is older than the fork this session started from: its files are the parent's to restore. */
export class ForkedEarlierError extends RestoreError {
  constructor(
    readonly parent: string,
    readonly forkedBeforePrompt: number,
    beforePrompt: number,
  ) {
    super(
      `Prompt ${beforePrompt} happened before this session was forked from ${parent} (at prompt ${forkedBeforePrompt}): its files are restored from that session (keel restore ${parent} --before-prompt ${beforePrompt}).`,
    );
  }
}

/** What is at `abs` now, in the same terms the record used (bytes by hash, or a stat signature). */
function currentState(abs: string, like: FileState): FileState {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(abs);
  } catch {
    return { kind: 'absent' };
  }
  if (!stat.isFile())
    return { kind: 'untracked', size: stat.size, mtimeMs: stat.mtimeMs, reason: 'not a file' };
  if (like.kind === 'untracked')
    return { kind: 'untracked', size: stat.size, mtimeMs: stat.mtimeMs, reason: '' };
  return { kind: 'bytes', hash: sha256(fs.readFileSync(abs)), mode: stat.mode & 0o7777 };
}

function describe(state: FileState): string {
  return state.kind === 'absent'
    ? 'absent'
    : state.kind === 'bytes'
      ? state.hash.slice(0, 12)
      : `${state.size} bytes`;
}

/** Where a recorded path may be restored now: inside the root, not in Keel's state, no link on the way. */
export function containRestorePath(
  root: string | readonly string[],
  stateDir: string,
  rel: string,
): { ok: true; target: ContainedTarget } | { ok: false; reason: string } {
  const result = containRecordedPath(root, rel, { exclude: [stateDir] });
  return result.ok ? result : { ok: false, reason: result.error.message };
}

/** A plan item for a path that is not written: nothing is read through it either. */
function refusedItem(
  base: { path: string; target: FileState; prompts: number[] },
  reason: string,
): RestoreItem {
  return {
    ...base,
    current: { kind: 'untracked', size: 0, mtimeMs: 0, reason: 'not looked at' },
    action: base.target.kind === 'absent' ? 'delete' : 'write',
    status: 'refused',
    reason,
  };
}

export function planRestore(options: {
  stateDir: string;
  root: string;
  /** More workspace folders: a record with an absolute path is restored only inside one of them. */
  extraRoots?: readonly string[];
  sessionId: string;
  beforePrompt: number;
}): RestorePlan {
  const dir = sessionCheckpointDir(options.stateDir, options.sessionId);
  const origin = readForkOrigin(options.stateDir, options.sessionId);
  if (origin && options.beforePrompt < origin.beforePrompt)
    throw new ForkedEarlierError(origin.parent, origin.beforePrompt, options.beforePrompt);
  if (!fs.existsSync(dir))
    throw new RestoreError(`No checkpoints for session ${options.sessionId} (looked in ${dir}).`);
  const store = openCheckpointStore(options.stateDir, options.sessionId);
  const prompts = store.prompts().map((p) => p.prompt);
  const lastPrompt = Math.max(0, ...prompts);
  if (options.beforePrompt < 1 || options.beforePrompt > lastPrompt)
    throw new RestoreError(
      `Session ${options.sessionId} has prompts 1..${lastPrompt}; --before-prompt ${options.beforePrompt} is not one of them.`,
    );
  const { records: changes, skipped } = store.readChanges(options.extraRoots);
  const byPath = new Map<string, ChangeRecord[]>();
  for (const r of changes) {
    const list = byPath.get(r.path) ?? [];
    list.push(r);
    byPath.set(r.path, list);
  }
  const items: RestoreItem[] = [];
  for (const [rel, records] of [...byPath].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const firstIndex = records.findIndex((r) => r.prompt >= options.beforePrompt);
    if (firstIndex < 0) continue; // only changed before prompt N: keeps its changes
    const first = records[firstIndex]!;
    const last = records.at(-1)!;
    const target = first.before;
    const touchedIn = [
      ...new Set(
        records
          .slice(firstIndex)
          .filter((r) => r.prompt > 0)
          .map((r) => r.prompt),
      ),
    ];
    const contained = containRestorePath(
      [options.root, ...(options.extraRoots ?? [])],
      options.stateDir,
      rel,
    );
    if (!contained.ok) {
      items.push(refusedItem({ path: rel, target, prompts: touchedIn }, contained.reason));
      continue;
    }
    const current = currentState(contained.target.abs, last.after);
    const base = { path: rel, target, current, prompts: touchedIn };
    // Someone else changed the file between two of Keel's changes: restoring would drop their work.
    const broken = records
      .slice(firstIndex + 1)
      .find((r, i) => !sameState(r.before, records[firstIndex + i]!.after));
    if (!sameState(current, last.after)) {
      items.push({
        ...base,
        action: target.kind === 'absent' ? 'delete' : 'write',
        status: 'conflict',
        reason: `changed since Keel left it (now ${describe(current)}, Keel left ${describe(last.after)})`,
      });
      continue;
    }
    if (broken) {
      items.push({
        ...base,
        action: target.kind === 'absent' ? 'delete' : 'write',
        status: 'conflict',
        reason: `changed by someone else between Keel's changes (before ${broken.by} in prompt ${broken.prompt})`,
      });
      continue;
    }
    if (sameState(current, target)) {
      items.push({ ...base, action: 'none', status: 'ok', reason: 'already as before' });
      continue;
    }
    if (target.kind === 'untracked') {
      items.push({
        ...base,
        action: 'write',
        status: 'unrecoverable',
        reason: `no copy of its earlier content was kept (${target.reason})`,
      });
      continue;
    }
    if (target.kind === 'bytes' && !store.hasBlob(target.hash)) {
      items.push({ ...base, action: 'write', status: 'unrecoverable', reason: 'its saved copy is missing' });
      continue;
    }
    items.push({
      ...base,
      action: target.kind === 'absent' ? 'delete' : 'write',
      status: 'ok',
      reason:
        target.kind === 'absent'
          ? 'created at or after this prompt: removed'
          : 'restored to its earlier content',
    });
  }
  return {
    sessionId: options.sessionId,
    beforePrompt: options.beforePrompt,
    items,
    notes: jobNotes(store, options.beforePrompt),
    skipped,
  };
}

/** Background jobs running at or after prompt N wrote outside any checkpoint: name each one. */
function jobNotes(store: CheckpointStore, beforePrompt: number): string[] {
  const since = store.prompts().find((p) => p.prompt === beforePrompt)?.ts ?? 0;
  const open = new Map<string, { prompt: number; command: string; end?: number }>();
  const runs: { prompt: number; command: string; end?: number }[] = [];
  for (const r of store.jobs()) {
    const key = `${r.prompt}\u0000${r.command}`;
    if (r.event === 'start') {
      const run = { prompt: r.prompt, command: r.command };
      runs.push(run);
      open.set(key, run);
    } else {
      const run = open.get(key);
      if (run) run.end = r.ts;
      open.delete(key);
    }
  }
  return runs
    .filter((j) => j.prompt >= beforePrompt || j.end === undefined || j.end >= since)
    .map(
      (j) =>
        `Background job \`${j.command}\` (started in prompt ${j.prompt}${j.end === undefined ? ', maybe still running' : ''}) is not checkpointed: files only it changed are not restored.`,
    );
}

/**
 * Undo the most recent restore (or undo): every file it wrote goes back to what it held just before,
 * unless it has changed since (a conflict, reported, left alone unless forced).
 */
export function planUndo(options: {
  stateDir: string;
  root: string;
  extraRoots?: readonly string[];
  sessionId: string;
}): RestorePlan {
  const store = openCheckpointStore(options.stateDir, options.sessionId);
  const { records: changes, skipped } = store.readChanges(options.extraRoots);
  const last = [...changes].reverse().find((r) => r.batch !== undefined);
  if (!last) throw new RestoreError(`Nothing to undo: session ${options.sessionId} has no restore.`);
  const batch: ChangeRecord[] = [];
  for (const r of changes) if (r.batch === last.batch) batch.push(r);
  const items: RestoreItem[] = batch.map((r) => {
    const contained = containRestorePath(
      [options.root, ...(options.extraRoots ?? [])],
      options.stateDir,
      r.path,
    );
    if (!contained.ok) return refusedItem({ path: r.path, target: r.before, prompts: [] }, contained.reason);
    const current = currentState(contained.target.abs, r.after);
    const action: RestoreAction = r.before.kind === 'absent' ? 'delete' : 'write';
    const base = { path: r.path, target: r.before, current, prompts: [] };
    if (!sameState(current, r.after))
      return {
        ...base,
        action,
        status: 'conflict',
        reason: `changed since the restore (now ${describe(current)})`,
      };
    if (r.before.kind === 'untracked')
      return {
        ...base,
        action,
        status: 'unrecoverable',
        reason: 'no copy of its content before the restore',
      };
    return { ...base, action, status: 'ok', reason: 'back to its content before the restore' };
  });
  return { sessionId: options.sessionId, beforePrompt: 0, items, notes: [], skipped };
}
