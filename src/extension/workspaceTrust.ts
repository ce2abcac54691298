import * as vscode from 'vscode';
import { createTrustRoom, type SteeringItem } from '../agent/trust/room.ts';
import { enterSafeItems } from './approvalButtons.ts';

// The VS Code side of the trust room (src/agent/trust/): what the open workspace supplies that would
// steer Keel (its MCP servers, network allowances, a memory file Keel did not write, a long task) is
// used only after the user approves that exact content in a native modal that names what each item
// grants. An untrusted workspace (Restricted Mode) gets none of it and is never asked.

export const REVIEW_TRUST_COMMAND = 'keel.reviewTrust';
export const HOW_TO_APPROVE = 'approve them with the command "Keel: Review Workspace Trust…"';

const describe = (items: readonly SteeringItem[]) =>
  items.map((i) => `• ${i.title} (${i.file})\n${i.grants.map((g) => `    ${g}`).join('\n')}`).join('\n\n');

export interface TrustReview {
  /**
   * Before a session starts: asks about what is new (once per window for the same set; "Not Now"
   * is remembered until something changes). True when an approval was given (the host is rebuilt).
   */
  beforeSession(): Promise<boolean>;
  /** The command: shows everything, approved or not; can approve the rest or forget approvals. */
  review(): Promise<void>;
}

export function createTrustReview(deps: {
  readonly root: () => string | undefined;
  /** An approval changed: the host is made again (sandbox allow-list, MCP servers). */
  readonly changed: () => void;
  readonly log: (level: 'info' | 'warn', message: string) => void;
}): TrustReview {
  const declined = new Set<string>();
  const room = () => {
    const root = deps.root();
    return root
      ? createTrustRoom({ root, workspaceTrusted: vscode.workspace.isTrusted, howToApprove: HOW_TO_APPROVE })
      : undefined;
  };
  const ask = async (pending: readonly SteeringItem[]): Promise<boolean> => {
    const APPROVE = 'Approve';
    // The buttons in the user's language; which one was pressed is known by its English key.
    const items = enterSafeItems(APPROVE, 'Not Now').map((item) => ({
      ...item,
      key: item.title,
      title: vscode.l10n.t(item.title),
    }));
    const choice = await vscode.window.showWarningMessage(
      pending.length === 1
        ? vscode.l10n.t('Keel: this workspace supplies 1 thing that would steer Keel. Approve it?')
        : vscode.l10n.t(
            'Keel: this workspace supplies {0} things that would steer Keel. Approve them?',
            pending.length,
          ),
      {
        modal: true,
        detail: `${describe(pending)}\n\n${vscode.l10n.t('They came with the repository (or changed since you approved them). Until you approve, Keel uses none of them. Approval is for exactly this content: a change asks again.')}`,
      },
      ...items,
    );
    return choice?.key === APPROVE;
  };
  return {
    async beforeSession() {
      const r = room();
      if (!r?.workspaceTrusted) return false;
      const pending = r.pending();
      const key = pending.map((i) => `${i.id}@${i.hash}`).join('\n');
      if (pending.length === 0 || declined.has(key)) return false;
      if (!(await ask(pending))) {
        declined.add(key);
        deps.log('info', `workspace trust: not approved (${pending.map((i) => i.id).join(', ')})`);
        return false;
      }
      r.approve(pending, Date.now());
      deps.log('info', `workspace trust: approved ${pending.map((i) => i.id).join(', ')}`);
      deps.changed();
      return true;
    },
    async review() {
      const r = room();
      if (!r) {
        void vscode.window.showInformationMessage('Keel: open a folder first.');
        return;
      }
      if (!r.workspaceTrusted) {
        void vscode.window.showInformationMessage(
          'Keel: this workspace is not trusted (Restricted Mode), so nothing it supplies steers Keel. Trust the workspace first to review it.',
        );
        return;
      }
      const pending = r.pending();
      if (pending.length > 0) {
        if (await ask(pending)) {
          r.approve(pending, Date.now());
          deps.changed();
        }
        return;
      }
      const items = r.items();
      const FORGET = 'Forget Approvals';
      const choice = await vscode.window.showInformationMessage(
        items.length === 0
          ? 'Keel: this workspace supplies nothing that would steer Keel.'
          : `Keel: all ${items.length} item${items.length === 1 ? '' : 's'} this workspace supplies are approved.`,
        { modal: true, detail: items.length ? describe(items) : undefined },
        ...(items.length ? [FORGET] : []),
      );
      if (choice === FORGET) {
        r.store.revoke();
        deps.changed();
      }
    },
  };
}
