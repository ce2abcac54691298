import * as fs from 'node:fs';
import {
  ContainedPathError,
  type ContainedTarget,
  removeContainedFile,
  writeContainedFile,
} from '../safety/paths/containedPath.ts';
import { containRestorePath, RestoreError, type RestoreItem, type RestorePlan } from './restore.ts';
import { type CheckpointStore, type FileState, openCheckpointStore } from './store.ts';

// Applying a restore plan. Every write and delete goes through the contained-path helper, checked
// again right here: the plan may be minutes old (the VS Code dialog waits for the user), and a
// folder swapped for a symlink since is refused like one swapped before planning.

export interface AppliedItem extends RestoreItem {
  readonly applied: boolean;
}

export interface RestoreResult {
  readonly plan: RestorePlan;
  /** One per plan item, in order; an item refused at write time has status `refused` here. */
  readonly applied: AppliedItem[];
  readonly conflicts: number;
  readonly unrecoverable: number;
  /** Items refused at planning or at write time (outside the workspace, or through a symlink). */
  readonly refused: number;
}

function writeState(store: CheckpointStore, target: ContainedTarget, state: FileState): void {
  if (state.kind === 'absent') {
    removeContainedFile(target);
    return;
  }
  if (state.kind !== 'bytes') throw new RestoreError(`cannot write ${target.rel}: no copy`);
  const bytes = store.getBlob(state.hash);
  if (!bytes) throw new RestoreError(`the saved copy for ${target.rel} is missing or damaged`);
  writeContainedFile(target, bytes, state.mode !== undefined ? { mode: state.mode } : {});
}

/** Snapshot the current bytes (for undo) in the store; returns the state as recorded. */
function snapshot(store: CheckpointStore, abs: string): FileState {
  try {
    const stat = fs.lstatSync(abs);
    if (!stat.isFile())
      return { kind: 'untracked', size: stat.size, mtimeMs: stat.mtimeMs, reason: 'not a file' };
    return { kind: 'bytes', hash: store.putBlob(fs.readFileSync(abs)), mode: stat.mode & 0o7777 };
  } catch {
    return { kind: 'absent' };
  }
}

/** Applies a plan: `ok` items always, conflicts only with `force`, refused ones never. Each write is a `restore` record (undoable). */
export function applyRestore(
  plan: RestorePlan,
  options: {
    stateDir: string;
    root: string;
    extraRoots?: readonly string[];
    force?: boolean;
    now: () => number;
    by?: string;
  },
): RestoreResult {
  const store = openCheckpointStore(options.stateDir, plan.sessionId);
  const applied: AppliedItem[] = [];
  const by = options.by ?? 'restore';
  const batch = `${by}-${options.now()}-${Math.random().toString(16).slice(2, 8)}`;
  const refuse = (item: RestoreItem, reason: string) =>
    applied.push({ ...item, status: 'refused', reason, applied: false });
  for (const item of plan.items) {
    const go =
      item.action !== 'none' &&
      (item.status === 'ok' || (item.status === 'conflict' && options.force === true));
    if (!go) {
      applied.push({ ...item, applied: false });
      continue;
    }
    const contained = containRestorePath(
      [options.root, ...(options.extraRoots ?? [])],
      options.stateDir,
      item.path,
    );
    if (!contained.ok) {
      refuse(item, contained.reason);
      continue;
    }
    const before = snapshot(store, contained.target.abs);
    try {
      writeState(store, contained.target, item.target);
    } catch (error) {
      if (!(error instanceof ContainedPathError)) throw error;
      refuse(item, error.message);
      continue;
    }
    store.appendChange({
      prompt: 0,
      path: item.path,
      by,
      before,
      after: item.target,
      ts: options.now(),
      command: by === 'undo' ? 'restore --undo' : `restore --before-prompt ${plan.beforePrompt}`,
      batch,
    });
    applied.push({ ...item, applied: true });
  }
  return {
    plan,
    applied,
    conflicts: plan.items.filter((i) => i.status === 'conflict').length,
    unrecoverable: plan.items.filter((i) => i.status === 'unrecoverable').length,
    refused: applied.filter((i) => i.status === 'refused').length,
  };
}
