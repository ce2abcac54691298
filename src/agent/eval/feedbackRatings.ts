import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { isValidSessionId } from '../session/log.ts';

// The 👍/👎 ratings kept with a session (`.keel/feedback/<session>.jsonl`, written by feedback.ts),
// read back so a reopened chat shows how each answer was rated. Kept apart from feedback.ts, which
// the panel loads only on the first rating: this runs whenever a chat is shown.
//
// Threat: the file is in the workspace's `.keel/`, which a repository can ship. Every line is
// validated; only ratings of this session count; the read is bounded; what comes out is a map from
// answer id to "up"/"down" that only ever decides which button shows as pressed.

export const feedbackSchema = z.strictObject({
  v: z.literal(1),
  ts: z.number(),
  session: z.string().refine(isValidSessionId, 'not a session id'),
  /** The answer rated (the assistant message's id); absent: the session as a whole. */
  message: z.string().min(1).max(200).optional(),
  rating: z.enum(['up', 'down']),
  note: z.string().max(4000).optional(),
});
export type Feedback = z.infer<typeof feedbackSchema>;

export function feedbackDir(stateDir: string): string {
  return path.join(stateDir, 'feedback');
}

/** A rating file larger than this is not read (real ones hold a line per click). */
const MAX_RATINGS_BYTES = 1024 * 1024;

/** Each answer's latest rating in `sessionId`'s feedback file (empty when there is none). */
export function answerRatings(stateDir: string, sessionId: string): Record<string, 'up' | 'down'> {
  const ratings: Record<string, 'up' | 'down'> = Object.create(null);
  if (!isValidSessionId(sessionId)) return ratings;
  const file = path.join(feedbackDir(stateDir), `${sessionId}.jsonl`);
  let text: string;
  try {
    const stat = fs.lstatSync(file);
    if (!stat.isFile() || stat.size > MAX_RATINGS_BYTES) return ratings;
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return ratings;
  }
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let parsed: ReturnType<typeof feedbackSchema.safeParse>;
    try {
      parsed = feedbackSchema.safeParse(JSON.parse(line));
    } catch {
      continue;
    }
    const record = parsed.data;
    if (!record || record.session !== sessionId || !record.message) continue;
    ratings[record.message] = record.rating;
  }
  return ratings;
}
