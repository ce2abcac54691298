import type { ModelCallRecord } from '../events.ts';

// P9 metrics over a session's model calls. Definitions (all over calls with ok = true, in order):
//  - prefix_stability_ratio: among calls after the first, the fraction whose prefix_hash (sha256 of
//    the tools + system each request actually sent, cache markers aside) equals the previous call's
//    of the same agent (a sub-agent's calls, marked `agent`, have their own prefix and conversation).
//    1 when there is at most one call.
//  - cache_hit_ratio: Σ cache_read / Σ all input tokens (input + cache_read + cache_write).
//  - cache_hit_of_limit: Σ cache_read / Σ limit, where limit is the most a call could read from cache:
//    its input tokens before the newest message. When the caller does not pass exact limits, a call's
//    limit is approximated as min(its prompt, previous prompt + previous output) — everything the
//    previous call sent plus the reply it produced — and the first call's limit as what it read.
//  - pruning_stage_distribution: number of calls per stage applied while preparing them (0 = none).
//  - loop_detection_blocks: passed in (the loop detector counts them).
//  - context_utilization: prompt tokens / context window per call: mean, p50, p90, max.

export interface ContextUtilization {
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly max: number;
}

export interface ContextMetrics {
  readonly prefix_stability_ratio: number;
  readonly cache_hit_ratio: number;
  readonly cache_hit_of_limit: number;
  readonly pruning_stage_distribution: Readonly<Record<'0' | '1' | '2' | '3', number>>;
  readonly loop_detection_blocks: number;
  readonly context_utilization: ContextUtilization;
  readonly calls: number;
  readonly tokens: {
    readonly input: number;
    readonly output: number;
    readonly cache_read: number;
    readonly cache_write: number;
  };
  readonly cost_usd: number;
}

export interface MetricsExtra {
  readonly loopBlocks?: number;
  /** Exact per-call limits (input tokens before the newest message), aligned with the ok records. */
  readonly limits?: readonly number[];
}

function promptTokens(r: ModelCallRecord): number {
  return r.input + r.cache_read + r.cache_write;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index]!;
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;

export function computeMetrics(
  records: readonly ModelCallRecord[],
  extra: MetricsExtra = {},
): ContextMetrics {
  const calls = records.filter((r) => r.ok);
  let stable = 0;
  let compared = 0;
  const previousOf = new Map<string, ModelCallRecord>();
  const previousCall: (ModelCallRecord | undefined)[] = [];
  for (const call of calls) {
    const previous = previousOf.get(call.agent ?? '');
    previousCall.push(previous);
    if (previous) {
      compared++;
      if (previous.prefix_hash === call.prefix_hash) stable++;
    }
    previousOf.set(call.agent ?? '', call);
  }

  const tokens = { input: 0, output: 0, cache_read: 0, cache_write: 0 };
  let limit = 0;
  let cost = 0;
  const stages: Record<'0' | '1' | '2' | '3', number> = { '0': 0, '1': 0, '2': 0, '3': 0 };
  const utilization: number[] = [];
  calls.forEach((r, i) => {
    tokens.input += r.input;
    tokens.output += r.output;
    tokens.cache_read += r.cache_read;
    tokens.cache_write += r.cache_write;
    cost += r.cost_usd;
    const exact = extra.limits?.[i];
    if (exact !== undefined) limit += Math.max(exact, r.cache_read);
    else if (!previousCall[i]) limit += r.cache_read;
    else {
      const previous = previousCall[i]!;
      limit += Math.max(r.cache_read, Math.min(promptTokens(r), promptTokens(previous) + previous.output));
    }
    const stage = String(Math.max(0, Math.min(3, r.stage))) as '0' | '1' | '2' | '3';
    stages[stage]++;
    if (r.context_window > 0) utilization.push(promptTokens(r) / r.context_window);
  });
  const allInput = tokens.input + tokens.cache_read + tokens.cache_write;
  const sorted = [...utilization].sort((a, b) => a - b);
  return {
    prefix_stability_ratio: compared === 0 ? 1 : round(stable / compared),
    cache_hit_ratio: allInput === 0 ? 0 : round(tokens.cache_read / allInput),
    cache_hit_of_limit: limit === 0 ? 0 : round(tokens.cache_read / limit),
    pruning_stage_distribution: stages,
    loop_detection_blocks: extra.loopBlocks ?? 0,
    context_utilization: {
      mean: sorted.length === 0 ? 0 : round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
      p50: round(quantile(sorted, 0.5)),
      p90: round(quantile(sorted, 0.9)),
      max: round(sorted.at(-1) ?? 0),
    },
    calls: calls.length,
    tokens,
    cost_usd: Math.round(cost * 1_000_000) / 1_000_000,
  };
}
