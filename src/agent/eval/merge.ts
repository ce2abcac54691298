import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { aggregate } from './aggregate.ts';
import type { EvalReport } from './runner.ts';
import type { Shard } from './shard.ts';
import type { TrialResult } from './trial.ts';

// `keel eval merge REPORT…`: the shards' reports of one run become the report that one machine
// running every trial would have written. The reports are files from other machines, so they are
// validated (zod) before anything is read from them, and merged only when they are of the same suite
// (hash), the same plan and model, and their shards cover 1…N exactly once with no trial twice.
// The figures are recomputed from the union of the trials (aggregate.ts), never averaged from the
// shards' own figures.

const n = z.number().finite();
const facts = z.looseObject({
  toolCalls: z.array(z.string()),
  costUsd: n,
  turns: n,
  input: n,
  output: n,
  cacheRead: n,
  cacheWrite: n,
});
const trialResult = z.looseObject({
  task: z.string().min(1),
  trial: z.number().int().nonnegative(),
  attempt: z.number().int().nonnegative(),
  status: z.enum(['passed', 'failed', 'infra_error']),
  reason: z.string(),
  graders: z.array(z.looseObject({ type: z.string(), pass: z.boolean(), detail: z.string() })),
  facts: facts.nullish(),
  log: z.string().nullish(),
});
const shard = z.strictObject({ index: z.number().int().min(1), count: z.number().int().min(1) });
export const reportFileSchema = z.looseObject({
  suite: z.string(),
  suite_hash: z.string().min(1, 'no suite_hash (a report of a keel without sharding cannot be merged)'),
  plan: z.array(z.strictObject({ task: z.string().min(1), trials: z.number().int().nonnegative() })),
  shard: shard.optional(),
  startedAt: z.string(),
  durationMs: n,
  model: z.string().nullish(),
  outDir: z.string(),
  tasks: z.array(
    z.looseObject({
      id: z.string(),
      results: z.array(trialResult),
      retried: z.array(trialResult).default([]),
    }),
  ),
});

export class MergeError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`cannot merge these reports:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'MergeError';
  }
}

interface Input {
  readonly file: string;
  readonly report: z.infer<typeof reportFileSchema>;
  readonly shard: Shard;
}

function read(file: string, problems: string[]): Input | undefined {
  let value: unknown;
  try {
    value = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    problems.push(`${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    return undefined;
  }
  const parsed = reportFileSchema.safeParse(value);
  if (!parsed.success) {
    for (const i of parsed.error.issues.slice(0, 5))
      problems.push(`${file}: not a keel eval report: ${i.path.join('.') || '(top level)'}: ${i.message}`);
    return undefined;
  }
  return { file, report: parsed.data, shard: parsed.data.shard ?? { index: 1, count: 1 } };
}

type Plan = readonly { task: string; trials: number }[];
const samePlan = (a: Plan, b: Plan) =>
  a.length === b.length && a.every((p, i) => p.task === b[i]!.task && p.trials === b[i]!.trials);

/** Reads, checks and merges; throws MergeError listing every problem. */
export function mergeReportFiles(files: readonly string[], outDir: string): EvalReport {
  const problems: string[] = [];
  const inputs = files.flatMap((f) => read(f, problems) ?? []);
  if (problems.length > 0) throw new MergeError(problems);
  if (inputs.length === 0) throw new MergeError(['no report given']);
  const first = inputs[0]!;
  for (const x of inputs.slice(1)) {
    if (x.report.suite_hash !== first.report.suite_hash)
      problems.push(
        `${x.file} is of another suite or another version of it (suite "${x.report.suite}" ${x.report.suite_hash}) than ${first.file} (suite "${first.report.suite}" ${first.report.suite_hash})`,
      );
    else if (!samePlan(x.report.plan, first.report.plan))
      problems.push(`${x.file} ran another plan (--filter or --trials differ) than ${first.file}`);
    if ((x.report.model ?? null) !== (first.report.model ?? null))
      problems.push(
        `${x.file} ran model ${x.report.model ?? '(default)'}, ${first.file} ${first.report.model ?? '(default)'}`,
      );
    if (x.shard.count !== first.shard.count)
      problems.push(
        `${x.file} is shard ${x.shard.index}/${x.shard.count}, ${first.file} ${first.shard.index}/${first.shard.count}: not one split`,
      );
  }
  if (problems.length > 0) throw new MergeError(problems);
  const N = first.shard.count;
  const byIndex = new Map<number, string[]>();
  for (const x of inputs) byIndex.set(x.shard.index, [...(byIndex.get(x.shard.index) ?? []), x.file]);
  for (let i = 1; i <= N; i++) {
    const got = byIndex.get(i) ?? [];
    if (got.length === 0) problems.push(`shard ${i}/${N} is missing`);
    if (got.length > 1) problems.push(`shard ${i}/${N} is given twice: ${got.join(', ')}`);
  }
  // Each trial once, and every planned trial present (a shard cut short would leave a hole).
  const seen = new Map<string, string>();
  const results: TrialResult[] = [];
  const retried = new Map<string, TrialResult[]>();
  for (const x of inputs)
    for (const t of x.report.tasks) {
      for (const r of t.results) {
        const key = `${r.task} #${r.trial}`;
        const other = seen.get(key);
        if (other) problems.push(`trial ${key} is in both ${other} and ${x.file}`);
        seen.set(key, x.file);
        // Logs stay in their shard's --out directory: named from there.
        const log = r.log ? path.join(x.report.outDir, r.log) : undefined;
        results.push({ ...(r as unknown as TrialResult), log });
      }
      for (const r of t.retried)
        retried.set(t.id, [...(retried.get(t.id) ?? []), r as unknown as TrialResult]);
    }
  const plan = first.report.plan;
  const planned = new Map(plan.map((p) => [p.task, p.trials]));
  for (const { task, trials } of plan)
    for (let trial = 0; trial < trials; trial++)
      if (!seen.has(`${task} #${trial}`)) problems.push(`trial ${task} #${trial} is in no report`);
  for (const key of seen.keys()) {
    const [task, trial] = key.split(' #');
    if (!(Number(trial) < (planned.get(task!) ?? 0))) problems.push(`trial ${key} is not in the plan`);
  }
  if (problems.length > 0)
    throw new MergeError(
      problems.length > 20 ? [...problems.slice(0, 20), `… and ${problems.length - 20} more`] : problems,
    );
  const starts = inputs.map((x) => Date.parse(x.report.startedAt)).filter(Number.isFinite);
  return {
    suite: first.report.suite,
    suite_hash: first.report.suite_hash,
    plan,
    merged_from: [...inputs]
      .sort((a, b) => a.shard.index - b.shard.index)
      .map((x) => ({ file: x.file, shard: x.shard, outDir: x.report.outDir })),
    startedAt: new Date(starts.length > 0 ? Math.min(...starts) : Date.now()).toISOString(),
    // The shards ran side by side: the run took as long as its longest shard.
    durationMs: Math.max(...inputs.map((x) => x.report.durationMs)),
    model: first.report.model ?? undefined,
    outDir,
    ...aggregate(plan, results, retried),
  };
}
