import { z } from 'zod';
import type { TodoItem } from '../events.ts';
import type { AgentMessage, ToolResultMessage } from '../messages.ts';

// Recency anchoring (P5): the todo state restated at the END of the context as a persisted reminder,
// after a TodoWrite, after a long tool run, after 10 tool calls without a todo update, and on a task
// switch. Every trigger is derived from the transcript alone, so a resumed session behaves the same.

export const RECAP_SOURCE = 'recap';

export interface RecapConfig {
  readonly staleAfterToolCalls: number;
  /** A batch whose slowest call took at least this long counts as a long run. */
  readonly longRunMs: number;
  /** A batch whose output totals at least this many characters counts as a long run. */
  readonly longOutputChars: number;
}

export const DEFAULT_RECAP_CONFIG: RecapConfig = {
  staleAfterToolCalls: 10,
  longRunMs: 30_000,
  longOutputChars: 24_000,
};

const todoInput = z.object({
  todos: z.array(
    z.object({
      id: z.union([z.string(), z.number()]).optional(),
      content: z.string(),
      status: z.enum(['pending', 'in_progress', 'completed']),
    }),
  ),
});

export type RecapTrigger = 'todo_write' | 'long_run' | 'stale' | 'task_switch';

/** The todo list as last written by a successful TodoWrite in the transcript. */
export function latestTodos(transcript: readonly AgentMessage[]): TodoItem[] | undefined {
  const failed = new Set<string>();
  for (let i = transcript.length - 1; i >= 0; i--) {
    const message = transcript[i]!;
    if (message.role === 'tool_result' && message.isError) failed.add(message.toolUseId);
    if (message.role !== 'assistant') continue;
    for (let j = message.content.length - 1; j >= 0; j--) {
      const block = message.content[j]!;
      if (block.type !== 'tool_use' || block.name !== 'TodoWrite' || failed.has(block.id)) continue;
      const parsed = todoInput.safeParse(block.input);
      if (!parsed.success) continue;
      return parsed.data.todos.map((t, k) => ({
        id: String(t.id ?? k + 1),
        content: t.content,
        status: t.status,
      }));
    }
  }
  return undefined;
}

export function hasOpenTodos(todos: readonly TodoItem[] | undefined): todos is readonly TodoItem[] {
  return !!todos && todos.some((t) => t.status !== 'completed');
}

function clip(text: string, max = 120): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max)}…` : one;
}

/** One short paragraph: progress, the item in progress, what is pending. */
export function renderRecap(todos: readonly TodoItem[]): string {
  const done = todos.filter((t) => t.status === 'completed').length;
  const active = todos.filter((t) => t.status === 'in_progress');
  const pending = todos.filter((t) => t.status === 'pending');
  const parts = [`Plan recap [${done}/${todos.length} done]`];
  parts.push(
    active.length > 0
      ? `In progress: ${active.map((t) => clip(t.content)).join('; ')}.`
      : 'Nothing in progress.',
  );
  if (pending.length > 0) parts.push(`Pending: ${pending.map((t) => clip(t.content, 80)).join('; ')}.`);
  if (pending.length === 0 && active.length === 0) parts.push('All items are done: verify and report.');
  return parts.join(' ');
}

/** The tool results of the newest batch (everything after the last assistant message). */
export function latestBatch(transcript: readonly AgentMessage[]): ToolResultMessage[] {
  const batch: ToolResultMessage[] = [];
  for (let i = transcript.length - 1; i >= 0; i--) {
    const message = transcript[i]!;
    if (message.role === 'assistant') break;
    if (message.role === 'tool_result') batch.unshift(message);
  }
  return batch;
}

/** Tool results since the last TodoWrite or recap (how long the plan has been out of sight). */
export function toolCallsSinceAnchor(transcript: readonly AgentMessage[]): number {
  let count = 0;
  for (let i = transcript.length - 1; i >= 0; i--) {
    const message = transcript[i]!;
    if (message.role === 'reminder' && message.source === RECAP_SOURCE) break;
    if (message.role === 'summary') break;
    if (message.role === 'tool_result') {
      if (message.toolName === 'TodoWrite' && !message.isError) break;
      count++;
    }
  }
  return count;
}

export function recapAfterTools(
  transcript: readonly AgentMessage[],
  config: RecapConfig = DEFAULT_RECAP_CONFIG,
): RecapTrigger | undefined {
  const batch = latestBatch(transcript);
  if (batch.length === 0) return undefined;
  if (batch.some((m) => m.toolName === 'TodoWrite' && !m.isError)) return 'todo_write';
  const slowest = Math.max(0, ...batch.map((m) => m.result?.stats?.time_ms ?? 0));
  const output = batch.reduce((sum, m) => sum + m.content.length, 0);
  if (slowest >= config.longRunMs || output >= config.longOutputChars) return 'long_run';
  if (toolCallsSinceAnchor(transcript) >= config.staleAfterToolCalls) return 'stale';
  return undefined;
}

/**
 * A new user message after earlier work (a follow-up or a steering message) while todos are open:
 * restate the plan right after it so the model decides consciously whether the task changed.
 */
export function isTaskSwitch(transcript: readonly AgentMessage[]): boolean {
  let sawUser = false;
  for (let i = transcript.length - 1; i >= 0; i--) {
    const message = transcript[i]!;
    if (message.role === 'reminder' && message.source === RECAP_SOURCE) return false;
    if (message.role === 'user') sawUser = true;
    else if (message.role === 'assistant') return sawUser;
    else if (message.role === 'tool_result' && !sawUser) return false;
  }
  return false;
}
