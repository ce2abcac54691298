import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import type { AgentMessage, ContextEditMessage, ReminderMessage } from '../messages.ts';
import { toLlm } from '../messages.ts';
import type { SkillEntry } from '../skills/discover.ts';
import { type AntiDriftNotes, antiDriftNotes, tailSkip, tailTexts } from './antiDrift.ts';
import { placeBreakpoints, ttlPolicyOf } from './breakpoints.ts';
import { createCompactor, defaultWriteText } from './compactor.ts';
import { errorStreakGuide } from './errorGuide.ts';
import {
  DEFAULT_PRUNE_CONFIG,
  type Edit,
  editableToolUseIds,
  planHardClear,
  planSoftTrim,
} from './pruning.ts';
import {
  DEFAULT_RECAP_CONFIG,
  hasOpenTodos,
  isTaskSwitch,
  latestTodos,
  RECAP_SOURCE,
  recapAfterTools,
  renderRecap,
} from './recap.ts';
import { buildSystemPrompt, freezeTools } from './systemPrompt.ts';
import {
  estimateAgentMessageTokens,
  estimateSystemTokens,
  estimateToolsTokens,
  estimateVolatileTailTokens,
  requestPrefixHash,
} from './tokens.ts';
import { buildView, type ContextView, fullSkillsIn, toolUseIndex, viewMessages } from './view.ts';
import {
  type ContextEngine,
  type ContextEngineOptions,
  DEFAULT_CACHE_TTL_MS,
  DEFAULT_THRESHOLDS,
  LONG_CACHE_TTL_MS,
  MAX_OVERFLOW_RETRIES,
} from './engineTypes.ts';

export { chooseCut } from './compaction.ts';
export type { InContextSummarizeRequest } from './summarizeRequest.ts';
export * from './engineTypes.ts';
export { estimateTokens, requestPrefixHash } from './tokens.ts';

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
      ...(options.rulesText !== undefined ? { rulesText: options.rulesText } : {}),
      skills,
      ...(options.mcpServers?.length ? { mcpServers: options.mcpServers } : {}),
      ...(options.workspaceRoots && options.workspaceRoots.length > 1
        ? { workspaceRoots: options.workspaceRoots }
        : {}),
      ...(options.memory ? { memory: options.memory } : {}),
    }) + (options.agentPrompt ? `\n\n${options.agentPrompt}` : '');
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
      previousEndSkip: tailSkip(visible),
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
      // Anti-drift notes: shown after the last breakpoint now (as the tail); the runtime layer is appended last.
      const notes: AntiDriftNotes =
        options.antiDrift && !args.overflow
          ? antiDriftNotes({
              transcript: working,
              now: args.now,
              options: options.antiDrift,
              todos,
              workspace: options.workspaceRoot,
              newId,
            })
          : {};
      if (!args.overflow && hasOpenTodos(todos) && isTaskSwitch(working)) {
        append(reminder(newId(), args.now, renderRecap(todos)));
      }
      const noteTexts = tailTexts(notes);
      const tail = noteTexts.length > 0 ? [...noteTexts, ...(args.volatileTail ?? [])] : args.volatileTail;

      if (args.overflow && lastRawEstimate) factor = Math.max(factor, (window / lastRawEstimate) * 1.05);
      let view = buildView(working);
      // The view as the previous call cached it (plus what is new): what an in-context summary reads.
      const cachedView = view;
      let built = build(view, tail);
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
        built = build(view, tail, editableBefore);
        stage = Math.max(stage, editStage);
      };

      const appendSummaries = (summaries: readonly AgentMessage[]) => {
        if (summaries.length === 0) return;
        for (const summary of summaries) append(summary);
        view = buildView(working);
        built = build(view, tail);
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
      if (notes.runtime) appended.push(notes.runtime);

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
