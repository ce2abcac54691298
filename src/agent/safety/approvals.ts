import type { ApprovalDecision, ApprovalRequest, ApprovalsPort } from '../host.ts';

/** Remembers "allow for this session" answers by request key, so the user is asked once. */
export function withSessionMemory(inner: ApprovalsPort): ApprovalsPort {
  const allowed = new Set<string>();
  return {
    ...(inner.unattended ? { unattended: inner.unattended } : {}),
    get auto() {
      return inner.auto === true;
    },
    async ask(request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalDecision> {
      if (request.once) {
        const decision = await inner.ask(request, signal);
        return decision === 'allow_session' ? 'allow_once' : decision;
      }
      const key = request.sessionKey ?? `${request.kind}:${request.detail}`;
      if (allowed.has(key)) return 'allow_session';
      const decision = await inner.ask(request, signal);
      if (decision === 'allow_session') allowed.add(key);
      return decision;
    },
  };
}

export type ApprovalPolicy = 'never' | 'safe' | 'all';

/**
 * Non-interactive policies. `never` and `safe` deny every request (under `safe`, only commands the
 * policy classes as safe run — they never ask); `all` allows what asks (the hard blacklist still
 * blocks before any question is asked).
 */
export function createPolicyApprovals(policy: ApprovalPolicy, why?: string): ApprovalsPort {
  if (policy === 'all') return { ask: async () => 'allow_once' };
  return {
    ask: async () => 'deny',
    unattended:
      why ??
      `--approve ${policy} refuses every approval request; run with --approve all to allow what asks (the never-run list stays blocked)`,
  };
}

/**
 * "<The user denied | No approval was possible for> <action>": a refusal by policy must not claim that
 * someone was asked (the model would tell the user "you declined").
 */
export function refusal(approvals: ApprovalsPort, action: string): string {
  return approvals.unattended
    ? `No approval was possible for ${action} (nobody was asked): ${approvals.unattended}.`
    : `The user denied ${action}.`;
}
