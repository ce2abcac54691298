import { ContainedPathError } from '../../agent/safety/paths/containedPath.ts';
import { deletePath, readCurrentText, renamePath, writeContent } from './fileOps.ts';
import { encodeText, rejectHunk, rejectKeelHunk } from './hunks.ts';
import { describeLines, FILE_HUNK, textHunks } from './pendingHunks.ts';
import type { Decisions, PendingFile, ReviewHunkView, ReviewManagerOptions } from './reviewManager.ts';
import { type ReviewScope, rejectWholeFile, reviewTarget } from './reviewTargets.ts';

// Reject, whole file or one hunk. Every path it writes, deletes or renames is contained in the
// workspace right before (reviewTargets.ts): a pending file can come from a stored record a
// repository committed, and a folder can have become a symlink since Keel wrote the file. A
// refused path is reported and nothing is written.

export interface RejectContext {
  readonly files: Map<string, PendingFile>;
  readonly options: ReviewManagerOptions;
  readonly scope: () => ReviewScope;
  readonly count: (p: string, kind: keyof Decisions, n: number) => void;
  readonly set: (file: PendingFile) => void;
  readonly remove: (p: string) => void;
  readonly changed: () => void;
  readonly hunks: (p: string) => Promise<ReviewHunkView[]>;
  readonly conflictNotice: (message: string) => void;
  readonly settleIfClean: (file: PendingFile) => Promise<void>;
}

export function createRejecter(ctx: RejectContext): {
  reject(p: string, hunkId?: string): Promise<boolean>;
} {
  const { files, options, scope, count, set, remove, changed, hunks, conflictNotice, settleIfClean } = ctx;
  const restoreWholeFile = (file: PendingFile) =>
    rejectWholeFile(file, scope(), {
      write: (p, content) => writeContent(p, content),
      delete: deletePath,
      rename: renamePath,
    });
  /** Every other Reject write: the same containment, checked right before. */
  const target = (p: string) => reviewTarget(scope(), p);
  /** A refused path is said so and nothing is written; the review stays (the user can look). */
  const refused = (p: string, error: unknown): false => {
    if (!(error instanceof ContainedPathError)) throw error;
    const message = `Keel did not write ${options.display(p)}: ${error.message}.`;
    options.log?.(message);
    conflictNotice(message);
    return false;
  };

  /** Reject all of a file the user has typed in since: undo Keel's hunks one by one, keep their text. */
  const rejectAroundUserEdits = async (file: PendingFile): Promise<boolean> => {
    const shown = options.display(file.path);
    let state = file;
    let undone = 0;
    for (;;) {
      const hunk = (await textHunks(state))?.find((h) => !h.conflict);
      const current = await readCurrentText(state.path);
      if (!hunk || current === undefined || state.keel === undefined) break;
      const reverted = rejectKeelHunk(current, hunk);
      state = { ...state, keel: rejectHunk(state.keel, hunk) };
      if (state.kind === 'create' && reverted === '' && state.original === '') {
        await deletePath(target(state.path));
        count(state.path, 'rejected', 1);
        remove(state.path);
        undone++;
        break;
      }
      await writeContent(target(state.path), encodeText(reverted));
      set(state);
      count(state.path, 'rejected', 1);
      undone++;
    }
    const left = files.has(state.path) ? ((await textHunks(state)) ?? []) : [];
    if (left.length === 0) remove(state.path);
    else
      conflictNotice(
        `${left.length} of Keel's changes in ${shown} were not rejected: you edited inside them. Your text is kept.`,
      );
    if (undone > 0)
      options.onRejected?.({
        path: shown,
        description: `The user rejected your changes to ${shown}: Keel undid ${undone} of your changes, keeping the user's own edits${left.length > 0 ? `; ${left.length} change(s) the user edited into remain` : ''}. Read the file again before editing it.`,
      });
    return undone > 0;
  };

  const rejectContained = async (p: string, hunkId?: string): Promise<boolean> => {
    const file = files.get(p);
    if (!file) return false;
    // Refused before anything is counted or told to the agent; each write below checks again.
    target(p);
    if (file.renamedFrom) target(file.renamedFrom);
    const shown = options.display(p);
    if (hunkId === undefined || hunkId === FILE_HUNK) {
      const current = file.keel !== undefined && !file.renamedFrom ? await readCurrentText(p) : undefined;
      if (current !== undefined && current !== file.keel) return rejectAroundUserEdits(file);
      count(p, 'rejected', (await hunks(p)).length);
      await restoreWholeFile(file);
      remove(p);
      const what =
        file.kind === 'create'
          ? `deleted ${shown}, which you created`
          : file.kind === 'delete'
            ? `restored ${shown}, which you deleted`
            : file.renamedFrom
              ? `moved ${shown} back to ${options.display(file.renamedFrom)} with its original content`
              : `restored ${shown} to its content before your edits`;
      options.onRejected?.({
        path: shown,
        description: `The user rejected your changes to ${shown}: Keel ${what}.`,
      });
      return true;
    }
    const hunk = (await textHunks(file))?.find((h) => h.id === hunkId);
    if (!hunk) return false;
    if (hunk.conflict) {
      conflictNotice(
        `Not rejected: you edited inside Keel's change at line ${hunk.currentStart + 1} of ${shown}; your text is kept. Undo it by hand, or accept the hunk.`,
      );
      return false;
    }
    const current = await readCurrentText(p);
    if (current === undefined) return false;
    const reverted = rejectKeelHunk(current, hunk);
    count(p, 'rejected', 1);
    const next: PendingFile = file.keel !== undefined ? { ...file, keel: rejectHunk(file.keel, hunk) } : file;
    if (file.kind === 'create' && reverted === '' && file.original === '') {
      await deletePath(target(p));
      remove(p);
    } else {
      await writeContent(target(p), encodeText(reverted));
      set(next);
      await settleIfClean(next);
    }
    changed();
    options.onRejected?.({
      path: shown,
      description: `The user rejected ${describeLines(hunk)} in ${shown}; those lines are back to what they were before. Read the file again before editing it.`,
    });
    return true;
  };

  return {
    async reject(p, hunkId) {
      try {
        return await rejectContained(p, hunkId);
      } catch (error) {
        return refused(p, error);
      }
    },
  };
}
