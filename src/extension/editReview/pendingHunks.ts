import { readCurrentText } from './fileOps.ts';
import { computeHunks, type Hunk, type KeelHunk, keelHunks, splitLines } from './hunks.ts';
import type { PendingFile, ReviewHunkView } from './reviewManager.ts';

// What a pending file's review shows: Keel's own hunks (baseline → what Keel left), placed in the
// file as it is now. Pure reads: nothing here changes the file or the review.

/** Pseudo hunk id for whole-file operations (a delete, a rename, a non-text file). */
export const FILE_HUNK = 'file';

export async function textHunks(file: PendingFile): Promise<KeelHunk[] | undefined> {
  if (file.original === undefined || file.kind === 'delete') return undefined;
  const current = await readCurrentText(file.path);
  if (current === undefined) return undefined;
  if (file.keel !== undefined) return keelHunks(file.original, file.keel, current);
  return computeHunks(file.original, current).map((h) => ({
    ...h,
    conflict: false,
    currentStart: h.newStart,
  }));
}

export async function hunkViews(file: PendingFile): Promise<ReviewHunkView[]> {
  const text = await textHunks(file);
  if (text === undefined) {
    const removed = file.original !== undefined ? splitLines(file.original).length : 0;
    return [{ id: FILE_HUNK, line: 0, added: 0, removed: file.kind === 'delete' ? removed : 0 }];
  }
  const views: ReviewHunkView[] = text.map((h) => ({
    id: h.id,
    line: h.currentStart,
    added: h.newLines.length,
    removed: h.oldLines.length,
    hunk: h,
    ...(h.conflict ? { conflict: true } : {}),
  }));
  if (views.length === 0 && file.renamedFrom) return [{ id: FILE_HUNK, line: 0, added: 0, removed: 0 }];
  return views;
}

export function describeLines(hunk: Hunk): string {
  const first = hunk.oldStart + 1;
  if (hunk.oldLines.length === 0) return `the ${hunk.newLines.length} line(s) you inserted at line ${first}`;
  const last = hunk.oldStart + hunk.oldLines.length;
  return `your change to line${first === last ? ` ${first}` : `s ${first}-${last}`}`;
}
