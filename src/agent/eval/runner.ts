import * as fs from 'node:fs';
import * as path from 'node:path';
import { createLimiter } from '../model/limiter.ts';
import { passAtK, passHatK, round } from './passAtK.ts';
import { type EvalSuite, type EvalTask, matchesFilter } from './schema.ts';
import { runTrial, type TrialOptions, type TrialResult } from './trial.ts';

// `keel eval`: every (task, trial) pair through one concurrency lane, infrastructure errors rerun
// up to `retryInfra` times, then the report. Every number in the report is a sum or a formula over
// the trial results, and each trial names its session log.

export interface EvalOptions extends Omit<TrialOptions, 'outDir'> {
  readonly outDir: string;
  readonly trials?: number;
  readonly concurrency: number;
  readonly retryInfra: number;
  readonly filter?: string;
  readonly onTrial?: (result: TrialResult, done: number, total: number) => void;
}

export interface TaskReport {
  readonly id: string;
  readonly trials: number;
  readonly passed: number;
  readonly failed: number;
  readonly infra_errors: number;
  readonly pass_at_1: number | null;
  /** k = 1…K (K = trials run), over the valid (non-infra) trials; null where k exceeds them. */
  readonly pass_at_k: Record<string, number | null>;
  readonly pass_hat_k: Record<string, number | null>;
  readonly mean_turns: number | null;
  readonly tokens: { input: number; output: number; cache_read: number; cache_write: number };
  readonly cache_hit_ratio: number | null;
  readonly cost_usd: number;
  readonly results: readonly TrialResult[];
  /** Infrastructure failures that a retry replaced (kept for the record). */
  readonly retried: readonly TrialResult[];
}

export interface EvalReport {
  readonly suite: string;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly model: string | undefined;
  readonly outDir: string;
  readonly tasks: readonly TaskReport[];
  readonly overall: Omit<TaskReport, 'id' | 'results' | 'retried'> & { readonly tasks: number };
}

function ks(K: number): number[] {
  return Array.from({ length: K }, (_, i) => i + 1);
}

function summarize(results: readonly TrialResult[], K: number) {
  const valid = results.filter((r) => r.status !== 'infra_error');
  const n = valid.length;
  const c = valid.filter((r) => r.status === 'passed').length;
  const withFacts = results.flatMap((r) => (r.facts ? [r.facts] : []));
  const sum = (f: (x: (typeof withFacts)[number]) => number) => withFacts.reduce((a, x) => a + f(x), 0);
  const tokens = {
    input: sum((f) => f.input),
    output: sum((f) => f.output),
    cache_read: sum((f) => f.cacheRead),
    cache_write: sum((f) => f.cacheWrite),
  };
  const prompt = tokens.input + tokens.cache_read + tokens.cache_write;
  const validFacts = valid.flatMap((r) => (r.facts ? [r.facts] : []));
  return {
    trials: results.length,
    passed: c,
    failed: n - c,
    infra_errors: results.length - n,
    pass_at_1: round(passAtK(n, c, 1)),
    pass_at_k: Object.fromEntries(ks(K).map((k) => [String(k), round(passAtK(n, c, k))])),
    pass_hat_k: Object.fromEntries(ks(K).map((k) => [String(k), round(passHatK(n, c, k))])),
    mean_turns:
      validFacts.length > 0
        ? round(validFacts.reduce((a, f) => a + f.turns, 0) / validFacts.length, 3)
        : null,
    tokens,
    cache_hit_ratio: prompt > 0 ? round(tokens.cache_read / prompt, 4) : null,
    cost_usd:
      round(
        sum((f) => f.costUsd),
        6,
      ) ?? 0,
  };
}

function mean(values: readonly (number | null)[]): number | null {
  const xs = values.filter((v): v is number => v !== null);
  return xs.length > 0 ? round(xs.reduce((a, b) => a + b, 0) / xs.length) : null;
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
  const pairs = tasks.flatMap((task) =>
    Array.from({ length: trialsFor(task, suite, options.trials) }, (_, trial) => ({ task, trial })),
  );
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
  const taskReports: TaskReport[] = tasks.map((task) => {
    const mine = results.filter((r) => r.task === task.id);
    return {
      id: task.id,
      ...summarize(mine, mine.length),
      results: mine,
      retried: retried.get(task.id) ?? [],
    };
  });
  const K = Math.max(...taskReports.map((t) => t.trials));
  const all = summarize(results, K);
  const overall = {
    ...all,
    tasks: taskReports.length,
    // Overall pass@k / pass^k: the mean over tasks (each task weighs the same).
    pass_at_1: mean(taskReports.map((t) => t.pass_at_1)),
    pass_at_k: Object.fromEntries(
      ks(K).map((k) => [String(k), mean(taskReports.map((t) => t.pass_at_k[k] ?? null))]),
    ),
    pass_hat_k: Object.fromEntries(
      ks(K).map((k) => [String(k), mean(taskReports.map((t) => t.pass_hat_k[k] ?? null))]),
    ),
  };
  const report: EvalReport = {
    suite: suite.name,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    model: options.model,
    outDir: options.outDir,
    tasks: taskReports,
    overall,
  };
  fs.writeFileSync(path.join(options.outDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  return report;
}
