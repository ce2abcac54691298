import { autoDecide } from '../safety/autoMode.ts';
import type { CommandVerdict } from '../safety/commandPolicy.ts';
import { fail, type ToolContext, type ToolResult } from './protocol.ts';

// `--approve auto` for one Bash command the policy asks about. Code first (autoMode.ts): never-class
// commands are refused here and never reach a model; routine classes run. What code leaves as "ask"
// goes to the classifier (safety/autoClassifier.ts) when the session has one: its "allow" runs the
// command, its "escalate" (or any failure) leaves the question to the user — refused without one.
// Both stages write an `auto_approval` line to the audit log.

const AUTO_REFUSED_SUGGESTION =
  'Do not retry this command or a variant of it: the auto approval mode never runs this class of command. Do the task another way, or tell the user the exact command and why it is needed (they can run it themselves).';

/**
 * `refused`: the tool's answer; `allowed`: run without a question; neither: ask the user, showing
 * `escalated` (the classifier's reason) with the question.
 */
export async function autoStage(
  command: string,
  verdict: CommandVerdict,
  ctx: ToolContext,
): Promise<{ refused?: ToolResult; allowed: boolean; escalated?: string }> {
  const auto = autoDecide(verdict);
  ctx.audit({
    type: 'auto_approval',
    tool: 'Bash',
    command,
    decision: auto.decision,
    classes: [...auto.classes],
    reason: auto.reason,
  });
  if (auto.decision === 'refuse') {
    return {
      allowed: false,
      refused: fail(
        'BLOCKED_BY_POLICY',
        `Refused by the auto approval mode (${auto.classes.join(', ')}): ${auto.reason}.`,
        AUTO_REFUSED_SUGGESTION,
        { command, classes: auto.classes },
      ),
    };
  }
  if (auto.decision === 'allow') return { allowed: true };
  if (!ctx.autoClassifier) return { allowed: false };
  const v = await ctx.autoClassifier.classify(
    { command, classes: auto.classes, reason: auto.reason },
    { toolUseId: ctx.toolUseId, signal: ctx.signal },
  );
  ctx.audit({
    type: 'auto_approval',
    stage: 'classifier',
    tool: 'Bash',
    command,
    decision: v.decision,
    classes: [...auto.classes],
    reason: v.reason,
    model: v.model,
    latency_ms: v.latencyMs,
    ...(v.failure ? { failure: v.failure } : {}),
  });
  if (v.decision === 'allow' && !ctx.signal.aborted) return { allowed: true };
  return {
    allowed: false,
    escalated: `the auto classifier (${v.model || 'no model'}) escalated: ${v.reason}`,
  };
}
