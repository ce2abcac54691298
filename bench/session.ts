import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type Anthropic from '@anthropic-ai/sdk';
import { computeMetrics } from '../src/agent/context/metrics.ts';
import { isCompactionRequest } from '../src/agent/context/summarizeRequest.ts';
import type { ModelCallRecord } from '../src/agent/events.ts';
import type { AgentMessage, SummaryMessage } from '../src/agent/messages.ts';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../src/agent/safety/approvals.ts';
import { createAgentSession } from '../src/agent/session/session.ts';
import { countInputTokens } from '../test/emulator/cache.ts';
import {
  type MessagesRequest,
  type ScriptedBlock,
  type ScriptedReply,
  startEmulator,
} from '../test/emulator/server.ts';
import { type CallUsage, replayNaive, type SideFigures, sideFigures } from './sessionCache.ts';
import { realisticScript, rng, type ScriptedRun, sourceFile, steadyScript } from './sessionScript.ts';

// Scripted coding sessions against the emulator, through the real SDK and the real session, in several
// variants (see sessionScript.ts): the original steady 100-call run, and realistic ones — several user
// prompts with idle gaps longer than the 5-minute TTL (emulated clock: the emulator's cache expires on
// it), several tool calls per reply, output big enough to spill, skill loads, a steering message, long
// tool runs — at the model's real window (200K) and at a small one (80K, many compactions). Each
// variant's figures stand beside a naive baseline measured in the same run: the very same requests
// replayed on a fresh emulator with a system prompt that carries a timestamp (sessionCache.ts).

export type { SideFigures } from './sessionCache.ts';

export interface VariantSpec {
  readonly name: string;
  readonly shape: 'steady' | 'realistic';
  /** The session's own context window (`--context-window`). */
  readonly contextWindow: number;
  readonly turns?: number;
  /** Idle gaps before runs 2, 3, … (realistic shape). */
  readonly idleMs?: readonly number[];
  readonly seed?: number;
  /** The session's cache TTL policy (default: Keel's default, 1 h on every breakpoint). */
  readonly cacheTtl?: 'all' | 'stable' | 'none';
  /**
   * Thinking on (effort medium) and every scripted reply opening with a signed thought, which must go
   * back unchanged; the other variants run with thinking off. Compare with the same shape without it.
   */
  readonly thinking?: boolean;
}

const MINUTE = 60_000;
export const VARIANTS: readonly VariantSpec[] = [
  { name: 'steady@200K', shape: 'steady', contextWindow: 200_000 },
  { name: 'realistic@200K', shape: 'realistic', contextWindow: 200_000 },
  { name: 'realistic@80K', shape: 'realistic', contextWindow: 80_000 },
  // The same with 5 min on the moving breakpoints: what an idle gap costs without the 1 h TTL.
  { name: 'realistic@200K/5m', shape: 'realistic', contextWindow: 200_000, cacheTtl: 'stable' },
  { name: 'steady@80K', shape: 'steady', contextWindow: 80_000 },
  // P1 with thinking: the same runs with a thought before every call (cache hit within 0.01 of off).
  { name: 'steady@200K+think', shape: 'steady', contextWindow: 200_000, thinking: true },
  { name: 'realistic@200K+think', shape: 'realistic', contextWindow: 200_000, thinking: true },
  // One gap past the 1 h cache life: the cache is cold for everyone, and the pruning stages run.
  {
    name: 'overnight@200K',
    shape: 'realistic',
    contextWindow: 200_000,
    idleMs: [7 * MINUTE, 16 * MINUTE, 28 * MINUTE, 75 * MINUTE],
  },
];

export interface VariantFigures {
  readonly variant: string;
  readonly context_window: number;
  /** Every call: the agent's and the compaction summaries' (which the cache figures include). */
  readonly model_calls: number;
  readonly summarize_calls: number;
  readonly compactions: number;
  /** Session resets (past three compactions the session goes on as a new one, seeded with a handoff). */
  readonly resets: number;
  readonly merged_summaries: number;
  readonly steering_skips: number;
  readonly spilled_outputs: number;
  readonly skill_loads: number;
  readonly pruning_stage_distribution: Readonly<Record<string, number>>;
  readonly context_utilization_max: number;
  /** Tools + system of the first request (4 bundled skills in the index), in emulator tokens. */
  readonly fixed_prefix_tokens: number;
  /** prefix_stability_ratio from the trace (prefix_hash of each sent request). */
  readonly trace_prefix_stability: number;
  readonly keel: SideFigures;
  readonly naive: SideFigures;
  readonly goals: Readonly<Record<string, boolean>>;
}

export interface SessionBenchFigures {
  /** One line per variant: Keel vs naive. */
  readonly table: readonly string[];
  readonly variants: readonly VariantFigures[];
}

const hasTools = (req: MessagesRequest) => (req.tools?.length ?? 0) > 0;
/** A compaction summary call: the standalone prompt (no tools) or the in-context request. */
const isSummarize = (req: MessagesRequest) =>
  !hasTools(req) || isCompactionRequest(req as unknown as { messages: Anthropic.MessageParam[] });

export async function runSessionBench(
  only: readonly string[] | undefined = process.env.BENCH_VARIANTS?.split(','),
): Promise<SessionBenchFigures> {
  const variants: VariantFigures[] = [];
  for (const spec of VARIANTS) if (!only || only.includes(spec.name)) variants.push(await runVariant(spec));
  const pct = (n: number) => n.toFixed(4);
  const table = variants.map(
    (v) =>
      `${v.variant.padEnd(18)} calls ${String(v.model_calls).padStart(3)} compactions ${v.compactions}${v.resets ? ` resets ${v.resets}` : ''} | Keel hit ${pct(v.keel.cache_hit_ratio)} of-limit ${pct(v.keel.cache_hit_of_limit)} stability ${pct(v.keel.prefix_stability)} cost ${v.keel.input_cost_units} | naive hit ${pct(v.naive.cache_hit_ratio)} of-limit ${pct(v.naive.cache_hit_of_limit)} stability ${pct(v.naive.prefix_stability)} cost ${v.naive.input_cost_units} | fixed ${v.fixed_prefix_tokens} | missed: ${
        Object.entries(v.goals)
          .filter(([, met]) => !met)
          .map(([goal]) => goal)
          .join(', ') || 'none'
      }`,
  );
  // Thinking on vs off on the same script: P1 says the cache hit moves by at most 0.01.
  for (const on of variants.filter((v) => v.variant.endsWith('+think'))) {
    const off = variants.find((v) => v.variant === on.variant.slice(0, -'+think'.length));
    if (!off) continue;
    const delta = on.keel.cache_hit_ratio - off.keel.cache_hit_ratio;
    table.push(
      `${off.variant} thinking on/off: hit ${pct(on.keel.cache_hit_ratio)} / ${pct(off.keel.cache_hit_ratio)} (Δ ${delta.toFixed(4)}${Math.abs(delta) <= 0.01 ? '' : ' > 0.01'}) fixed prefix ${on.fixed_prefix_tokens} / ${off.fixed_prefix_tokens}`,
    );
  }
  return { table, variants };
}

export async function runVariant(spec: VariantSpec): Promise<VariantFigures> {
  const turns = spec.turns ?? 100;
  const contextWindow = spec.contextWindow;
  const random = rng(spec.seed ?? 7);
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-session-')));
  const sizes = Array.from({ length: 24 }, () => 150 + Math.floor(random() * 750));
  fs.mkdirSync(path.join(root, 'src'));
  for (const [i, lines] of sizes.entries())
    fs.writeFileSync(path.join(root, 'src', `mod${i}.ts`), sourceFile(i, lines));
  fs.writeFileSync(path.join(root, 'package.json'), '{ "name": "orders", "type": "module" }\n');
  const runs: ScriptedRun[] =
    spec.shape === 'steady'
      ? steadyScript(turns, random, sizes)
      : realisticScript(turns, random, sizes, spec.idleMs);
  const calls = runs.flatMap((r) => r.calls);

  let clock = Date.UTC(2025, 0, 6, 9, 0, 0);
  const step = 15_000;
  let next = 0;
  let summarizeCalls = 0;
  let steer: ((text: string) => void) | undefined;
  const emu = await startEmulator({
    now: () => clock,
    scenario: {
      respond: (req): ScriptedReply => {
        clock += step;
        if (isSummarize(req)) {
          summarizeCalls++;
          return {
            content: [
              {
                type: 'text',
                text: '## Decisions\n- Bump every module version by one and add a test file per module.\n## Verification status\n- Each module test run passed.\n## Open TODOs and rollback notes\n- Continue with the next modules.\n## Progress\n- Modules handled in order.',
              },
            ],
          };
        }
        const call = calls[Math.min(next, calls.length - 1)]!;
        next++;
        if (call.extraMs) clock += call.extraMs;
        if (call.steer) steer?.(call.steer);
        return { content: spec.thinking ? [thought(next, call.content), ...call.content] : call.content };
      },
    },
  });
  const records: ModelCallRecord[] = [];
  try {
    const base = createNodeHost({ workspace: root, approvals: createPolicyApprovals('all') });
    const host = { ...base, clock: { now: () => clock } };
    const session = createAgentSession({
      host,
      model: 'claude-sonnet-4-6',
      apiKey: 'bench',
      baseURL: emu.url,
      contextWindow,
      ...(spec.cacheTtl ? { cacheTtl: spec.cacheTtl } : {}),
      effort: spec.thinking ? 'medium' : 'off',
      maxTurns: Math.max(...runs.map((r) => r.calls.length)) + 10,
    });
    steer = (text) => void session.prompt(text);
    // Counted from the events: a reset moves `session.messages` on to the new session's transcript.
    const appended: AgentMessage[] = [];
    let resets = 0;
    session.subscribe((e) => {
      if (e.type === 'model_call') records.push(e.record);
      if (e.type === 'message_appended') appended.push(e.message);
      if (e.type === 'session_reset') resets++;
    });
    for (const run of runs) {
      clock += run.idleBeforeMs;
      const outcome = await session.prompt(run.prompt);
      if (outcome.status !== 'finished')
        throw new Error(`${spec.name}: a run ended ${outcome.status}: ${outcome.error ?? ''}`);
    }
    const summaries = appended.filter(
      (m): m is SummaryMessage => m.role === 'summary' && !m.text.startsWith('<session-handoff'),
    );
    const results = appended.filter((m) => m.role === 'tool_result');
    const figures = {
      compactions: summaries.filter((m) => !m.text.includes('This merges summaries')).length,
      merged: summaries.filter((m) => m.text.includes('This merges summaries')).length,
      skipped: results.filter((m) => m.content.includes('[Skipped]')).length,
      spilled: results.filter((m) => /Full output: \S+/.test(m.content)).length,
      skills: results.filter((m) => m.toolName === 'Skill').length,
    };
    session.dispose();

    // Every call counts, compaction summaries included: an honest figure is over what was paid for.
    const sent = emu.requests.flatMap((r) =>
      r.status === 200 && r.request && r.usage ? [{ req: r.request, usage: r.usage as CallUsage }] : [],
    );
    const keel = sideFigures(sent);
    if (process.env.BENCH_DUMP) {
      let agent = 0;
      for (const [i, { req, usage }] of sent.entries()) {
        const stage = isSummarize(req) ? 'summarize' : records[agent++]?.stage;
        process.stderr.write(
          `${spec.name} ${i} in=${usage.input_tokens} read=${usage.cache_read_input_tokens} write=${usage.cache_creation_input_tokens} stage=${stage}\n`,
        );
      }
    }
    const first = sent.find((c) => !isSummarize(c.req))!.req;
    const fixed = countInputTokens({ ...first, messages: [] });
    const naive = await replayNaive(
      sent.map((c) => c.req),
      step,
    );
    const metrics = computeMetrics(records);
    return {
      variant: spec.name,
      context_window: contextWindow,
      model_calls: sent.length,
      summarize_calls: summarizeCalls,
      compactions: figures.compactions,
      resets,
      merged_summaries: figures.merged,
      steering_skips: figures.skipped,
      spilled_outputs: figures.spilled,
      skill_loads: figures.skills,
      pruning_stage_distribution: metrics.pruning_stage_distribution,
      context_utilization_max: metrics.context_utilization.max,
      fixed_prefix_tokens: fixed,
      trace_prefix_stability: metrics.prefix_stability_ratio,
      keel,
      naive,
      goals: {
        'cache_hit_ratio >= 0.95': keel.cache_hit_ratio >= 0.95,
        'cache_hit_of_limit >= 0.98': keel.cache_hit_of_limit >= 0.98,
        'prefix_stability >= 0.98': keel.prefix_stability >= 0.98 && metrics.prefix_stability_ratio >= 0.98,
        'fixed_prefix_tokens <= 3000': fixed <= 3000,
        'at least one compaction': figures.compactions >= 1,
      },
    };
  } finally {
    await emu.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** A short thought naming the call it leads to (two sentences, ~40 tokens: a light adaptive think). */
function thought(n: number, content: readonly ScriptedBlock[]): ScriptedBlock {
  const use = content.find((b) => b.type === 'tool_use');
  const next =
    use?.type === 'tool_use' ? `${use.name} ${JSON.stringify(use.input).slice(0, 60)}` : 'the answer';
  return {
    type: 'thinking',
    thinking: `Step ${n}: the plan holds and nothing failed so far. Next: ${next}.`,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await runSessionBench();
  console.log(figures.table.join('\n'));
  console.log(JSON.stringify(figures.variants, null, 2));
}
