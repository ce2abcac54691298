import * as fs from 'node:fs';
import * as path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import type { TodoItem } from '../events.ts';
import type { AgentMessage, SummaryMessage } from '../messages.ts';
import { toLlm } from '../messages.ts';
import type { BreakpointOutput } from './breakpoints.ts';
import {
  buildSummarizePrompt,
  chooseCut,
  extractFacts,
  parseSections,
  renderHistory,
  renderSummary,
} from './compaction.ts';
import type { ContextEngineOptions } from './engine.ts';
import { MERGED_SHARE, mergeSummaries, needsMerge } from './mergeSummaries.ts';
import { buildInContextSummarizeRequest, describeKeptFrom } from './summarizeRequest.ts';
import { estimateRequestTokens, estimateTokens } from './tokens.ts';
import { type ContextView, toolUseIndex } from './view.ts';

// Stage 3 as the engine runs it: choose the cut, archive what it replaces, get the model's part of
// the summary (in the cached conversation first, the standalone prompt as the fallback), render it.

export interface CompactorDeps {
  readonly options: Pick<
    ContextEngineOptions,
    'summarize' | 'summarizeInContext' | 'sessionId' | 'workspaceRoot'
  >;
  readonly stateDir: string | undefined;
  readonly writeText: (absolutePath: string, text: string) => void;
  readonly window: number;
  /** The engine's current calibration factor (estimate → real tokens). */
  readonly factor: () => number;
  readonly tools: readonly Anthropic.Tool[];
  /** The request a view becomes (breakpoints placed, no volatile tail). */
  readonly build: (view: ContextView) => BreakpointOutput;
  readonly todosOf: (transcript: readonly AgentMessage[]) => readonly TodoItem[] | undefined;
  readonly newId: () => string;
}

export function defaultWriteText(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

export type Compact = (
  transcript: readonly AgentMessage[],
  view: ContextView,
  tailFraction: number,
  now: number,
  signal: AbortSignal,
  /** The view as the previous call cached it: the in-context summary reads it (absent: standalone). */
  cachedView?: ContextView,
) => Promise<SummaryMessage[]>;

export function createCompactor(deps: CompactorDeps): Compact {
  const archive = (messages: readonly AgentMessage[], n: number): string => {
    const name = `${deps.options.sessionId ?? 'session'}-compaction-${n}.jsonl`;
    if (!deps.stateDir) return `(archive unavailable) ${name}`;
    const file = path.join(deps.stateDir, 'archive', name);
    deps.writeText(file, messages.map((m) => JSON.stringify(m)).join('\n') + (messages.length ? '\n' : ''));
    const root = deps.options.workspaceRoot;
    return root && !path.relative(root, file).startsWith('..') ? path.relative(root, file) : file;
  };

  /** The summary asked in the conversation as the previous call cached it, when that fits. */
  const summarizeInContext = async (
    cachedView: ContextView,
    firstKeptId: string,
    signal: AbortSignal,
  ): Promise<string | undefined> => {
    const ask = deps.options.summarizeInContext;
    if (!ask) return undefined;
    const keptAt = cachedView.messages.findIndex((m) => m.id === firstKeptId);
    if (keptAt < 0) return undefined;
    let newestReply = -1;
    for (let i = cachedView.messages.length - 1; i >= 0; i--) {
      const m = cachedView.messages[i]!;
      if (m.role === 'assistant' && toLlm([m]).length > 0) {
        newestReply = i;
        break;
      }
    }
    const before = keptAt <= newestReply;
    const placed = deps.build(cachedView);
    const request = buildInContextSummarizeRequest({
      system: placed.system,
      tools: deps.tools,
      messages: placed.messages,
      summarizedBeforeNewestReply: before,
      // The kept part is named only when the model can see where it starts.
      keptFrom: !before || keptAt < newestReply ? describeKeptFrom(cachedView.messages[keptAt]) : undefined,
    });
    if (!request || estimateRequestTokens(request) * deps.factor() > deps.window) return undefined;
    try {
      const text = await ask(request, signal);
      return text.trim() ? text : undefined;
    } catch (error) {
      if (signal.aborted) throw error;
      return undefined;
    }
  };

  // Parameters are typed by Compact above.
  return async (transcript, view, tailFraction, now, signal, cachedView) => {
    const cut = chooseCut(view.messages, (deps.window * tailFraction) / deps.factor());
    if (cut <= 0) return [];
    const replacedView = view.messages.slice(0, cut);
    const originals = new Map(transcript.map((m) => [m.id, m]));
    const replaced = replacedView.map((m) => originals.get(m.id) ?? m);
    const uses = toolUseIndex(transcript);
    const facts = extractFacts(replaced);
    // Numbered over the whole transcript: merged summaries leave fewer in view, and a number (and its
    // archive file) must never be used twice.
    const n = nextSummaryNumber(transcript);
    const firstKept = transcript.findIndex((m) => m.id === view.messages[cut]!.id);
    const archivePath = archive(transcript.slice(0, Math.max(0, firstKept)), n);
    let model: ReturnType<typeof parseSections> | undefined;
    let note: string | undefined;
    const inContext = cachedView
      ? await summarizeInContext(cachedView, view.messages[cut]!.id, signal)
      : undefined;
    if (inContext !== undefined) model = parseSections(inContext);
    else if (deps.options.summarize) {
      const maxChars = Math.min(240_000, Math.floor(deps.window * 4 * 0.4));
      try {
        const text = await deps.options.summarize(
          buildSummarizePrompt(renderHistory(replaced, uses, maxChars)),
          signal,
        );
        model = parseSections(text);
      } catch (error) {
        if (signal.aborted) throw error;
        note = `(The model summary failed: ${(error as Error).message}. This summary was built from the log alone.)`;
      }
    } else if (!deps.options.summarizeInContext) {
      note = '(Built from the log alone; no summarizer was available.)';
    } else {
      note = '(The model summary failed. This summary was built from the log alone.)';
    }
    const text = renderSummary({
      n,
      archivePath,
      facts,
      todos: deps.todosOf(transcript),
      model,
      note,
      continues: view.summaries.length > 0,
    });
    const summary: SummaryMessage = {
      id: deps.newId(),
      ts: now,
      role: 'summary',
      text,
      replaces: replacedView.map((m) => m.id),
      archivePath,
    };
    // Summaries piling up at the front: the older ones become one (the new one stays as it is).
    const sizes = [...view.summaries, summary].map((s) => estimateTokens(s.text) * deps.factor());
    if (!needsMerge(sizes, deps.window)) return [summary];
    const merged = mergeSummaries(view.summaries, deps.window * 4 * MERGED_SHARE, deps.newId(), now);
    return [merged, summary];
  };
}

/** 1 + the highest compaction number any summary in the transcript carries (a merge "3-7" counts 7). */
export function nextSummaryNumber(transcript: readonly AgentMessage[]): number {
  let highest = 0;
  for (const message of transcript) {
    if (message.role !== 'summary') continue;
    const n = /<session-summary n="(?:\d+-)?(\d+)"/.exec(message.text)?.[1];
    highest = Math.max(highest, n === undefined ? 0 : Number(n));
  }
  return highest + 1;
}
