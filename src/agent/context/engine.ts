import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import type { TodoItem } from '../events.ts';
import type { AgentMessage, ContextEditMessage, ReminderMessage } from '../messages.ts';
import { toLlm } from '../messages.ts';
import type { SkillEntry, SkillIndex } from '../skills/discover.ts';
import { type CacheTtlPolicy, placeBreakpoints, ttlPolicyOf } from './breakpoints.ts';
import { createCompactor, defaultWriteText } from './compactor.ts';
import { errorStreakGuide } from './errorGuide.ts';
import {
  DEFAULT_PRUNE_CONFIG,
  type Edit,
  editableToolUseIds,
  type PruneConfig,
  planHardClear,
  planSoftTrim,
} from './pruning.ts';
import {
  DEFAULT_RECAP_CONFIG,
  hasOpenTodos,
  isTaskSwitch,
  latestTodos,
  RECAP_SOURCE,
  type RecapConfig,
  recapAfterTools,
  renderRecap,
} from './recap.ts';
import type { InContextSummarizeRequest } from './summarizeRequest.ts';
import { buildSystemPrompt, freezeTools, type McpServerLine } from './systemPrompt.ts';
import {
  estimateAgentMessageTokens,
  estimateSystemTokens,
  estimateToolsTokens,
  estimateVolatileTailTokens,
  requestPrefixHash,
} from './tokens.ts';
import { buildView, type ContextView, fullSkillsIn, toolUseIndex, viewMessages } from './view.ts';

export { chooseCut } from './compaction.ts';
export type { InContextSummarizeRequest } from './summarizeRequest.ts';
export { estimateTokens, requestPrefixHash } from './tokens.ts';

export interface PreparedRequest {
  readonly system: Anthropic.TextBlockParam[];
  readonly tools: Anthropic.Tool[];
  readonly messages: Anthropic.MessageParam[];
  /** Highest pruning stage APPLIED while preparing this call (0 = none; 3 = compaction). */
  readonly stage: number;
  /** Estimated prompt tokens (calibrated against the last call's real usage when known). */
  readonly estTokens: number;
  /**
   * sha256 of the canonical tools + system of THIS request, as sent (cache markers aside): equal on
   * every call of a session when P1 holds; `prefix_stability_ratio` compares it between calls.
   */
  readonly prefixHash: string;
  /** estTokens / contextWindow. */
  readonly utilization: number;
}

export interface StageThresholds {
  readonly softTrim: number;
  readonly hardClear: number;
  readonly compact: number;
  /** At or above this, stages run even while the prompt cache is warm. */
  readonly emergency: number;
}

export const DEFAULT_THRESHOLDS: StageThresholds = {
  softTrim: 0.3,
  hardClear: 0.5,
  compact: 0.7,
  emergency: 0.95,
};
export const DEFAULT_CACHE_TTL_MS = 5 * 60_000;
export const LONG_CACHE_TTL_MS = 60 * 60_000;
export const MAX_OVERFLOW_RETRIES = 3;

export interface ContextEngineOptions {
  /** Tool definitions for the API, already built from zod schemas. Frozen for the session. */
  readonly tools: readonly Anthropic.Tool[];
  readonly contextWindow: number;
  /** Project rules (AGENTS.md) read once at session start. */
  readonly projectRules?: string;
  /** Memory snapshot (MEMORY.md files) rendered once at session start. */
  readonly memory?: string;
  /** A complete system prompt instead of Keel's own (a sub-agent's minimal prompt). */
  readonly systemText?: string;
  /** Called for a compaction summary (a separate model call without tools). */
  readonly summarize?: (prompt: string, signal: AbortSignal) => Promise<string>;
  /**
   * Preferred way to get a compaction summary: send this request (the conversation as already cached,
   * plus the instruction at the end) as it is and return the reply's text. An error or an empty text
   * falls back to `summarize`; so does a request that would not fit the window.
   */
  readonly summarizeInContext?: (request: InContextSummarizeRequest, signal: AbortSignal) => Promise<string>;
  /** Configured MCP servers (one line each in the system prompt). */
  readonly mcpServers?: readonly McpServerLine[];
  /** Skill snapshot taken at session start (index goes into the system prompt). */
  readonly skills?: SkillIndex | readonly SkillEntry[];
  readonly workspaceRoot?: string;
  /** Keel's state dir (archives go to `<stateDir>/archive/`). Default `<workspaceRoot>/.keel`. */
  readonly stateDir?: string;
  readonly sessionId?: string;
  /** How archives are written (the host's StoragePort.writeText); default: plain fs. */
  readonly writeText?: (absolutePath: string, text: string) => void;
  /** Current todo list (the session's); default: parsed from the last TodoWrite in the transcript. */
  readonly getTodos?: () => readonly TodoItem[];
  /** How long the cache of the previous request's end lives (cold-cache decisions); default from the policy. */
  readonly cacheTtlMs?: number;
  /**
   * Which breakpoints carry the 1 h TTL: 'all' (default; the cache survives an idle gap of up to an
   * hour, and the stages wait that long), 'stable' (system, anchor, summary; the moving ends 5 min),
   * 'none'. `true` = 'all', `false` = 'none'.
   */
  readonly longCacheTtl?: boolean | CacheTtlPolicy;
  readonly thresholds?: Partial<StageThresholds>;
  readonly prune?: Partial<PruneConfig>;
  readonly recap?: Partial<RecapConfig>;
  /** Share of the window the kept tail may use after a compaction. */
  readonly compactTailFraction?: number;
  readonly newId?: () => string;
}

export interface PrepareArgs {
  readonly transcript: readonly AgentMessage[];
  readonly now: number;
  /** When the previous model call finished (for cache-TTL decisions). */
  readonly lastCallAt?: number;
  /** Set after a "prompt is too long" error: compaction must happen now. */
  readonly overflow?: boolean;
  readonly signal: AbortSignal;
  /** Runtime notes for this call only: placed after the last cache breakpoint, never persisted. */
  readonly volatileTail?: readonly string[];
}

export interface ContextEngine {
  /** Builds the next request; may return messages to append first (context edits, summaries). */
  prepare(args: PrepareArgs): Promise<{ request: PreparedRequest; appended: AgentMessage[] }>;
  /** Reminders to append after a batch of tool results (recap, skill reminders). */
  afterTools(transcript: readonly AgentMessage[]): AgentMessage[];
  /** The frozen system prompt text (for tests, `keel` diagnostics and the fixed-prefix budget). */
  readonly systemText: string;
  /** Hash of the frozen tools + system as built at session start (every request's should equal it). */
  readonly prefixHash: string;
  /**
   * Whether the full guide of a skill (an unpruned `Skill` result) is in the context the last
   * prepared request showed the model: the Skill tool answers a re-ask with a reminder only then.
   */
  skillInContext(name: string): boolean;
}

/** The prompt stays too long after MAX_OVERFLOW_RETRIES compactions: the run must stop clearly. */
export class ContextOverflowError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContextOverflowError';
  }
}

function skillList(skills: ContextEngineOptions['skills']): readonly SkillEntry[] {
  if (!skills) return [];
  return 'skills' in skills ? skills.skills : skills;
}

export function createContextEngine(options: ContextEngineOptions): ContextEngine {
  const tools = freezeTools(options.tools);
  const skills = skillList(options.skills);
  const systemText =
    options.systemText ??
    buildSystemPrompt({
      projectRules: options.projectRules,
      skills,
      ...(options.mcpServers?.length ? { mcpServers: options.mcpServers } : {}),
      ...(options.memory ? { memory: options.memory } : {}),
    });
  const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: systemText }];
  const prefixHash = requestPrefixHash({ tools, system });
  // The frozen prefix's estimate never changes (breakpoint markers do not count).
  const prefixTokens = estimateToolsTokens(tools) + estimateSystemTokens(system);
  const thresholds = { ...DEFAULT_THRESHOLDS, ...options.thresholds };
  const pruneConfig = { ...DEFAULT_PRUNE_CONFIG, ...options.prune };
  const recapConfig = { ...DEFAULT_RECAP_CONFIG, ...options.recap };
  const ttlPolicy = ttlPolicyOf(options.longCacheTtl);
  const ttl = options.cacheTtlMs ?? (ttlPolicy === 'all' ? LONG_CACHE_TTL_MS : DEFAULT_CACHE_TTL_MS);
  let skillsInView = new Set<string>();
  const window = options.contextWindow;
  const newId = options.newId ?? (() => `ctx_${randomUUID()}`);
  const stateDir =
    options.stateDir ?? (options.workspaceRoot ? path.join(options.workspaceRoot, '.keel') : undefined);

  // Calibration of our byte-based estimate against the real count of the previous call.
  let factor = 1;
  let lastRawEstimate: number | undefined;
  let calibratedFrom: string | undefined;
  let overflowStreak = 0;

  // The hash of the tools + system each request sends (not a frozen constant: the trace measures
  // stability). Re-canonicalising ~10 KB on every call is avoided while the sent system blocks are
  // the frozen ones (same type and text; cache markers do not count), which a string compare shows.
  const hashOfSent = (sent: readonly Anthropic.TextBlockParam[]): string => {
    const frozen =
      sent.length === system.length &&
      sent.every((block, i) => {
        const { cache_control: _marker, ...rest } = block;
        const keys = Object.keys(rest);
        return keys.length === 2 && block.type === 'text' && block.text === system[i]!.text;
      });
    return frozen ? prefixHash : requestPrefixHash({ tools, system: sent });
  };

  const todosOf = (transcript: readonly AgentMessage[]) => options.getTodos?.() ?? latestTodos(transcript);

  const build = (view: ContextView, volatileTail?: readonly string[], before?: ReadonlySet<string>) => {
    const visible = viewMessages(view);
    const placed = placeBreakpoints({
      system,
      messages: toLlm(visible),
      lastSummaryText: view.summaries.at(-1)?.text,
      volatileTail,
      editableToolUseIds: editableToolUseIds(view, pruneConfig),
      previousEditableToolUseIds: before,
      longTtl: ttlPolicy,
    });
    // Equal to estimateRequestTokens(placed request), from per-message estimates cached across calls.
    let raw = prefixTokens + estimateVolatileTailTokens(volatileTail);
    for (const message of visible) raw += estimateAgentMessageTokens(message);
    return { placed, raw, tokens: Math.round(raw * factor) };
  };

  const calibrate = (transcript: readonly AgentMessage[]) => {
    for (let i = transcript.length - 1; i >= 0; i--) {
      const message = transcript[i]!;
      if (message.role !== 'assistant') continue;
      const actual = message.usage.input + message.usage.cacheRead + message.usage.cacheWrite;
      if (message.id !== calibratedFrom && lastRawEstimate && actual > 0) {
        factor = Math.min(3, Math.max(0.5, actual / lastRawEstimate));
        calibratedFrom = message.id;
      }
      return;
    }
  };

  const compact = createCompactor({
    options,
    stateDir,
    writeText: options.writeText ?? defaultWriteText,
    window,
    factor: () => factor,
    tools,
    build: (view) => build(view).placed,
    todosOf,
    newId,
  });

  return {
    systemText,
    prefixHash,
    async prepare(args) {
      if (args.overflow) {
        overflowStreak++;
        if (overflowStreak > MAX_OVERFLOW_RETRIES) {
          throw new ContextOverflowError(
            `The prompt is still too long for the model's context window (${window} tokens) after ${MAX_OVERFLOW_RETRIES} compactions. Start a new session or raise --context-window if the model allows more.`,
          );
        }
      } else overflowStreak = 0;
      calibrate(args.transcript);
      let working: AgentMessage[] = [...args.transcript];
      const appended: AgentMessage[] = [];
      const append = (message: AgentMessage) => {
        appended.push(message);
        working = [...working, message];
      };

      const todos = todosOf(working);
      if (!args.overflow && hasOpenTodos(todos) && isTaskSwitch(working)) {
        append(reminder(newId(), args.now, renderRecap(todos)));
      }

      if (args.overflow && lastRawEstimate) factor = Math.max(factor, (window / lastRawEstimate) * 1.05);
      let view = buildView(working);
      // The view as the previous call cached it (plus what is new): what an in-context summary reads.
      const cachedView = view;
      let built = build(view, args.volatileTail);
      const editableBefore = editableToolUseIds(view, pruneConfig);
      const usage = () => built.tokens / window;
      // A new run does not know its predecessor's last call; the newest reply's timestamp does.
      const lastCall = args.lastCallAt ?? lastAssistantTs(working);
      const cold = lastCall === undefined || args.now - lastCall >= ttl;
      let stage = 0;
      const applyEdits = (edits: Edit[], editStage: number) => {
        if (edits.length === 0) return;
        const edit: ContextEditMessage = {
          id: newId(),
          ts: args.now,
          role: 'context_edit',
          stage: editStage,
          edits,
        };
        append(edit);
        view = buildView(working);
        built = build(view, args.volatileTail, editableBefore);
        stage = Math.max(stage, editStage);
      };

      const appendSummaries = (summaries: readonly AgentMessage[]) => {
        if (summaries.length === 0) return;
        for (const summary of summaries) append(summary);
        view = buildView(working);
        built = build(view, args.volatileTail);
        stage = 3;
      };
      const trimNewest = () => {
        const all = { ...pruneConfig, keepRecentTurns: 0 };
        applyEdits(planSoftTrim(view, all), 1);
      };

      if (args.overflow) {
        // The API's count beat ours: run every stage now, with a smaller tail on each retry.
        const keep = {
          ...pruneConfig,
          keepRecentTurns: Math.max(1, pruneConfig.keepRecentTurns - overflowStreak),
        };
        applyEdits(planSoftTrim(view, keep), 1);
        applyEdits(planHardClear(view, toolUseIndex(working), keep), 2);
        const tail = (options.compactTailFraction ?? 0.15) / 2 ** (overflowStreak - 1);
        appendSummaries(await compact(working, view, tail, args.now, args.signal));
        // Last resort: the newest results themselves (eight parallel 50 KB reads) keep head and tail.
        if (stage === 0 || usage() >= thresholds.emergency) trimNewest();
        if (stage === 0) {
          throw new ContextOverflowError(
            `The prompt is too long for the context window (${window} tokens) and nothing in it can be pruned or summarised.`,
          );
        }
      } else if ((cold || usage() >= thresholds.emergency) && usage() >= thresholds.softTrim) {
        // At the emergency level every stage's threshold is crossed, and a pass breaks a warm cache
        // from its first edit on whatever it prunes. So it runs every stage, in order, in this one pass:
        // compaction rewrites only the summary and the kept tail (a stage-2 pass rewrites all after the
        // oldest result it clears, often more), and the next pass is as far away as it can be.
        const emergency = usage() >= thresholds.emergency;
        // Never skip a stage: each one runs, then (below the emergency level) the next is considered
        // on the new size.
        applyEdits(planSoftTrim(view, pruneConfig), 1);
        if (emergency || usage() >= thresholds.hardClear) {
          applyEdits(planHardClear(view, toolUseIndex(working), pruneConfig), 2);
          if (emergency || usage() >= thresholds.compact) {
            appendSummaries(
              await compact(
                working,
                view,
                options.compactTailFraction ?? 0.15,
                args.now,
                args.signal,
                // A cold conversation would be written to the cache for one call: standalone is cheaper.
                cold ? undefined : cachedView,
              ),
            );
            // Still at the emergency level: the newest results are all that is left to shrink.
            if (usage() >= thresholds.emergency) trimNewest();
          }
        }
      }
      skillsInView = fullSkillsIn(view);

      lastRawEstimate = built.raw;
      return {
        request: {
          system: built.placed.system,
          tools,
          messages: built.placed.messages,
          stage,
          estTokens: built.tokens,
          prefixHash: hashOfSent(built.placed.system),
          utilization: built.tokens / window,
        },
        appended,
      };
    },
    skillInContext: (name) => skillsInView.has(name),
    afterTools(transcript) {
      const out: AgentMessage[] = [];
      const guide = errorStreakGuide(transcript, skills);
      if (guide) out.push({ ...reminder(newId(), Date.now(), guide.text), source: guide.source });
      const trigger = recapAfterTools(transcript, recapConfig);
      const todos = todosOf(transcript);
      if (trigger && todos && todos.length > 0 && (trigger === 'todo_write' || hasOpenTodos(todos))) {
        out.push(reminder(newId(), Date.now(), renderRecap(todos)));
      }
      return out;
    },
  };
}

function lastAssistantTs(transcript: readonly AgentMessage[]): number | undefined {
  for (let i = transcript.length - 1; i >= 0; i--) {
    const message = transcript[i]!;
    if (message.role === 'assistant') return message.ts;
  }
  return undefined;
}

function reminder(id: string, ts: number, text: string): ReminderMessage {
  return { id, ts, role: 'reminder', text, source: RECAP_SOURCE };
}
