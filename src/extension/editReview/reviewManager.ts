import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { workspaceRootNames } from '../../agent/safety/paths/rootNames.ts';
import * as vscode from 'vscode';
import { acceptHunk, baselineWithUserEdits, decodeExact, encodeText, type Hunk } from './hunks.ts';
import { FILE_HUNK, hunkViews, textHunks } from './pendingHunks.ts';
import { persistReviews, type RestoreReport } from './reviewPersistence.ts';
import type { ReviewStore } from './reviewStore.ts';
import { createRejecter } from './reviewReject.ts';
import type { ReviewScope } from './reviewTargets.ts';

export type { RestoreReport } from './reviewPersistence.ts';

// Pending review of agent edits. For each file Keel changed, the baseline ("original") is what the
// file held before Keel's first unreviewed change; hunks are recomputed from (baseline, current
// content) every time, so they survive later edits elsewhere in the file. Accepting folds a hunk
// into the baseline; rejecting writes the baseline's lines back for that hunk only.

export { FILE_HUNK } from './pendingHunks.ts';

export interface PendingFile {
  readonly reviewId: string;
  /** Canonical absolute path where the file is now (or was, for a delete). */
  readonly path: string;
  readonly kind: 'modify' | 'create' | 'delete';
  /** Baseline text ('' for a created file); undefined when the original was not UTF-8 text. */
  readonly original: string | undefined;
  /** Exact original bytes (undefined for a created file). */
  readonly originalBytes: Uint8Array | undefined;
  /** Set when Keel renamed the file: where it was. */
  readonly renamedFrom?: string;
  /**
   * The text Keel itself last left in the file. Review hunks are (original → this), so what the user
   * typed afterwards is never offered as Keel's, and Reject never reverts it. Undefined: not text.
   */
  readonly keel?: string;
}

export interface ReviewHunkView {
  readonly id: string;
  /** 0-based line in the current file. */
  readonly line: number;
  readonly added: number;
  readonly removed: number;
  readonly hunk?: Hunk;
  /** The user typed inside this hunk since Keel wrote it: Reject leaves it alone and says so. */
  readonly conflict?: boolean;
}

export interface Decisions {
  readonly accepted: number;
  readonly rejected: number;
}

export interface RejectionNote {
  readonly path: string;
  readonly description: string;
}

export interface ReviewManager extends vscode.Disposable {
  readonly onDidChange: vscode.Event<void>;
  pending(): readonly PendingFile[];
  get(path: string): PendingFile | undefined;
  /** Call BEFORE Keel writes `path`: records the baseline unless one is pending already. */
  beforeWrite(path: string, before: Uint8Array | undefined): void;
  beforeDelete(path: string, before: Uint8Array): void;
  /** Call AFTER Keel wrote `path`: what Keel left there (its hunks are measured against this). */
  afterWrite(path: string, content: Uint8Array): void;
  afterRename(from: string, to: string, content: Uint8Array | undefined): void;
  /** Call after any Keel change, so views refresh. */
  changed(): void;
  hunks(path: string): Promise<ReviewHunkView[]>;
  accept(path: string, hunkId?: string): Promise<boolean>;
  reject(path: string, hunkId?: string): Promise<boolean>;
  acceptAll(): Promise<number>;
  /** How many hunks the user accepted / rejected per path (this window), for the chat's edit cards. */
  decisions(): ReadonlyMap<string, Decisions>;
  rejectAll(): Promise<number>;
  /** Drops a file from review without touching it (e.g. the user deleted it). */
  forget(path: string): void;
  /**
   * Brings back the reviews persisted by an earlier window (call once, and only in a trusted
   * workspace). An entry whose path is refused (outside the workspace, through a symlink), or whose
   * file on disk is no longer what Keel left there, is dropped from review, untouched.
   */
  restore(): Promise<RestoreReport>;
  /** Writes the current state to the store (also done on every change and every save). */
  persist(): void;
}

export interface ReviewManagerOptions {
  /** Told to the agent at its next turn. */
  readonly onRejected?: (note: RejectionNote) => void;
  readonly log?: (message: string) => void;
  /** Display path for messages (workspace-relative). */
  readonly display: (path: string) => string;
  /** Workspace folders (first = primary): Reject writes only inside them, and records are relative to the first. */
  readonly roots: () => readonly string[];
  /** Where pending reviews are persisted across window reloads (none = memory only). */
  readonly store?: ReviewStore;
  /** A Reject that would have reverted the user's own typing was refused (default: a warning). */
  readonly onConflict?: (message: string) => void;
}

export function createReviewManager(options: ReviewManagerOptions): ReviewManager {
  const files = new Map<string, PendingFile>();
  const emitter = new vscode.EventEmitter<void>();
  const store = options.store;
  const scope = (): ReviewScope => ({
    roots: options.roots(),
    exclude: store ? [store.stateDir] : [],
  });
  let restored = false;

  // Every change is written through at once (synchronously): a reload can come at any moment.
  const persist = () => {
    if (store) persistReviews(store, files.values(), options.roots(), { log: options.log, restored });
  };
  const changed = () => {
    persist();
    emitter.fire();
  };
  // The user saving a file under review moves what "Keel's last state on disk" is.
  const onSave = vscode.workspace.onDidSaveTextDocument((doc) => {
    if (files.has(doc.uri.fsPath)) persist();
  });

  const decided = new Map<string, Decisions>();
  const count = (p: string, kind: keyof Decisions, n: number) => {
    const was = decided.get(p) ?? { accepted: 0, rejected: 0 };
    decided.set(p, { ...was, [kind]: was[kind] + Math.max(n, 1) });
  };

  const set = (file: PendingFile) => {
    files.set(file.path, file);
    changed();
  };

  const remove = (p: string) => {
    if (files.delete(p)) changed();
  };

  const hunks = async (p: string): Promise<ReviewHunkView[]> => {
    const file = files.get(p);
    return file ? hunkViews(file) : [];
  };
  const conflictNotice = (message: string) =>
    options.onConflict ? options.onConflict(message) : void vscode.window.showWarningMessage(message);

  const settleIfClean = async (file: PendingFile) => {
    const text = await textHunks(file);
    if (text !== undefined && text.length === 0 && !file.renamedFrom) remove(file.path);
  };

  const rejecter = createRejecter({
    files,
    options,
    scope,
    count,
    set,
    remove,
    changed,
    hunks,
    conflictNotice,
    settleIfClean,
  });

  const manager: ReviewManager = {
    onDidChange: emitter.event,
    pending: () => [...files.values()],
    get: (p) => files.get(p),
    beforeWrite(p, before) {
      const pending = files.get(p);
      if (pending) {
        // The user typed in the file since Keel's last write: their text joins the baseline, so it
        // is never offered as Keel's hunk (nor reverted by Reject) after Keel writes again.
        const text = before ? decodeExact(before) : undefined;
        if (pending.keel === undefined || pending.original === undefined || text === undefined) return;
        if (text === pending.keel) return;
        const base = baselineWithUserEdits(pending.original, pending.keel, text);
        if (base === undefined) return;
        const kind = pending.kind === 'create' && base !== '' ? 'modify' : pending.kind;
        set({
          ...pending,
          kind,
          original: base,
          originalBytes: kind === 'create' ? undefined : encodeText(base),
          keel: text,
        });
        return;
      }
      if (before === undefined) {
        set({ reviewId: randomUUID(), path: p, kind: 'create', original: '', originalBytes: undefined });
      } else {
        set({
          reviewId: randomUUID(),
          path: p,
          kind: 'modify',
          original: decodeExact(before),
          originalBytes: before,
        });
      }
    },
    beforeDelete(p, before) {
      const existing = files.get(p);
      if (existing?.kind === 'create') {
        // Keel created and deleted it: nothing left to review.
        remove(p);
        return;
      }
      set({
        reviewId: existing?.reviewId ?? randomUUID(),
        path: p,
        kind: 'delete',
        original: existing?.original ?? decodeExact(before),
        originalBytes: existing?.originalBytes ?? before,
        ...(existing?.renamedFrom ? { renamedFrom: existing.renamedFrom } : {}),
      });
    },
    afterWrite(p, content) {
      const file = files.get(p);
      if (file) set({ ...file, keel: decodeExact(content) });
    },
    afterRename(from, to, content) {
      const existing = files.get(from);
      files.delete(from);
      if (existing) {
        set({
          ...existing,
          path: to,
          ...(existing.kind === 'create' ? {} : { renamedFrom: existing.renamedFrom ?? from }),
        });
        return;
      }
      set({
        reviewId: randomUUID(),
        path: to,
        kind: 'modify',
        original: content ? decodeExact(content) : undefined,
        originalBytes: content,
        renamedFrom: from,
      });
    },
    changed,
    hunks,
    async accept(p, hunkId) {
      const file = files.get(p);
      if (!file) return false;
      if (hunkId === undefined || hunkId === FILE_HUNK) {
        count(p, 'accepted', (await hunks(p)).length);
        remove(p);
        return true;
      }
      const hunk = (await textHunks(file))?.find((h) => h.id === hunkId);
      if (!hunk || file.original === undefined) return false;
      const original = acceptHunk(file.original, hunk);
      count(p, 'accepted', 1);
      // Once part of a created file is accepted, rejecting the rest must keep that part: it is a modify now.
      const kind = file.kind === 'create' && original !== '' ? 'modify' : file.kind;
      const next: PendingFile = {
        ...file,
        kind,
        original,
        originalBytes: kind === 'create' ? undefined : encodeText(original),
      };
      set(next);
      await settleIfClean(next);
      return true;
    },
    reject: rejecter.reject,
    decisions: () => decided,
    async acceptAll() {
      for (const p of files.keys()) count(p, 'accepted', (await hunks(p)).length);
      const n = files.size;
      files.clear();
      changed();
      return n;
    },
    async rejectAll() {
      let n = 0;
      for (const file of [...files.values()]) {
        try {
          if (await manager.reject(file.path)) n++;
        } catch (error) {
          options.log?.(`reject ${file.path} failed: ${(error as Error).message}`);
        }
      }
      return n;
    },
    forget: remove,
    persist,
    async restore() {
      if (!store) return { restored: [], dropped: [] };
      // zod checks the records: loaded now, not at activation.
      const { restoreReviews } = await import('./reviewRestore.ts');
      const report = restoreReviews(store, files, scope(), options);
      restored = true;
      if (report.restored.length > 0 || report.dropped.length > 0) emitter.fire();
      return report;
    },
    dispose: () => {
      onSave.dispose();
      emitter.dispose();
    },
  };
  return manager;
}

/**
 * The path as the agent's path guard shows it (pathGuard.ts): relative to the first folder, a later
 * folder's file as `<folderName>/<rel>` (the name a path given to Keel may start with), so a file in
 * the second folder never reads like the first folder's file of the same name.
 */
export function relativeTo(roots: readonly string[], p: string): string {
  const names = workspaceRootNames(roots);
  for (const [i, root] of roots.entries()) {
    const rel = path.relative(root, p);
    if (!rel || rel.startsWith('..') || path.isAbsolute(rel)) continue;
    const posix = rel.split(path.sep).join('/');
    if (i === 0) return posix;
    return names[i] === undefined ? p : `${names[i]}/${posix}`;
  }
  return p;
}

/** The inverse of relativeTo: a leading later-folder name selects that folder, else the first. */
export function fromRelative(roots: readonly string[], rel: string): string {
  if (path.isAbsolute(rel)) return rel;
  const names = workspaceRootNames(roots);
  const head = rel.split('/')[0];
  const i = names.findIndex((n) => n !== undefined && n === head);
  if (i > 0) return path.join(roots[i]!, rel.slice(head!.length + 1));
  return path.join(roots[0] ?? '', rel);
}
