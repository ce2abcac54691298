import type { AgentMessage } from '../messages.ts';

// Untrusted content never becomes memory silently: an entry that repeats text from a tool result
// (file, command output, web) is written only after the user approves that entry. Words in the
// prompt never switch this off: a file the model read can say "remember" as easily as the user.

const norm = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();

/** Does `entry` repeat a run of text from any tool result of the transcript? */
export function copiedFromToolResult(entry: string, transcript: readonly AgentMessage[]): boolean {
  const e = norm(entry);
  const results = transcript.flatMap((m) => (m.role === 'tool_result' ? [norm(m.content)] : []));
  if (results.length === 0) return false;
  const users = transcript.flatMap((m) => (m.role === 'user' ? [norm(m.text)] : []));
  const width = Math.min(24, e.length);
  if (width < 12) return false;
  for (let at = 0; at + width <= e.length; at += 6) {
    const piece = e.slice(at, at + width);
    // Text the user wrote themselves is theirs, even if a tool also printed it.
    if (users.some((u) => u.includes(piece))) continue;
    if (results.some((r) => r.includes(piece))) return true;
  }
  return false;
}
