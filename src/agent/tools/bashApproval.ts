import type { ApprovalRequest } from '../host.ts';
import type { CommandVerdict } from '../safety/commandPolicy.ts';

// The questions Bash asks: the command policy's ask, and a one-time run outside the OS sandbox.

export function approvalRequest(
  command: string,
  verdict: CommandVerdict,
  description: string | undefined,
  escalated?: string,
): ApprovalRequest {
  const kind = verdict.approvalKind ?? 'command';
  const what =
    kind === 'network' ? 'Network command' : kind === 'destructive' ? 'Destructive command' : 'Command';
  const summary = description?.trim() || command.split('\n')[0]?.slice(0, 80) || 'run command';
  return {
    kind,
    title: `${what}: ${summary}`,
    detail: `${command}\n\nNeeds approval because: ${verdict.reason}${escalated ? `\n\nAsked because ${escalated}` : ''}`,
    risk: verdict.risk,
    ...(verdict.sessionKey ? { sessionKey: verdict.sessionKey } : {}),
    message: {
      id: 'command',
      kind: kind === 'network' || kind === 'destructive' ? kind : 'command',
      summary,
      command,
      reason: verdict.reason,
      ...(escalated ? { escalated } : {}),
    },
  };
}

export function outsideSandboxRequest(command: string, verdict: CommandVerdict): ApprovalRequest {
  const why = verdict.decision === 'ask' ? `\n\nThe command policy also flags it: ${verdict.reason}` : '';
  return {
    kind: 'command',
    title: `Run OUTSIDE the sandbox: ${command.split('\n')[0]?.slice(0, 80) ?? ''}`,
    detail: `${command}\n\nThe agent asks to run this one command without the OS sandbox. Unconfined, it can write anywhere you can, read your SSH keys and other secrets, use the network and local sockets.${why}`,
    risk: 'high',
    once: true,
    message: {
      id: 'outside_sandbox',
      command,
      ...(verdict.decision === 'ask' ? { policyReason: verdict.reason } : {}),
    },
  };
}
