import type { AgentEventBody } from '../events.ts';
import type { ApprovalsPort } from '../host.ts';
import type { AgentMessage } from '../messages.ts';
import type { ModelClient } from '../model/client.ts';
import type { SwitchableModelClient } from '../model/switchable.ts';
import { type AutoClassifier, createAutoClassifier } from '../safety/autoClassifier.ts';

// The session's auto-approval classifier (safety/autoClassifier.ts): its model is the host's setting
// (`--classifier-model`, keel.approvals.classifierModel) or else the session's current model; it sees
// the user's latest request in their words — a `user` message's text, never a tool result, a file,
// a reminder or the agent's own words. Each verdict is an `auto_classifier` event (the trace, the
// CLI's progress lines, OpenTelemetry); the Bash tool writes the audit line.

const MAX_TRACE_COMMAND = 500;

/** The text of the newest message the user wrote. */
export function latestUserRequest(transcript: readonly AgentMessage[]): string | undefined {
  for (let i = transcript.length - 1; i >= 0; i--) {
    const m = transcript[i];
    if (m?.role === 'user') return m.text;
  }
  return undefined;
}

export function sessionClassifier(deps: {
  readonly approvals: ApprovalsPort;
  /** The session's model client (the default classifier). */
  readonly model: SwitchableModelClient;
  /** A client for another model (the classifier setting). */
  readonly make: (model: string) => ModelClient;
  readonly transcript: () => readonly AgentMessage[];
  readonly now: () => number;
  readonly emit: (body: AgentEventBody) => void;
}): AutoClassifier {
  const clients = new Map<string, ModelClient>();
  const timeout = Number(process.env.KEEL_CLASSIFIER_TIMEOUT_MS);
  return createAutoClassifier({
    client: () => {
      // Read per decision: the extension's setting may change during a session.
      const name = deps.approvals.classifierModel?.trim();
      if (!name) return { client: deps.model, model: deps.model.current };
      let client = clients.get(name);
      if (!client) {
        client = deps.make(name);
        clients.set(name, client);
      }
      return { client, model: name };
    },
    userRequest: () => latestUserRequest(deps.transcript()),
    now: deps.now,
    ...(Number.isFinite(timeout) && timeout > 0 ? { timeoutMs: timeout } : {}),
    onVerdict: (v, input, toolUseId) =>
      deps.emit({
        type: 'auto_classifier',
        toolUseId,
        command: input.command.slice(0, MAX_TRACE_COMMAND),
        decision: v.decision,
        reason: v.reason,
        model: v.model,
        latencyMs: v.latencyMs,
        ...(v.failure ? { failure: v.failure } : {}),
        ...(v.costUsd !== undefined ? { costUsd: v.costUsd } : {}),
      }),
  });
}
