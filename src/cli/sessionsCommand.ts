import * as path from 'node:path';
import { listSessions } from '../agent/session/sessionIndex.ts';
import type { SessionsArgs } from './args.ts';

// `keel sessions`: the workspace's past sessions, newest first, from the same index the panel's
// history list reads (no whole log is read), so the ID `keel run --resume` and `keel restore` take
// can be found without opening `.keel/sessions/`.

export function sessionsCommand(
  args: SessionsArgs,
  workspace: string,
  out: (text: string) => void,
  warn: (text: string) => void,
): number {
  const stateDir = path.join(workspace, '.keel');
  const all = listSessions(stateDir, { log: (message) => warn(`keel: ${message}\n`) });
  if (args.json) {
    out(`${JSON.stringify({ workspace, sessions: all })}\n`);
    return 0;
  }
  // Logs Keel did not create here are counted, never listed: their titles are the repository's text.
  const sessions = all.filter((s) => !s.foreign);
  const foreign = all.length - sessions.length;
  const foreignNote =
    foreign > 0
      ? `${foreign} session log${foreign === 1 ? '' : 's'} in ${path.join(stateDir, 'sessions')} ${foreign === 1 ? 'was' : 'were'} not created by Keel here (committed to the repository, or from before Keel kept a ledger): not listed, and cannot be resumed.\n`
      : '';
  if (sessions.length === 0) {
    out(`No sessions yet in ${path.join(stateDir, 'sessions')}.\n${foreignNote}`);
    return 0;
  }
  const successors = new Map(sessions.flatMap((s) => (s.continuedFrom ? [[s.continuedFrom, s.id]] : [])));
  for (const s of sessions) {
    const when = new Date(s.updatedAt).toISOString().replace('T', ' ').slice(0, 16);
    const messages = `${s.messageCount} message${s.messageCount === 1 ? '' : 's'}`;
    // A run that failed at once (no API key, nothing listening) is not a conversation to go back to.
    const failed = s.replies === 0 ? '  [no model reply: the run failed before any answer]' : '';
    out(`${s.id}  ${when}  ${messages.padEnd(12)}  ${s.title || '(no prompt)'}${failed}\n`);
    // A reset links two sessions both ways: the new one names the old, the old one its successor.
    if (s.continuedFrom)
      out(
        `  ↳ continued from ${s.continuedFrom}${s.continuedReason ? ` (reset: ${s.continuedReason})` : ''}\n`,
      );
    const next = successors.get(s.id);
    if (next) out(`  ↳ went on as ${next} (resuming ${s.id} resumes ${next})\n`);
  }
  out(`\nResume one with: keel run --resume ID "PROMPT"\n${foreignNote ? `\n${foreignNote}` : ''}`);
  return 0;
}
