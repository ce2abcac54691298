import type { MessageItem } from 'vscode';
import type { ApprovalRequest } from '../agent/host.ts';

// The buttons of an approval dialog (approvals.ts shows it). No vscode runtime import: unit-tested.
// Which button Enter presses: VS Code focuses the FIRST non-close item (it is also drawn as the
// primary button), and Escape / the X pick the close affordance. An ordinary request keeps
// "Allow once" first and labels its close affordance "Deny". A destructive, high-risk or once-only
// request (running outside the sandbox) puts "Deny" first, so Enter never approves it; VS Code
// still needs a close affordance there, a plain "Cancel" (also a denial).

export const ALLOW_ONCE = 'Allow once';
export const ALLOW_SESSION = 'Allow for this session';
export const DENY = 'Deny';
export const CANCEL = 'Cancel';

/** Requests where a reflexive Enter must not approve: what they do cannot be undone, or is never remembered. */
export function defaultsToDeny(request: ApprovalRequest): boolean {
  return (
    request.once === true ||
    request.risk === 'high' ||
    request.kind === 'destructive' ||
    request.kind === 'delete'
  );
}

/** The dialog's items, in the order VS Code needs for the default described above. */
export function approvalItems(request: ApprovalRequest): MessageItem[] {
  const allow: MessageItem[] = request.once
    ? [{ title: ALLOW_ONCE }]
    : [{ title: ALLOW_ONCE }, { title: ALLOW_SESSION }];
  return defaultsToDeny(request)
    ? [{ title: DENY }, ...allow, { title: CANCEL, isCloseAffordance: true }]
    : [...allow, { title: DENY, isCloseAffordance: true }];
}

/**
 * A yes/no modal whose yes a reflexive Enter cannot give (approving what a repository supplies,
 * running a command unconfined): the harmless answer comes first and takes the focus.
 */
export function enterSafeItems(yes: string, no: string): MessageItem[] {
  return [{ title: no }, { title: yes }, { title: CANCEL, isCloseAffordance: true }];
}
