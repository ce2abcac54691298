import * as fs from 'node:fs';
import { containRecordedPath } from '../../agent/safety/paths/containedPath.ts';
import { decodeExact } from './hunks.ts';
import { parseStoredReview } from './reviewRecord.ts';
import type { PendingFile, ReviewManagerOptions } from './reviewManager.ts';
import { decodeBytes, diskFingerprint, type ReviewStore } from './reviewStore.ts';
import type { ReviewScope } from './reviewTargets.ts';

// Bringing pending reviews back in a new window. The records are untrusted: a repository can commit
// `.keel/review/*.json` naming any path. Each entry is checked with zod (reviewRecord.ts), its paths
// are contained in the workspace (no `..`, nothing absolute elsewhere, no symlink on the way), and
// only then is the disk compared with what Keel left there. Anything refused is dropped, said so,
// and nothing is written. (The extension calls this only in a trusted workspace.)

export interface RestoreReport {
  readonly restored: readonly string[];
  readonly dropped: readonly {
    readonly path: string;
    readonly reason: string;
    /** The record itself was refused (its path is outside the workspace or through a symlink). */
    readonly refused?: boolean;
  }[];
}

/** Loads the stored reviews into `files`; a refused path, or a file changed, deleted or re-created outside Keel, is dropped, untouched. */
export function restoreReviews(
  store: ReviewStore,
  files: Map<string, PendingFile>,
  scope: ReviewScope,
  options: Pick<ReviewManagerOptions, 'display' | 'log'>,
): RestoreReport {
  const restored: string[] = [];
  const dropped: { path: string; reason: string; refused?: boolean }[] = [];
  const { entries, problems } = store.load(parseStoredReview);
  for (const problem of problems) options.log?.(`unreadable review entry dropped: ${problem}`);
  const contain = (p: string) => containRecordedPath(scope.roots, p, { exclude: scope.exclude });
  for (const entry of entries) {
    const drop = (p: string, reason: string, refused?: boolean) => {
      dropped.push({ path: p, reason, ...(refused ? { refused } : {}) });
      store.remove(entry.reviewId);
    };
    const here = contain(entry.path);
    if (!here.ok) {
      drop(entry.path, `its path ${JSON.stringify(entry.path)} is refused: ${here.error.message}`, true);
      continue;
    }
    const p = here.target.abs;
    const before = entry.renamedFrom !== undefined ? contain(entry.renamedFrom) : undefined;
    if (before && !before.ok) {
      drop(p, `its old name ${JSON.stringify(entry.renamedFrom)} is refused: ${before.error.message}`, true);
      continue;
    }
    const renamedFrom = before?.ok ? before.target.abs : undefined;
    if (files.has(p)) {
      store.remove(entry.reviewId);
      continue;
    }
    let now: string | null;
    try {
      now = diskFingerprint(p);
    } catch (error) {
      drop(p, `it cannot be read (${(error as Error).message})`);
      continue;
    }
    if (now !== entry.fingerprint) {
      drop(
        p,
        now === null
          ? 'it was deleted outside Keel'
          : entry.fingerprint === null
            ? 'a file was created there outside Keel'
            : 'it changed outside Keel',
      );
      continue;
    }
    if (renamedFrom && diskFingerprint(renamedFrom) !== null) {
      drop(p, `a file now exists at its old name ${options.display(renamedFrom)}`);
      continue;
    }
    const originalBytes = decodeBytes(entry.originalBase64);
    // The disk still holds exactly what Keel left (the fingerprint matched): that is Keel's text.
    const keelText = readKeelText(p);
    files.set(p, {
      ...(keelText !== undefined ? { keel: keelText } : {}),
      reviewId: entry.reviewId,
      path: p,
      kind: entry.kind,
      original: entry.kind === 'create' ? '' : originalBytes ? decodeExact(originalBytes) : undefined,
      originalBytes: entry.kind === 'create' ? undefined : originalBytes,
      ...(renamedFrom ? { renamedFrom } : {}),
    });
    restored.push(p);
  }
  return { restored, dropped };
}

function readKeelText(p: string): string | undefined {
  try {
    return decodeExact(fs.readFileSync(p));
  } catch {
    return undefined;
  }
}
