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
    passes: f.passes,
  }));
  return `${JSON.stringify({ features }, null, 2)}\n`;
}

export function withFlips(list: FeatureList, passed: ReadonlySet<string>): FeatureList {
  return { features: list.features.map((f) => (passed.has(f.id) ? { ...f, passes: true } : f)) };
}

export function nextFailing(list: FeatureList): Feature | undefined {
  return list.features.find((f) => !f.passes);
}

export function countPassing(list: FeatureList): number {
  return list.features.filter((f) => f.passes).length;
}

export function taskPath(workspace: string, rel: string): string {
  return path.join(workspace, ...rel.split('/'));
}
