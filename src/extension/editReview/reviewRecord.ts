import { z } from 'zod';
import { MAX_RECORDED_PATH, recordedPathProblem } from '../../agent/safety/paths/containedPath.ts';
import type { StoredReview } from './reviewStore.ts';

// The shape of a stored review (`.keel/review/<id>.json`), checked with zod on load. Loaded with the
// first restore (reviewManager.restore imports it), not at activation: zod alone costs more than
// the rest of activation. The shape is not the whole check: the path must also be inside the
// workspace with no symlink on the way, which reviewRestore.ts asks the contained-path helper.

const recordedPath = z
  .string()
  .max(MAX_RECORDED_PATH)
  .superRefine((p, ctx) => {
    // Absolute is allowed here (a file in a second workspace folder); containment decides.
    const problem = recordedPathProblem(p, { allowAbsolute: true });
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message });
  });

const storedReviewSchema = z.object({
  version: z.union([z.literal(1), z.literal(2)]),
  reviewId: z.string().regex(/^[A-Za-z0-9-]{1,80}$/),
  path: recordedPath,
  kind: z.enum(['modify', 'create', 'delete']),
  originalBase64: z
    .string()
    .regex(/^[A-Za-z0-9+/]*={0,2}$/)
    .nullable(),
  renamedFrom: recordedPath.optional(),
  fingerprint: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  savedAt: z.number().finite(),
});

/** The entry, or an Error saying which field is wrong and why. */
export function parseStoredReview(raw: unknown): StoredReview {
  const parsed = storedReviewSchema.safeParse(raw);
  if (parsed.success) {
    const { renamedFrom, ...rest } = parsed.data;
    return { ...rest, ...(renamedFrom !== undefined ? { renamedFrom } : {}) };
  }
  const issue = parsed.error.issues[0];
  throw new Error(
    `invalid entry: ${issue ? `${issue.path.join('.') || 'entry'}: ${issue.message}` : 'not an entry'}`,
  );
}
