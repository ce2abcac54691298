import * as path from 'node:path';
import { containedTarget } from '../../agent/safety/paths/containedPath.ts';
import type { PendingFile } from './reviewManager.ts';

// Where Accept/Reject may write. A pending file's path can come from a stored review record, which
// a repository can commit, and any folder on the way can have become a symlink since Keel wrote the
// file: every write and delete Reject makes is contained in the workspace (no `..`, no absolute
// path elsewhere, no symlink from the root down) right before it is made. The write itself is
// VS Code's (a WorkspaceEdit, so open editors stay in step), so the check is as close to it as the
// API allows. No vscode import: this is unit-tested in plain Node.

export interface ReviewScope {
  /** Workspace folders, the first one primary. */
  readonly roots: readonly string[];
  /** Folders inside them that are never review targets (Keel's state folder). */
  readonly exclude: readonly string[];
}

/** The path as a record stores it: relative to the primary root when inside it, else absolute. */
export function recordedReviewPath(roots: readonly string[], abs: string): string {
  const primary = roots[0];
  if (primary) {
    const rel = path.relative(primary, abs);
    if (rel && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel))
      return rel.split(path.sep).join('/');
  }
  return abs;
}

/** The absolute path Reject may write for `p`, checked on disk now; throws ContainedPathError. */
export function reviewTarget(scope: ReviewScope, p: string): string {
  return containedTarget(scope.roots, p, { exclude: scope.exclude }).abs;
}

export interface RejectFileOps {
  write(p: string, content: Uint8Array): Promise<void>;
  delete(p: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
}

/** Rejects all of a file: back to its original bytes (or gone, or back at its old name). */
export async function rejectWholeFile(
  file: PendingFile,
  scope: ReviewScope,
  ops: RejectFileOps,
): Promise<void> {
  const here = reviewTarget(scope, file.path);
  if (file.kind === 'create') {
    await ops.delete(here);
  } else if (file.kind === 'delete') {
    await ops.write(here, file.originalBytes ?? new Uint8Array());
  } else {
    const back = file.renamedFrom ? reviewTarget(scope, file.renamedFrom) : here;
    if (file.renamedFrom) await ops.rename(here, back);
    if (file.originalBytes) await ops.write(reviewTarget(scope, back), file.originalBytes);
  }
}
