import type { ModelCallRecord } from '../agent/events.ts';
import { ENGLISH, type L10n } from './approvalText.ts';

// What the status bar and the panel's meter show of a session: context used, cache hits, the
// pruning stage reached and the cost, from the session's model-call records.

export interface Usage {
  readonly contextTokens: number;
  readonly contextWindow: number;
  /** Of the last call's prompt, percent read from the prompt cache. */
  readonly cacheHitPct: number;
  /** Of every prompt token this session sent, percent read from the cache (P9 cache_hit_ratio). */
  readonly sessionCacheHitPct: number;
  /** Highest context pruning stage applied in this session (0 = none, 3 = summary, 4 = emergency). */
  readonly stage: number;
  readonly costUsd: number;
}

const pct = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0);

export function usageFrom(records: readonly ModelCallRecord[], fallbackWindow: number): Usage {
  // The meter shows the main conversation; a sub-agent's calls (marked `agent`) only add cost.
  const last = records.filter((r) => !r.agent).at(-1);
  let costUsd = 0;
  let read = 0;
  let sent = 0;
  let stage = 0;
  for (const r of records) {
    costUsd += r.cost_usd;
    read += r.cache_read;
    sent += r.input + r.cache_read + r.cache_write;
    stage = Math.max(stage, r.stage ?? 0);
  }
  const sessionCacheHitPct = pct(read, sent);
  if (!last)
    return {
      contextTokens: 0,
      contextWindow: fallbackWindow,
      cacheHitPct: 0,
      sessionCacheHitPct,
      stage,
      costUsd,
    };
  const prompt = last.input + last.cache_read + last.cache_write;
  return {
    contextTokens: prompt > 0 ? prompt + last.output : last.est_tokens,
    contextWindow: last.context_window || fallbackWindow,
    cacheHitPct: pct(last.cache_read, prompt),
    sessionCacheHitPct,
    stage,
    costUsd,
  };
}

/**
 * The status bar item: named (a row of icons and numbers says nothing), no symbols to decode; in the
 * display language (`l10n`: vscode.l10n; default English).
 */
export function formatUsage(usage: Usage, l10n: L10n = ENGLISH): { text: string; tooltip: string } {
  const pct = usage.contextWindow > 0 ? Math.round((usage.contextTokens / usage.contextWindow) * 100) : 0;
  const cache = Math.round(usage.cacheHitPct);
  const session = Math.round(usage.sessionCacheHitPct);
  const stages = [
    '',
    l10n.t('soft trim'),
    l10n.t('old results cleared'),
    l10n.t('summarised'),
    l10n.t('emergency'),
  ];
  const stage = usage.stage > 0 ? l10n.t(' · stage {0}', usage.stage) : '';
  const stageText =
    usage.stage > 0
      ? l10n.t(', context pruning stage {0} ({1})', usage.stage, stages[usage.stage] || l10n.t('pruned'))
      : '';
  return {
    text: `$(hubot) ${l10n.t('Keel {0}% · cache {1}%', pct, cache)}${stage}`,
    tooltip: l10n.t(
      'Keel — context {0} / {1} tokens ({2}%), prompt cache hit {3}% last call, {4}% this session{5}, cost {6}. Click to open the Keel panel.',
      usage.contextTokens.toLocaleString('en-US'),
      usage.contextWindow.toLocaleString('en-US'),
      pct,
      cache,
      session,
      stageText,
      `$${usage.costUsd.toFixed(4)}`,
    ),
  };
}
