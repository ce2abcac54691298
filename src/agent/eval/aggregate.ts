import { passAtK, passHatK, round } from './passAtK.ts';
import type { TrialResult } from './trial.ts';

// The report's figures from trial results: per task (pass@k / pass^k over its valid trials, k up to
// the trials the plan gives it) and overall (the mean over tasks). `keel eval` computes them from the
// trials it ran; `keel eval merge` from the union of its shards' trials, with the same code, so a
// suite run in shards and merged reports exactly what one run of it would.

export interface TaskReport {
  readonly id: string;
  readonly trials: number;
  readonly passed: number;
  readonly failed: number;
  readonly infra_errors: number;
  readonly pass_at_1: number | null;
  /** k = 1…K (K = the task's planned trials), over the valid (non-infra) trials; null where k exceeds them. */
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

export type Overall = Omit<TaskReport, 'id' | 'results' | 'retried'> & { readonly tasks: number };

function ks(K: number): number[] {
  return Array.from({ length: K }, (_, i) => i + 1);
}

export function summarize(results: readonly TrialResult[], K: number) {
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
    // The trials' model calls and their judges' (a judged suite costs its judging too).
    cost_usd:
      round(
        sum((f) => f.costUsd) +
          results.reduce((a, r) => a + r.graders.reduce((b, g) => b + (g.cost_usd ?? 0), 0), 0),
        6,
      ) ?? 0,
  };
}

function mean(values: readonly (number | null)[]): number | null {
  const xs = values.filter((v): v is number => v !== null);
  return xs.length > 0 ? round(xs.reduce((a, b) => a + b, 0) / xs.length) : null;
}

/**
 * Task reports in the plan's order (tasks with no result here are left out: a shard may hold none
 * of a task's trials), results by trial index, and the overall figures.
 */
export function aggregate(
  plan: readonly { readonly task: string; readonly trials: number }[],
  results: readonly TrialResult[],
  retried: ReadonlyMap<string, readonly TrialResult[]>,
): { tasks: TaskReport[]; overall: Overall } {
  const tasks: TaskReport[] = [];
  for (const { task: id, trials } of plan) {
    const mine = results.filter((r) => r.task === id).sort((a, b) => a.trial - b.trial);
    if (mine.length === 0) continue;
    tasks.push({
      id,
      ...summarize(mine, trials),
      results: mine,
      retried: retried.get(id) ?? [],
    });
  }
  const K = Math.max(0, ...tasks.map((t) => Object.keys(t.pass_at_k).length));
  const overall: Overall = {
    ...summarize(results, K),
    tasks: tasks.length,
    // Overall pass@k / pass^k: the mean over tasks (each task weighs the same).
    pass_at_1: mean(tasks.map((t) => t.pass_at_1)),
    pass_at_k: Object.fromEntries(
      ks(K).map((k) => [String(k), mean(tasks.map((t) => t.pass_at_k[k] ?? null))]),
    ),
    pass_hat_k: Object.fromEntries(
      ks(K).map((k) => [String(k), mean(tasks.map((t) => t.pass_hat_k[k] ?? null))]),
    ),
  };
  return { tasks, overall };
}
