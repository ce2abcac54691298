import type { SandboxInfo } from '../agent/host.ts';
import { ENGLISH, type L10n } from './approvalText.ts';

// What the extension shows about the OS sandbox (no 'vscode' import: unit-testable): the status bar
// tooltip line, the one-time panel notice, and the modal that re-runs one refused command outside.

export const RUN_OUTSIDE = 'Run outside the sandbox';
export const KEEP_REFUSED = 'Keep It Refused';

/** The tooltip line: always present, so the user can see whether commands are confined. */
export function sandboxTooltip(info: SandboxInfo | undefined): string {
  if (!info) return 'Sandbox: not probed yet (starts with the first session).';
  if (info.tier === 'bwrap') return `Sandbox: on — ${info.summary.replace(/^Sandbox on /, '')}`;
  const fix = info.fix ? ` Fix: ${info.fix}` : '';
  const refuse = info.failIfUnavailable ? ' Commands are refused (keel.sandbox.failIfUnavailable).' : '';
  return `Sandbox: OFF — ${info.summary}${refuse}${fix}`;
}

/** The panel notice, shown once when commands run unconfined; undefined when all is well. */
export function sandboxNotice(
  info: SandboxInfo | undefined,
): { text: string; suggestion?: string } | undefined {
  if (info?.tier !== 'none') return undefined;
  return {
    text: info.failIfUnavailable
      ? `${info.summary} Commands will not run (keel.sandbox.failIfUnavailable).`
      : info.summary,
    ...(info.fix ? { suggestion: info.fix } : {}),
  };
}

/** The modal's words: plain, naming what the command can do unconfined. */
export function runOutsideDialog(command: string, l10n: L10n = ENGLISH): { message: string; detail: string } {
  return {
    message: l10n.t('Run this command outside the sandbox?'),
    detail: `${command}\n\n${l10n.t('The sandbox refused part of it. Outside the sandbox it runs with your full rights: it can write anywhere you can, read your SSH keys and other secrets, and use the network and local sockets. Keel will ask the agent to re-run exactly this command once; nothing else is unconfined.')}`,
  };
}

/** What Keel tells the agent after the user chose to re-run a refused command outside the sandbox. */
export function runOutsideMessage(command: string): string {
  return `I approved running this one command outside the sandbox. Run it again with Bash and "outside_sandbox": true, unchanged:\n\n${command}`;
}
