import { z } from 'zod';

// keel-task/sessions.jsonl: the harness's own record of sessions (committed with the task). A start
// line without an end line is a session that crashed or was killed.

export const sessionLineSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('init'), session: z.string(), ts: z.number(), features: z.number() }),
  z.object({ type: z.literal('start'), session: z.string(), feature: z.string().optional(), ts: z.number() }),
  z.object({ type: z.literal('flip'), session: z.string(), id: z.string(), ts: z.number() }),
  z.object({
    type: z.literal('end'),
    session: z.string(),
    feature: z.string().optional(),
    outcome: z.string(),
    passed: z.array(z.string()),
    reverted: z.boolean(),
    ts: z.number(),
  }),
]);
export type SessionLine = z.infer<typeof sessionLineSchema>;

export function readSessionsLog(text: string | undefined): SessionLine[] {
  if (!text) return [];
  const out: SessionLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const parsed = sessionLineSchema.safeParse(JSON.parse(line));
      if (parsed.success) out.push(parsed.data);
    } catch {
      // a torn line from a killed process
    }
  }
  return out;
}
