import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { decodeExact } from './hunks.ts';

// `keel.edits.review: beforeApply`: the diff opens first and the agent's write waits for the user.
// A proposal is decided by the notification's buttons, the Accept/Reject commands, or the panel.

export const ORIGINAL_SCHEME = 'keel-original';
export const PROPOSED_SCHEME = 'keel-proposed';

export interface Proposal {
  readonly id: string;
  readonly path: string;
  readonly before: string;
  readonly after: string;
}

export interface Proposals extends vscode.Disposable {
  readonly onDidChange: vscode.Event<void>;
  pending(): readonly Proposal[];
  /** Resolves true when the user accepts; false on reject or abort. */
  propose(
    p: string,
    before: Uint8Array | undefined,
    after: Uint8Array,
    signal?: AbortSignal,
  ): Promise<boolean>;
  decide(p: string, accept: boolean): boolean;
  decideAll(accept: boolean): number;
}

export function proposalUris(proposal: Proposal): { original: vscode.Uri; proposed: vscode.Uri } {
  return {
    original: vscode.Uri.from({
      scheme: ORIGINAL_SCHEME,
      path: proposal.path,
      query: `proposal=${proposal.id}`,
    }),
    proposed: vscode.Uri.from({
      scheme: PROPOSED_SCHEME,
      path: proposal.path,
      query: `proposal=${proposal.id}`,
    }),
  };
}

export function createProposals(options: { display: (p: string) => string }): Proposals {
  const open = new Map<string, { proposal: Proposal; resolve: (accept: boolean) => void }>();
  const emitter = new vscode.EventEmitter<void>();

  const decide = (p: string, accept: boolean) => {
    const entry = open.get(p);
    if (!entry) return false;
    open.delete(p);
    entry.resolve(accept);
    emitter.fire();
    return true;
  };

  return {
    onDidChange: emitter.event,
    pending: () => [...open.values()].map((e) => e.proposal),
    async propose(p, before, after, signal) {
      // A stopped run never waits for a decision nobody will use.
      if (signal?.aborted) return false;
      // One open proposal per file: a newer one replaces (and rejects) an undecided older one.
      decide(p, false);
      const proposal: Proposal = {
        id: randomUUID(),
        path: p,
        before: before ? (decodeExact(before) ?? '(binary content)') : '',
        after: decodeExact(after) ?? '(binary content)',
      };
      const decision = new Promise<boolean>((resolve) => {
        open.set(p, { proposal, resolve });
      });
      emitter.fire();
      // Stop / abort: the proposal is rejected (only this one: a newer proposal for the same file
      // belongs to a newer write).
      const onAbort = () => {
        if (open.get(p)?.proposal === proposal) decide(p, false);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      void decision.then(() => signal?.removeEventListener('abort', onAbort));
      const uris = proposalUris(proposal);
      const shown = options.display(p);
      await vscode.commands.executeCommand(
        'vscode.diff',
        uris.original,
        uris.proposed,
        `${path.basename(p)} ↔ Keel's proposal`,
        { preview: true },
      );
      void vscode.window
        .showInformationMessage(`Keel wants to change ${shown}.`, 'Accept', 'Reject')
        .then((choice) => {
          if (choice === 'Accept') decide(p, true);
          else if (choice === 'Reject') decide(p, false);
        });
      return decision;
    },
    decide,
    decideAll(accept) {
      let n = 0;
      for (const p of [...open.keys()]) if (decide(p, accept)) n++;
      return n;
    },
    dispose() {
      for (const p of [...open.keys()]) decide(p, false);
      emitter.dispose();
    },
  };
}
