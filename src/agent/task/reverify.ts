import { runHarnessCommand } from './commands.ts';
import { type Feature, type FeatureList, SESSIONS_LOG } from './featureList.ts';
import { clip, readOwnLines } from './files.ts';
import type { TaskDeps } from './harness.ts';
import { readSessionsLog } from './sessionsLog.ts';

// Seed 003: a later session must not break F1 while the list says F1 passes. Before any new work,
// each session start re-runs the verify command of the passing features; one that fails now goes
// back to failing (the harness writes the list, notes it in progress.md and commits it with the
// session). Threat: the verify commands are the task's (trust-approved) — they run like init.sh,
// through commands.ts (policy, approvals, sandbox, timeout). A verify that could not run (policy,
// denial) is reported as unchecked and keeps its state: only a real failure flips a feature back.

/**
 * Which passing features are re-verified. Default `all`: every passing feature at every session
 * start — the only setting under which "passes" always means "passed at the last session start".
 * A sample (`KEEL_TASK_REVERIFY=S:N`) bounds the cost on long lists: always the N most recently
 * passed features (the likeliest to be hurt by the work that followed) plus S of the others, taken
 * in turn from one session to the next, so every feature is re-checked every few sessions.
 */
export type ReverifyPolicy = 'all' | { readonly sample: number; readonly last: number };

export function parseReverifyPolicy(text: string | undefined): ReverifyPolicy {
  if (text === undefined || text.trim() === '' || text.trim() === 'all') return 'all';
  const m = /^\s*(\d{1,4})\s*:\s*(\d{1,4})\s*$/.exec(text);
  if (!m)
    throw new Error(`KEEL_TASK_REVERIFY takes "all" or SAMPLE:LAST (e.g. 5:3), not ${JSON.stringify(text)}`);
  return { sample: Number(m[1]), last: Number(m[2]) };
}

export interface ReverifyResult {
  readonly checked: string[];
  /** Passing features whose verify fails now, with what it printed. */
  readonly failed: Array<{ id: string; summary: string }>;
  /** Passing features whose verify did not run (policy, denial, abort), with why. */
  readonly unchecked: Array<{ id: string; summary: string }>;
  /** Passing features left out by the sample. */
  readonly skipped: string[];
}

/** The passing features to check, most recently passed first when sampling. */
export function selectForReverify(
  passing: readonly Feature[],
  passOrder: readonly string[],
  policy: ReverifyPolicy,
  round: number,
): Feature[] {
  if (policy === 'all') return [...passing];
  const recency = (f: Feature) => passOrder.lastIndexOf(f.id);
  const byRecency = [...passing].sort((a, b) => recency(b) - recency(a));
  const last = byRecency.slice(0, policy.last);
  const rest = passing.filter((f) => !last.includes(f));
  const take = Math.min(policy.sample, rest.length);
  const start = rest.length === 0 ? 0 : (round * take) % rest.length;
  const sample = Array.from({ length: take }, (_, i) => rest[(start + i) % rest.length]!);
  return [...last, ...sample];
}

export async function reverifyPassing(
  deps: TaskDeps,
  list: FeatureList,
  policy: ReverifyPolicy,
): Promise<ReverifyResult> {
  const lines = readSessionsLog(readOwnLines(deps.workspace, SESSIONS_LOG));
  const passOrder = lines.flatMap((l) => (l.type === 'flip' ? [l.id] : []));
  const round = lines.filter((l) => l.type === 'start').length;
  const passing = list.features.filter((f) => f.passes);
  const chosen = selectForReverify(passing, passOrder, policy, round);
  const result: ReverifyResult = {
    checked: [],
    failed: [],
    unchecked: [],
    skipped: passing.filter((f) => !chosen.includes(f)).map((f) => f.id),
  };
  for (const feature of chosen) {
    if (deps.signal?.aborted) {
      result.unchecked.push({ id: feature.id, summary: 'the task was stopped' });
      continue;
    }
    const run = await runHarnessCommand(
      deps,
      feature.verify,
      { purpose: 'reverify', feature: feature.id },
      deps.verifyTimeoutMs ?? 120_000,
    );
    if (!run.ran) result.unchecked.push({ id: feature.id, summary: run.summary });
    else if (run.exitCode === 0 && !run.timedOut) result.checked.push(feature.id);
    else {
      result.checked.push(feature.id);
      result.failed.push({ id: feature.id, summary: clip(run.summary, 600) });
    }
  }
  return result;
}

/** The progress.md lines of a re-verification (empty when it found nothing to say). */
export function reverifyProgress(list: FeatureList, r: ReverifyResult): string[] {
  const verify = (id: string) => list.features.find((f) => f.id === id)?.verify ?? '';
  return [
    ...r.failed.map(
      (f) => `- ${f.id} FAILS AGAIN — back to failing: \`${verify(f.id)}\` ${f.summary.replace(/\n+/g, ' ')}`,
    ),
    ...r.unchecked.map((f) => `- ${f.id} not re-verified: ${f.summary.replace(/\n+/g, ' ')}`),
  ];
}

export function reverifyLine(r: ReverifyResult): string {
  if (r.checked.length === 0 && r.unchecked.length === 0) return 'no passing feature to re-verify';
  const failed = r.failed.length > 0 ? `; failing again: ${r.failed.map((f) => f.id).join(', ')}` : '';
  const unchecked = r.unchecked.length > 0 ? `; not run: ${r.unchecked.map((f) => f.id).join(', ')}` : '';
  const skipped = r.skipped.length > 0 ? `; not sampled: ${r.skipped.length}` : '';
  return `${r.checked.length} re-verified${failed}${unchecked}${skipped}`;
}
