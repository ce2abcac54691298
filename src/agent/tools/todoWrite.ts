import { z } from 'zod';
import { lazy } from '../lazy.ts';
import type { TodoItem } from '../events.ts';
import { fail, ok, type ToolDefinition, type ToolResult } from './protocol.ts';

// TodoWrite keeps the plan visible (P5: the session restates it at the end of the context) and on disk
// (P10: `onChange` persists it in the session log). Each call replaces the whole list.

export const MAX_TODOS = 20;

const todoSchema = lazy(() =>
  z.object({
    id: z.string().trim().min(1, 'id must not be empty'),
    content: z.string().trim().min(1, 'content must not be empty'),
    status: z.enum(['pending', 'in_progress', 'completed']),
  }),
);

const inputSchema = lazy(() =>
  z.object({
    todos: z.array(todoSchema()),
  }),
);

export type TodoWriteInput = z.infer<ReturnType<typeof inputSchema>>;

export interface TodoWriteData {
  readonly todos: readonly TodoItem[];
  readonly counts: { readonly pending: number; readonly in_progress: number; readonly completed: number };
}

const DESCRIPTION = `Replace the whole task list (max ${MAX_TODOS} items, unique ids). Use when a task has 3+ steps: one item in_progress at a time, completed once done. Don't use for one trivial step.
Example: {"todos":[{"id":"1","content":"Add tests","status":"in_progress"}]}`;

const MARK: Record<TodoItem['status'], string> = { completed: '[x]', in_progress: '[>]', pending: '[ ]' };

/** The semantic rules the schema cannot express; undefined when the list is acceptable. */
export function validateTodos(todos: readonly TodoItem[]): ToolResult | undefined {
  if (todos.length > MAX_TODOS) {
    return fail(
      'INVALID_PARAM',
      `Too many todos: ${todos.length} items, the limit is ${MAX_TODOS}.`,
      `Merge related steps or drop completed ones so the list has at most ${MAX_TODOS} items, then call TodoWrite again.`,
    );
  }
  const active = todos.filter((t) => t.status === 'in_progress');
  if (active.length > 1) {
    return fail(
      'INVALID_PARAM',
      `${active.length} todos are in_progress (${active.map((t) => `"${t.id}"`).join(', ')}); at most one may be.`,
      'Keep only the item you are working on right now as in_progress; set the others to pending or completed.',
    );
  }
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  for (const t of todos) {
    if (seen.has(t.id)) duplicates.add(t.id);
    seen.add(t.id);
  }
  if (duplicates.size > 0) {
    return fail(
      'INVALID_PARAM',
      `Duplicate todo ids: ${[...duplicates].map((id) => `"${id}"`).join(', ')}. Each id must be unique.`,
      'Give every item its own id (e.g. "1", "2", "3") and keep an item\'s id when you update its status.',
    );
  }
  return undefined;
}

function describeChanges(before: readonly TodoItem[], after: readonly TodoItem[]): string {
  if (before.length === 0) return '';
  const previous = new Map(before.map((t) => [t.id, t]));
  const next = new Set(after.map((t) => t.id));
  const changes: string[] = [];
  for (const t of after) {
    const old = previous.get(t.id);
    if (!old) changes.push(`+${t.id}`);
    else if (old.status !== t.status) changes.push(`${t.id} ${old.status}→${t.status}`);
  }
  for (const t of before) if (!next.has(t.id)) changes.push(`-${t.id}`);
  return changes.length > 0 ? `Changed: ${changes.join(', ')}` : 'No status changes.';
}

export function createTodoWriteTool(options: {
  onChange: (todos: TodoItem[]) => void;
  current: () => readonly TodoItem[];
}): ToolDefinition<TodoWriteInput, TodoWriteData> {
  return {
    name: 'TodoWrite',
    description: DESCRIPTION,
    get inputSchema() {
      return inputSchema();
    },
    // Writes session state only, never a workspace file: safe in an untrusted workspace too.
    readOnly: true,
    async execute(input) {
      const todos: TodoItem[] = input.todos.map((t) => ({ id: t.id, content: t.content, status: t.status }));
      const invalid = validateTodos(todos);
      if (invalid) return invalid as ToolResult<TodoWriteData>;

      const before = options.current();
      options.onChange(todos);

      const counts = { pending: 0, in_progress: 0, completed: 0 };
      for (const t of todos) counts[t.status] += 1;
      if (todos.length === 0) {
        return ok({ todos, counts }, 'Todo list cleared (0 items).', { items: 0 }, { todos });
      }
      const lines = [
        `Todos updated: ${counts.completed} completed, ${counts.in_progress} in progress, ${counts.pending} pending (${todos.length} total).`,
        ...todos.map((t) => `${MARK[t.status]} ${t.id}. ${t.content}`),
      ];
      const changes = describeChanges(before, todos);
      if (changes) lines.push(changes);
      if (counts.completed === todos.length) lines.push('All items are completed.');
      else if (counts.in_progress === 0) lines.push('Mark the next item in_progress when you start it.');
      return ok({ todos, counts }, lines.join('\n'), { items: todos.length }, { todos });
    },
  };
}
