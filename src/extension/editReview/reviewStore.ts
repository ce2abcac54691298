import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { StoragePort } from '../../agent/host.ts';

// Pending reviews outlive the window: one JSON file per reviewed file under `<stateDir>/review/`,
// holding the exact original bytes (base64) and a fingerprint of what Keel last left on disk. On
// activation a review comes back only when the disk still holds that fingerprint; anything else
// means the file changed outside Keel meanwhile, and rejecting against a stale baseline could
// destroy that change, so the review is dropped (the file is left as it is).
// No vscode import: the store is plain Node and unit-testable.

const ENTRY_VERSION = 2;

export interface StoredReview {
  /** 1: paths absolute (read, never written now); 2: relative to the primary root when inside it. */
  readonly version: 1 | typeof ENTRY_VERSION;
  readonly reviewId: string;
  /**
   * As recorded: "/"-separated relative to the primary workspace root, or absolute when the file is
   * in another workspace folder. Untrusted on load (a repository can commit `.keel/review/*.json`):
   * reviewRestore.ts contains it in the workspace before anything uses it.
   */
  readonly path: string;
  readonly kind: 'modify' | 'create' | 'delete';
  /** Base64 of the exact original bytes; null when there were none (a created file). */
  readonly originalBase64: string | null;
  readonly renamedFrom?: string;
  /** sha256 (hex) of the bytes on disk at `path` when this was written; null = no file there. */
  readonly fingerprint: string | null;
  readonly savedAt: number;
}

/** Checks one stored entry's shape (zod, in reviewRecord.ts: loaded with the first restore, not at activation). */
export type ParseStoredReview = (raw: unknown) => StoredReview;

export interface ReviewStore {
  readonly dir: string;
  /** Keel's state folder the store is in: never a review target, whatever a record says. */
  readonly stateDir: string;
  /** Every readable entry; unreadable ones are reported in `problems` and removed. */
  load(parse: ParseStoredReview): { entries: StoredReview[]; problems: string[] };
  /** Writes the entry unless an identical one is stored already. */
  put(entry: Omit<StoredReview, 'version' | 'savedAt'>): void;
  remove(reviewId: string): void;
  /**
   * Removes every entry not in `keep`; with `onlyOwn`, only those this store wrote or loaded (the
   * others are a previous window's, not restored yet: not this window's to drop).
   */
  retain(keep: ReadonlySet<string>, options?: { onlyOwn?: boolean }): void;
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Fingerprint of what is on disk at `p` now (null = nothing there). */
export function diskFingerprint(p: string): string | null {
  try {
    return sha256(fs.readFileSync(p));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

export function encodeBytes(bytes: Uint8Array | undefined): string | null {
  return bytes ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') : null;
}

export function decodeBytes(base64: string | null): Uint8Array | undefined {
  return base64 === null ? undefined : new Uint8Array(Buffer.from(base64, 'base64'));
}

export function createReviewStore(stateDir: string, storage: StoragePort): ReviewStore {
  const dir = path.join(stateDir, 'review');
  const file = (reviewId: string) => path.join(dir, `${reviewId}.json`);
  // What was written last per entry (without savedAt), so an unchanged state is not rewritten.
  const written = new Map<string, string>();

  const removeFile = (p: string) => {
    try {
      fs.rmSync(p, { force: true });
    } catch {
      // best effort: a stale entry is dropped at the next load anyway
    }
  };
  // The folder exists exactly while something is pending: package.json activates Keel at startup
  // on `workspaceContains:.keel/review` (a plain existence check, no search).
  const removeDirIfEmpty = () => {
    try {
      fs.rmdirSync(dir);
    } catch {
      // not empty, or already gone
    }
  };

  return {
    dir,
    stateDir,
    load(parse) {
      const entries: StoredReview[] = [];
      const problems: string[] = [];
      for (const name of storage.list(dir)) {
        if (!name.endsWith('.json')) continue;
        const p = path.join(dir, name);
        try {
          const entry = parse(JSON.parse(storage.readText(p) ?? ''));
          entries.push(entry);
          const { savedAt: _savedAt, ...rest } = entry;
          written.set(entry.reviewId, JSON.stringify(rest));
        } catch (error) {
          problems.push(`${name}: ${(error as Error).message}`);
          removeFile(p);
        }
      }
      return { entries, problems };
    },
    put(entry) {
      const body = { version: ENTRY_VERSION, ...entry } as const;
      const key = JSON.stringify(body);
      if (written.get(entry.reviewId) === key) return;
      const target = file(entry.reviewId);
      const tmp = `${target}.tmp`;
      // Write-then-rename: a reload in the middle leaves the previous entry, never half of one.
      storage.writeText(tmp, `${JSON.stringify({ ...body, savedAt: Date.now() })}\n`);
      fs.renameSync(tmp, target);
      written.set(entry.reviewId, key);
    },
    remove(reviewId) {
      written.delete(reviewId);
      removeFile(file(reviewId));
      removeDirIfEmpty();
    },
    retain(keep, options) {
      for (const name of storage.list(dir)) {
        const id = name.replace(/\.json(\.tmp)?$/, '');
        if (id === name || keep.has(id)) continue;
        if (options?.onlyOwn && !written.has(id)) continue;
        written.delete(id);
        removeFile(path.join(dir, name));
      }
      removeDirIfEmpty();
    },
  };
}
