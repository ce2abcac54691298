import type { PendingFile } from './reviewManager.ts';
import { diskFingerprint, encodeBytes, type ReviewStore } from './reviewStore.ts';
import { recordedReviewPath } from './reviewTargets.ts';

// Pending reviews across window reloads: every change is written through to the store, and a new
// window takes back only the files whose bytes on disk are still exactly what Keel left there
// (reviewRestore.ts, loaded with the first restore).

export type { RestoreReport } from './reviewRestore.ts';

export function persistReviews(
  store: ReviewStore,
  files: Iterable<PendingFile>,
  roots: readonly string[],
  options: {
    readonly log: ((message: string) => void) | undefined;
    /**
     * False until this window has restored the stored reviews (never, in an untrusted workspace):
     * until then only entries this window wrote are dropped, not a previous window's.
     */
    readonly restored: boolean;
  },
): void {
  try {
    const ids = new Set<string>();
    for (const file of files) {
      ids.add(file.reviewId);
      store.put({
        reviewId: file.reviewId,
        path: recordedReviewPath(roots, file.path),
        kind: file.kind,
        originalBase64: encodeBytes(file.originalBytes),
        ...(file.renamedFrom ? { renamedFrom: recordedReviewPath(roots, file.renamedFrom) } : {}),
        fingerprint: diskFingerprint(file.path),
      });
    }
    store.retain(ids, { onlyOwn: !options.restored });
  } catch (error) {
    options.log?.(`could not persist the pending review: ${(error as Error).message}`);
  }
}
