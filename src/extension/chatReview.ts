import * as vscode from 'vscode';
import type { HostMessage, ReviewFile } from '../shared/webviewProtocol.ts';
import type { Proposals } from './editReview/proposals.ts';
import { FILE_HUNK, type ReviewManager, relativeTo } from './editReview/reviewManager.ts';

// The chat panel's view of pending agent edits: what the review list shows (edits already on disk
// and proposals still waiting for the user), and the Accept/Reject buttons of its cards.

/** The hunk id of a proposal: it is accepted or rejected whole. */
export const PROPOSAL_HUNK = 'proposal';

export interface ChatReviewDeps {
  readonly review: ReviewManager;
  readonly proposals: Proposals;
  readonly roots: () => readonly string[];
}

async function pendingFiles(deps: ChatReviewDeps): Promise<ReviewFile[]> {
  const files: ReviewFile[] = [];
  for (const file of deps.review.pending()) {
    const hunks = await deps.review.hunks(file.path);
    files.push({
      path: relativeTo(deps.roots(), file.path),
      hunks: hunks.map((h) => ({ id: h.id, startLine: h.line + 1, added: h.added, removed: h.removed })),
    });
  }
  for (const proposal of deps.proposals.pending()) {
    files.push({
      path: relativeTo(deps.roots(), proposal.path),
      hunks: [
        {
          id: PROPOSAL_HUNK,
          startLine: 1,
          added: proposal.after.split('\n').length,
          removed: proposal.before ? proposal.before.split('\n').length : 0,
        },
      ],
    });
  }
  return files;
}

/** The `review` message: every pending file, and what the user already decided per path. */
export async function reviewMessage(deps: ChatReviewDeps): Promise<HostMessage> {
  return {
    type: 'review',
    files: await pendingFiles(deps),
    settled: [...deps.review.decisions()].map(([p, d]) => ({
      path: relativeTo(deps.roots(), p),
      accepted: d.accepted,
      rejected: d.rejected,
    })),
  };
}

/** Accept or reject one hunk (or the whole file) of `file`; `rel` is the path as the webview shows it. */
export async function decideReviewChange(
  deps: ChatReviewDeps,
  accept: boolean,
  file: string,
  rel: string,
  hunkId?: string,
): Promise<void> {
  if (
    hunkId === PROPOSAL_HUNK ||
    (!deps.review.get(file) && deps.proposals.pending().some((x) => x.path === file))
  ) {
    deps.proposals.decide(file, accept);
    return;
  }
  const id = hunkId ?? FILE_HUNK;
  const done = accept
    ? await deps.review.accept(file, id === FILE_HUNK ? undefined : id)
    : await deps.review.reject(file, id === FILE_HUNK ? undefined : id);
  if (!done) void vscode.window.showWarningMessage(`Keel: that change to ${rel} is no longer pending.`);
}
