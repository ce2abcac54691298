import * as fs from 'node:fs';
import * as path from 'node:path';
import { createLimiter } from '../model/limiter.ts';
import { aggregate, type Overall, type TaskReport } from './aggregate.ts';
import { type EvalSuite, type EvalTask, matchesFilter } from './schema.ts';
import { planTrials, type Shard, shardOf, suiteHash } from './shard.ts';
import { runTrial, type TrialOptions, type TrialResult } from './trial.ts';

export type { Overall, TaskReport } from './aggregate.ts';

// `keel eval`: every (task, trial) pair — or, with a shard, this machine's share of them — through
// one concurrency lane, infrastructure errors rerun up to `retryInfra` times, then the report. Every
// number in the report is a sum or a formula over the trial results, and each trial names its
// session log. The report carries what `keel eval merge` needs: the suite's hash, the whole plan and
// which shard this was.

export interface EvalOptions extends Omit<TrialOptions, 'outDir'> {
  readonly outDir: string;
  readonly trials?: number;
  readonly concurrency: number;
  readonly retryInfra: number;
  readonly filter?: string;
  readonly shard?: Shard;
  readonly onTrial?: (result: TrialResult, done: number, total: number) => void;
}

export interface EvalReport {
  readonly suite: string;
  /** sha256 of the suite's files and fixtures (shard.ts): shards of one suite share it. */
  readonly suite_hash: string;
  /** Trials per task for the whole run (every shard), after --filter and --trials, in suite order. */
  readonly plan: readonly { readonly task: string; readonly trials: number }[];
  /** Present when this report holds one shard's trials. */
  readonly shard?: Shard;
  /** Present on a `keel eval merge` report: the reports it was made from. */
  readonly merged_from?: readonly { file: string; shard: Shard; outDir: string }[];
  readonly startedAt: string;
  readonly durationMs: number;
  readonly model: string | undefined;
  readonly outDir: string;
  readonly tasks: readonly TaskReport[];
  readonly overall: Overall;
}

export function trialsFor(task: EvalTask, suite: EvalSuite, override?: number): number {
  return override ?? task.trials ?? suite.defaults.trials ?? 1;
}

export async function runEval(suite: EvalSuite, options: EvalOptions): Promise<EvalReport> {
  const started = Date.now();
  const tasks = suite.tasks.filter((t) => !options.filter || matchesFilter(t.id, options.filter));
  if (tasks.length === 0) throw new Error(`No task id matches --filter ${options.filter}`);
  fs.mkdirSync(options.outDir, { recursive: true });
  const lane = createLimiter(Math.max(1, options.concurrency));
  const plan = planTrials(tasks, (task) => trialsFor(task, suite, options.trials));
  const pairs = options.shard ? shardOf(plan, options.shard) : plan;
  let done = 0;
  const retried = new Map<string, TrialResult[]>();
  const results = await Promise.all(
    pairs.map(({ task, trial }) =>
      runOne(task, trial).catch(
        // Interrupted while waiting for a slot: recorded, so the report still covers every trial.
        (error: unknown): TrialResult => ({
          task: task.id,
          trial,
          attempt: 0,
          status: 'infra_error',
          reason: `not run: ${error instanceof Error ? error.message : String(error)}`,
          graders: [],
          facts: undefined,
          sessionId: undefined,
          log: undefined,
          exitCode: null,
          durationMs: 0,
          workspace: '',
        }),
      ),
    ),
  );
  function runOne(task: EvalTask, trial: number): Promise<TrialResult> {
    return lane.run(async () => {
      let r = await runTrial(task, trial, 0, options);
      for (let attempt = 1; r.status === 'infra_error' && attempt <= options.retryInfra; attempt++) {
        const list = retried.get(task.id) ?? [];
        list.push(r);
        retried.set(task.id, list);
        if (options.signal?.aborted) break;
        r = await runTrial(task, trial, attempt, options);
      }
      done++;
      options.onTrial?.(r, done, pairs.length);
      return r;
    }, options.signal);
  }
  const planned = tasks.map((t) => ({ task: t.id, trials: trialsFor(t, suite, options.trials) }));
  const report: EvalReport = {
    suite: suite.name,
    suite_hash: suiteHash(suite),
    plan: planned,
    ...(options.shard ? { shard: options.shard } : {}),
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    model: options.model,
    outDir: options.outDir,
    ...aggregate(planned, results, retried),
  };
  fs.writeFileSync(path.join(options.outDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  return report;
}
