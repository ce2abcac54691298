import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AgentEvent } from '../events.ts';
import { type Feedback, feedbackDir, feedbackSchema } from './feedbackRatings.ts';
import { createTaskFromSession, FromSessionError } from './fromSession.ts';

// Evals from real use. A thumbs up or down (with an optional note) on an answer is kept with its
// session, in `.keel/feedback/<session>.jsonl` — beside the session log rather than inside it, so a
// rating given after the session ended never rewrites the append-only log. `keel eval --from-feedback
// OUT-DIR` turns every session whose latest rating of some answer is "down" into a draft task (the
// `--from-session` machinery: first prompt, pre-session fixture, a placeholder grader `keel eval`
// refuses until a person writes the real check), with the notes in the task's description. The
// records are data read back from disk (a repository can ship a `.keel/` too): validated, and they
// can only ever produce drafts.

export { type Feedback, feedbackDir, feedbackSchema } from './feedbackRatings.ts';

/** Appends one rating. The panel calls this; a later rating of the same answer replaces it. */
export function recordFeedback(
  stateDir: string,
  entry: Omit<Feedback, 'v' | 'ts'> & { ts?: number },
): Feedback {
  const record = feedbackSchema.parse({ ...entry, v: 1, ts: entry.ts ?? Date.now() });
  fs.mkdirSync(feedbackDir(stateDir), { recursive: true });
  fs.appendFileSync(
    path.join(feedbackDir(stateDir), `${record.session}.jsonl`),
    `${JSON.stringify(record)}\n`,
  );
  return record;
}

export interface DownSession {
  readonly session: string;
  /** The notes of its thumbs-down ratings, oldest first. */
  readonly notes: readonly string[];
}

/** Sessions with an answer whose latest rating is "down"; unreadable lines are skipped and counted. */
export function thumbsDownSessions(stateDir: string): { sessions: DownSession[]; skipped: number } {
  const dir = feedbackDir(stateDir);
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return { sessions: [], skipped: 0 };
  }
  let skipped = 0;
  const sessions: DownSession[] = [];
  for (const name of names.sort()) {
    const latest = new Map<string, Feedback>();
    const file = path.join(dir, name);
    if (!fs.lstatSync(file).isFile()) continue;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let parsed: ReturnType<typeof feedbackSchema.safeParse>;
      try {
        parsed = feedbackSchema.safeParse(JSON.parse(line));
      } catch {
        skipped++;
        continue;
      }
      // A record filed under another session's name is not that session's.
      if (!parsed.success || `${parsed.data.session}.jsonl` !== name) {
        skipped++;
        continue;
      }
      const key = parsed.data.message ?? '';
      const before = latest.get(key);
      if (!before || before.ts <= parsed.data.ts) latest.set(key, parsed.data);
    }
    const downs = [...latest.values()].filter((f) => f.rating === 'down').sort((a, b) => a.ts - b.ts);
    if (downs.length > 0)
      sessions.push({
        session: downs[0]!.session,
        notes: downs.flatMap((f) => (f.note?.trim() ? [f.note.trim()] : [])),
      });
  }
  return { sessions, skipped };
}

export interface FromFeedbackResult {
  readonly made: readonly { session: string; taskFile: string; warnings: readonly string[] }[];
  /** Sessions not turned into a task, and why (already drafted, log missing…). */
  readonly skipped: readonly { session: string; reason: string }[];
  readonly unreadable: number;
}

/** `keel eval --from-feedback OUT-DIR`: one draft task per thumbs-down session not drafted yet. */
export function tasksFromFeedback(options: {
  root: string;
  stateDir: string;
  outDir: string;
}): FromFeedbackResult {
  const { sessions, skipped: unreadable } = thumbsDownSessions(options.stateDir);
  const made: { session: string; taskFile: string; warnings: readonly string[] }[] = [];
  const skipped: { session: string; reason: string }[] = [];
  for (const { session, notes } of sessions) {
    try {
      const r = createTaskFromSession({ ...options, session });
      if (notes.length > 0) {
        // The user's own words about what went wrong: the first thing the grader's author needs.
        const task = JSON.parse(fs.readFileSync(r.taskFile, 'utf8')) as { description?: string };
        task.description = `Thumbs down: ${notes.map((n) => JSON.stringify(n)).join('; ')}. ${task.description ?? ''}`;
        fs.writeFileSync(r.taskFile, `${JSON.stringify(task, null, 2)}\n`);
      }
      made.push({ session, taskFile: r.taskFile, warnings: r.warnings });
    } catch (error) {
      if (!(error instanceof FromSessionError)) throw error;
      skipped.push({ session, reason: error.message });
    }
  }
  return { made, skipped, unreadable };
}

/**
 * The panel's 👍/👎 on one answer: recorded only for an assistant message of that session (the id
 * comes from the webview), so a rating can never be filed against another session or a made-up id.
 */
export function recordAnswerFeedback(
  stateDir: string,
  session: { readonly id: string; eventsSince(after: number): readonly AgentEvent[] },
  rating: { readonly messageId: string; readonly rating: 'up' | 'down'; readonly note?: string },
): { ok: true; record: Feedback } | { ok: false; error: string } {
  const known = session
    .eventsSince(0)
    .some(
      (e) =>
        e.type === 'message_appended' && e.message.role === 'assistant' && e.message.id === rating.messageId,
    );
  if (!known) return { ok: false, error: 'That answer is not part of the current session.' };
  const note = rating.note?.trim();
  const record = recordFeedback(stateDir, {
    session: session.id,
    message: rating.messageId,
    rating: rating.rating,
    ...(note ? { note } : {}),
  });
  return { ok: true, record };
}
