import * as path from 'node:path';
import { z } from 'zod';

// keel-task/feature_list.json (seed 003): the whole task split into features, each with a shell
// command that exits 0 when it works. The agent may only flip `passes` false → true, through
// FeatureDone; the harness keeps the file byte-stable otherwise (canonical serialisation).

export const TASK_DIR = 'keel-task';
export const FEATURE_LIST = `${TASK_DIR}/feature_list.json`;
export const PROGRESS = `${TASK_DIR}/progress.md`;
export const INIT_SCRIPT = `${TASK_DIR}/init.sh`;
export const SESSIONS_LOG = `${TASK_DIR}/sessions.jsonl`;

export const featureSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'id: letters, digits, . _ - (max 64)'),
  category: z.string().min(1),
  description: z.string().min(1),
  steps: z.array(z.string().min(1)),
  verify: z.string().min(1, 'verify: a shell command that exits 0 when the feature works'),
  // Lower runs first (1 = most important), like P1/P2; features without one follow, in list order.
  priority: z.number().int().min(0).max(1_000_000).optional(),
  passes: z.boolean(),
});
export type Feature = z.infer<typeof featureSchema>;

export const featureListSchema = z
  .strictObject({ features: z.array(featureSchema).min(1, 'the list needs at least one feature') })
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    for (const [i, f] of list.features.entries()) {
      if (seen.has(f.id))
        ctx.addIssue({ code: 'custom', path: ['features', i, 'id'], message: `duplicate id ${f.id}` });
      seen.add(f.id);
    }
  });
export type FeatureList = z.infer<typeof featureListSchema>;

export class FeatureListError extends Error {}

export function parseFeatureList(text: string, where = FEATURE_LIST): FeatureList {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new FeatureListError(`${where} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = featureListSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new FeatureListError(
      `${where} is not a valid feature list at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  return parsed.data;
}

/** The one serialisation the harness writes: keys in a fixed order, two-space indent, final newline. */
export function serializeFeatureList(list: FeatureList): string {
  const features = list.features.map((f) => ({
    id: f.id,
    category: f.category,
    description: f.description,
    steps: f.steps,
    verify: f.verify,
    ...(f.priority !== undefined ? { priority: f.priority } : {}),
    passes: f.passes,
  }));
  return `${JSON.stringify({ features }, null, 2)}\n`;
}

export function withFlips(list: FeatureList, passed: ReadonlySet<string>): FeatureList {
  return { features: list.features.map((f) => (passed.has(f.id) ? { ...f, passes: true } : f)) };
}

/** The features in work order: by priority (lower first; none = last), then as listed. */
export function inWorkOrder(list: FeatureList): Feature[] {
  const rank = (f: Feature) => f.priority ?? Number.POSITIVE_INFINITY;
  return list.features
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
    .map(({ f }) => f);
}

export function nextFailing(list: FeatureList): Feature | undefined {
  return inWorkOrder(list).find((f) => !f.passes);
}

/** The list with these features back to failing (a re-verification found them broken). */
export function withRegressions(list: FeatureList, failed: ReadonlySet<string>): FeatureList {
  return { features: list.features.map((f) => (failed.has(f.id) ? { ...f, passes: false } : f)) };
}

export function countPassing(list: FeatureList): number {
  return list.features.filter((f) => f.passes).length;
}

export function taskPath(workspace: string, rel: string): string {
  return path.join(workspace, ...rel.split('/'));
}
