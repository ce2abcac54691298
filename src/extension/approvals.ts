import * as vscode from 'vscode';
import type { ApprovalDecision, ApprovalRequest, ApprovalsPort } from '../agent/host.ts';
import { ALLOW_ONCE, ALLOW_SESSION, approvalItems } from './approvalButtons.ts';
import { approvalText } from './approvalText.ts';
import { type ApprovalPolicy, readClassifierModel } from './settings.ts';

// Approvals through VS Code's own modal dialog. The decision is code: a per-category policy from the
// settings may answer without asking; closing the dialog (Escape, the X) is a denial.
// "Allow for this session" is remembered by the core session (withSessionMemory), not here.
// Which button is the default (Enter) and which the close affordance: approvalButtons.ts.

export interface ModalApprovalsOptions {
  /** Reads the current policy for a request's category (settings can change at any time). */
  readonly policyFor: (kind: ApprovalRequest['kind']) => ApprovalPolicy;
  readonly log?: (message: string) => void;
  /** A one-time request the user already approved in its own modal ("Run outside the sandbox…"). */
  readonly consumePreApproval?: (request: ApprovalRequest) => boolean;
  /** The auto classifier's model (default: keel.approvals.classifierModel; undefined: the chat's model). */
  readonly classifierModel?: () => string | undefined;
}

export function createModalApprovals(options: ModalApprovalsOptions): ApprovalsPort {
  return {
    // keel.approvals.command = auto: the Bash tool decides by effect class first; what it leaves asks here.
    get auto() {
      return options.policyFor('command') === 'auto';
    },
    // Read at each decision: a settings change holds from the next command.
    get classifierModel() {
      return (options.classifierModel ?? readClassifierModel)();
    },
    async ask(request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalDecision> {
      if (signal?.aborted) return 'deny';
      const policy = request.kind === 'other' ? 'ask' : options.policyFor(request.kind);
      if (policy === 'deny') {
        options.log?.(`approval denied by policy (${request.kind}): ${request.title}`);
        return 'deny';
      }
      // Running outside the sandbox is never auto-allowed by a setting nor offered for the session.
      const preApproved = request.once && options.consumePreApproval?.(request);
      if (preApproved) return 'allow_once';
      if (policy === 'allow' && !request.once) return 'allow_once';
      const risk = request.risk === 'high' ? vscode.l10n.t(' (high risk)') : '';
      // The buttons in the user's language; which one was pressed is known by its English key.
      const items = approvalItems(request).map((item) => ({
        ...item,
        key: item.title,
        title: vscode.l10n.t(item.title),
      }));
      // The question in the user's language; what it names (command, path, diff) stays verbatim.
      const text = approvalText(request, vscode.l10n);
      const dialog = vscode.window.showWarningMessage(
        `Keel: ${text.title}${risk}`,
        { modal: true, detail: text.detail },
        ...items,
      );
      // An aborted run must not hang on a dialog nobody will answer; the dialog's later answer is ignored.
      const aborted = new Promise<undefined>((resolve) => {
        signal?.addEventListener('abort', () => resolve(undefined), { once: true });
      });
      const choice = (await Promise.race([dialog, aborted]))?.key;
      if (choice === ALLOW_SESSION && !request.once) return 'allow_session';
      if (choice === ALLOW_ONCE) return 'allow_once';
      return 'deny';
    },
  };
}
