import type { ApprovalDecision, ApprovalRisk } from '../../host.ts';
import {
  createProtectedPaths,
  type ProtectedPaths,
  type ProtectedReason,
} from '../../safety/paths/protectedPaths.ts';
import { refusal } from '../../safety/approvals.ts';
import type { PathGuard } from '../../safety/paths/pathGuard.ts';
import { type ToolContext, ToolFailure } from '../protocol.ts';

// Writing a file the user did not author asks first. The decision is code: the path is classified,
// the user is asked through the host's approvals port, and "allow for this session" is remembered
// here so the same file is not asked about twice.

export interface WriteGate {
  /** Resolves when the write may proceed; throws ToolFailure(DENIED_BY_USER / ABORTED) otherwise. */
  authorize(
    ctx: ToolContext,
    target: { readonly canonical: string; readonly display: string },
    action: 'create' | 'modify',
    tool: string,
  ): Promise<void>;
}

export interface WriteGateOptions {
  /** Classifier; default: one per path guard, asking git about ignored files. */
  readonly protectedPaths?: ProtectedPaths;
}

const RISK: Record<ProtectedReason, ApprovalRisk> = {
  vcs: 'high',
  keel_state: 'high',
  secret: 'high',
  lockfile: 'medium',
  git_ignored: 'medium',
};

export function createWriteGate(options: WriteGateOptions = {}): WriteGate {
  const classifiers = new WeakMap<PathGuard, ProtectedPaths>();
  const sessionAllowed = new Set<string>();
  const classifierFor = (guard: PathGuard) => {
    if (options.protectedPaths) return options.protectedPaths;
    let found = classifiers.get(guard);
    if (!found) {
      found = createProtectedPaths({ roots: guard.roots, stateDir: guard.stateDir });
      classifiers.set(guard, found);
    }
    return found;
  };

  return {
    async authorize(ctx, target, action, tool) {
      const verdict = await classifierFor(ctx.guard).check(target.canonical, ctx.signal);
      if (!verdict.protected) return;
      const sessionKey = `protected_write:${target.display}`;
      const memoKey = `${ctx.sessionId}\u0000${sessionKey}`;
      if (sessionAllowed.has(memoKey)) return;
      if (ctx.signal.aborted) throw aborted();
      const request = {
        kind: 'protected_write' as const,
        title: action === 'create' ? `Create ${target.display}` : `Modify ${target.display}`,
        detail: `${tool} wants to ${action === 'create' ? 'create' : 'change'} ${target.display}, which is ${verdict.detail}.`,
        risk: RISK[verdict.reason],
        sessionKey,
      };
      ctx.audit({ type: 'approval_request', tool, path: target.display, reason: verdict.reason, ...request });
      let decision: ApprovalDecision;
      try {
        decision = await ctx.host.approvals.ask(
          {
            ...request,
            message: {
              id: 'protected_write',
              action: action === 'create' ? 'create' : 'modify',
              tool,
              path: target.display,
              why: verdict.detail,
            },
          },
          ctx.signal,
        );
      } catch (error) {
        if (ctx.signal.aborted) throw aborted();
        throw error;
      }
      ctx.audit({
        type: 'approval_decision',
        tool,
        path: target.display,
        kind: request.kind,
        sessionKey,
        decision,
      });
      if (decision === 'allow_session') sessionAllowed.add(memoKey);
      if (decision === 'deny') {
        throw new ToolFailure(
          'DENIED_BY_USER',
          ctx.host.approvals.unattended
            ? refusal(ctx.host.approvals, `the change to ${target.display} (${verdict.detail})`)
            : `The user declined the change to ${target.display} (${verdict.detail}).`,
          'Do not retry this write. Ask the user how to proceed, or leave this file alone and continue.',
        );
      }
    },
  };
}

let shared: WriteGate | undefined;

/**
 * The gate tools use when none is passed: one per process, so "allow for this session" given to
 * Edit also covers Write and MultiEdit. Memory is keyed by session id, so sessions stay separate.
 */
export function sharedWriteGate(): WriteGate {
  shared ??= createWriteGate();
  return shared;
}

export function aborted(): ToolFailure {
  return new ToolFailure(
    'ABORTED',
    'Aborted before the file was written; it is unchanged.',
    'Wait for the user.',
  );
}
