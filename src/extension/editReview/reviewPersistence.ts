import * as fs from 'node:fs';
import { decodeExact } from './hunks.ts';
import type { PendingFile, ReviewManagerOptions } from './reviewManager.ts';
import { decodeBytes, diskFingerprint, encodeBytes, type ReviewStore } from './reviewStore.ts';

// Pending reviews across window reloads: every change is written through to the store, and a new
// window takes back only the files whose bytes on disk are still exactly what Keel left there.

export interface RestoreReport {
  readonly restored: readonly string[];
  readonly dropped: readonly { readonly path: string; readonly reason: string }[];
}

export function persistReviews(
  store: ReviewStore,
  files: Iterable<PendingFile>,
  log: ((message: string) => void) | undefined,
): void {
  try {
    const ids = new Set<string>();
    for (const file of files) {
      ids.add(file.reviewId);
      store.put({
        reviewId: file.reviewId,
        path: file.path,
        kind: file.kind,
        originalBase64: encodeBytes(file.originalBytes),
        ...(file.renamedFrom ? { renamedFrom: file.renamedFrom } : {}),
        fingerprint: diskFingerprint(file.path),
      });
    }
    store.retain(ids);
  } catch (error) {
    log?.(`could not persist the pending review: ${(error as Error).message}`);
  }
}

/** Loads the stored reviews into `files`; a file changed, deleted or re-created outside Keel is dropped, untouched. */
export function restoreReviews(
  store: ReviewStore,
  files: Map<string, PendingFile>,
  options: Pick<ReviewManagerOptions, 'display' | 'log'>,
): RestoreReport {
  const restored: string[] = [];
  const dropped: { path: string; reason: string }[] = [];
  const { entries, problems } = store.load();
  for (const problem of problems) options.log?.(`unreadable review entry dropped: ${problem}`);
  for (const entry of entries) {
    const drop = (reason: string) => {
      dropped.push({ path: entry.path, reason });
      store.remove(entry.reviewId);
    };
    if (files.has(entry.path)) {
      store.remove(entry.reviewId);
      continue;
    }
    let now: string | null;
    try {
      now = diskFingerprint(entry.path);
    } catch (error) {
      drop(`it cannot be read (${(error as Error).message})`);
      continue;
    }
    if (now !== entry.fingerprint) {
      drop(
        now === null
          ? 'it was deleted outside Keel'
          : entry.fingerprint === null
            ? 'a file was created there outside Keel'
            : 'it changed outside Keel',
      );
      continue;
    }
    if (entry.renamedFrom && diskFingerprint(entry.renamedFrom) !== null) {
      drop(`a file now exists at its old name ${options.display(entry.renamedFrom)}`);
      continue;
    }
    const originalBytes = decodeBytes(entry.originalBase64);
    // The disk still holds exactly what Keel left (the fingerprint matched): that is Keel's text.
    const keelText = readKeelText(entry.path);
    files.set(entry.path, {
      ...(keelText !== undefined ? { keel: keelText } : {}),
      reviewId: entry.reviewId,
      path: entry.path,
      kind: entry.kind,
      original: entry.kind === 'create' ? '' : originalBytes ? decodeExact(originalBytes) : undefined,
      originalBytes: entry.kind === 'create' ? undefined : originalBytes,
      ...(entry.renamedFrom ? { renamedFrom: entry.renamedFrom } : {}),
    });
    restored.push(entry.path);
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
