import type { ToolResultMessage } from '../messages.ts';
import type { ContextView, ToolUseBlock } from './view.ts';

// Pruning stages 1 and 2 (P4). Both only touch OLD tool results (outside the most recent turns) and
// only ever produce edits that are persisted as ContextEditMessages; the original results stay in the
// transcript and the session log (P8), and the replacement text says where to get them back.

export interface PruneConfig {
  /** Tool results in the last N assistant turns are never pruned. */
  readonly keepRecentTurns: number;
  /** Stage 1 trims results longer than this (characters). */
  readonly softTrimMinChars: number;
  readonly softTrimHeadChars: number;
  readonly softTrimTailChars: number;
  /** Stage 2 clears results longer than this (characters); short ones cost less than a placeholder. */
  readonly hardClearMinChars: number;
  /** Error results shorter than this survive stage 2: failure paths are lessons (C6). */
  readonly keepErrorsUnderChars: number;
}

export const DEFAULT_PRUNE_CONFIG: PruneConfig = {
  keepRecentTurns: 3,
  softTrimMinChars: 4000,
  softTrimHeadChars: 1200,
  softTrimTailChars: 800,
  hardClearMinChars: 400,
  keepErrorsUnderChars: 1500,
};

export interface Edit {
  readonly messageId: string;
  readonly content: string;
}

/** Index in `view.messages` from which results are protected (the last `keep` assistant turns). */
export function protectedFrom(view: ContextView, keep: number): number {
  if (keep <= 0) return view.messages.length;
  let seen = 0;
  for (let i = view.messages.length - 1; i >= 0; i--) {
    if (view.messages[i]!.role === 'assistant' && ++seen === keep) return i;
  }
  return 0;
}

/**
 * A skill's guide (a `Skill` result with the body or a supporting file) is never trimmed or cleared:
 * it is small, it is what the model works by, and the Skill tool answers a re-ask with a reminder
 * only while the guide is still whole in context. Compaction still replaces it (the tool then
 * returns the full body again).
 */
export function isSkillGuide(message: ToolResultMessage): boolean {
  if (message.toolName !== 'Skill' || message.isError) return false;
  const mode = (message.result?.data as { mode?: unknown } | null | undefined)?.mode;
  return mode === 'full' || mode === 'file';
}

function oldToolResults(view: ContextView, keep: number): ToolResultMessage[] {
  const limit = protectedFrom(view, keep);
  return view.messages
    .slice(0, limit)
    .filter((m): m is ToolResultMessage => m.role === 'tool_result' && !isSkillGuide(m));
}

/** tool_use ids of every result a later stage 1 or 2 could still rewrite (stage 3 aside). */
export function editableToolUseIds(
  view: ContextView,
  config: PruneConfig = DEFAULT_PRUNE_CONFIG,
): Set<string> {
  const ids = new Set<string>();
  for (const message of view.messages) {
    if (message.role !== 'tool_result' || isSkillGuide(message)) continue;
    if ((view.editStage.get(message.id) ?? 0) >= 2) continue;
    // An image costs ~1600 tokens however short its text: it is cleared like a long output.
    if (message.content.length <= config.hardClearMinChars && !message.images?.length) continue;
    if (message.isError && message.content.length < config.keepErrorsUnderChars) continue;
    ids.add(message.toolUseId);
  }
  return ids;
}

/** Where the full output lives, when the tool spilled it to a file. */
export function spillPathOf(message: ToolResultMessage): string | undefined {
  const data = message.result?.data;
  if (data && typeof data === 'object') {
    for (const key of ['spillPath', 'spill', 'fullOutputPath', 'outputPath', 'stdout_file']) {
      const value = (data as Record<string, unknown>)[key];
      if (typeof value === 'string' && value.length > 0) return value;
    }
  }
  const match = /Full output: (\S+?)(?:\s|$)/.exec(message.content);
  return match?.[1];
}

const INPUT_KEYS = ['file_path', 'path', 'pattern', 'command', 'query', 'name', 'url'];

export function describeToolCall(use: ToolUseBlock | undefined, fallbackName: string): string {
  if (!use) return fallbackName;
  for (const key of INPUT_KEYS) {
    const value = use.input[key];
    if (typeof value === 'string' && value.length > 0) {
      const short = value.replace(/\s+/g, ' ');
      return `${use.name} ${short.length > 100 ? `${short.slice(0, 100)}…` : short}`;
    }
  }
  return use.name;
}

function recoveryHint(message: ToolResultMessage): string {
  const spill = spillPathOf(message);
  const log = `MemorySearch (message ${message.id})`;
  return spill ? `full output: ${spill}, or ${log}` : `full output: ${log}`;
}

function lineCount(text: string): number {
  let n = 1;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/** Head and tail cut at line boundaries (a half line is worse than none). */
function headTail(text: string, headChars: number, tailChars: number): { head: string; tail: string } {
  let head = text.slice(0, headChars);
  const lastNl = head.lastIndexOf('\n');
  if (lastNl > headChars / 2) head = head.slice(0, lastNl);
  let tail = text.slice(text.length - tailChars);
  const firstNl = tail.indexOf('\n');
  if (firstNl >= 0 && firstNl < tailChars / 2) tail = tail.slice(firstNl + 1);
  return { head, tail };
}

/** Stage 1 (≥30%): big old results keep their head and tail; the middle is named, not lost. */
export function planSoftTrim(view: ContextView, config: PruneConfig = DEFAULT_PRUNE_CONFIG): Edit[] {
  const edits: Edit[] = [];
  for (const message of oldToolResults(view, config.keepRecentTurns)) {
    if ((view.editStage.get(message.id) ?? 0) >= 1) continue;
    if (message.content.length <= config.softTrimMinChars) continue;
    const { head, tail } = headTail(message.content, config.softTrimHeadChars, config.softTrimTailChars);
    const cut = lineCount(message.content) - lineCount(head) - lineCount(tail);
    const marker = `[… ${Math.max(cut, 1)} lines trimmed to save context (${message.content.length} chars in all); ${recoveryHint(message)} …]`;
    edits.push({ messageId: message.id, content: `${head}\n${marker}\n${tail}` });
  }
  return edits;
}

/** Stage 2 (≥50%): old results become a placeholder naming the call and where the output is. */
export function planHardClear(
  view: ContextView,
  uses: ReadonlyMap<string, ToolUseBlock>,
  config: PruneConfig = DEFAULT_PRUNE_CONFIG,
): Edit[] {
  const edits: Edit[] = [];
  for (const message of oldToolResults(view, config.keepRecentTurns)) {
    if ((view.editStage.get(message.id) ?? 0) >= 2) continue;
    // An image costs ~1600 tokens however short its text: it is cleared like a long output.
    if (message.content.length <= config.hardClearMinChars && !message.images?.length) continue;
    if (message.isError && message.content.length < config.keepErrorsUnderChars) continue;
    const call = describeToolCall(uses.get(message.toolUseId), message.toolName);
    const status = message.isError ? 'error' : (message.result?.status ?? 'success');
    const original = view.originals.get(message.id) ?? message.content;
    edits.push({
      messageId: message.id,
      content: `[Old tool result cleared to save context: ${call} → ${status}, ${lineCount(original)} lines; ${recoveryHint(message)}]`,
    });
  }
  return edits;
}
