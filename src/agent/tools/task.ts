import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { fail, type ToolContext, type ToolDefinition, type ToolResult } from './protocol.ts';

// Task: hand a self-contained job to a sub-agent (seed 000 §7). The sub-agent's reads and searches
// stay in its own context; only its structured answer comes back.

/** A custom agent offered as a sub-agent kind: only its name and one line reach this tool (an index, P3). */
export interface TaskAgentKind {
  readonly name: string;
  readonly description: string;
}

// Checked by refinements, which add nothing to the tool's schema (the prefix stays small, P1).
const taskId = z
  .string()
  .refine((v) => /^[A-Za-z0-9_.-]{1,40}$/.test(v), 'a task id is 1-40 letters, digits, "_", "-" or "."');
const inputSchemaFor = (kinds: readonly TaskAgentKind[]) =>
  z
    .object({
      description: z.string().min(1).max(80),
      prompt: z.string().min(1),
      mode: z.enum(['explore', 'general', 'writer', ...kinds.map((k) => k.name)]).default('explore'),
      id: taskId.optional(),
      after: z
        .array(taskId)
        .refine((a) => a.length <= 20, 'at most 20 ids')
        .optional(),
    })
    .refine((t) => t.id === undefined || !t.after?.includes(t.id), {
      message: 'a task cannot wait for itself ("after" names its own "id")',
      path: ['after'],
    });
const defaultSchema = lazy(() => inputSchemaFor([]));
export interface TaskInput {
  readonly description: string;
  readonly prompt: string;
  /** `explore`, `general`, `writer`, or a custom agent's name. */
  readonly mode: string;
  readonly id?: string;
  readonly after?: readonly string[];
}

const DESCRIPTION = `Delegate a broad search or self-contained job to a sub-agent; only its summary returns. Calls in one reply run in parallel ("after":[ids] waits for those "id"s). Mode "general" edits and runs commands; "writer" edits in its own copy, merged back for review. Not for one known file (Read) or one search (Grep).
Example: {"description":"Find auth checks","prompt":"Where are tokens validated?"}`;

/** The description with the custom agents' one-liners (their prompts stay in their own prefix). */
function describe(kinds: readonly TaskAgentKind[]): string {
  if (kinds.length === 0) return DESCRIPTION;
  const lines = kinds.map((k) => `- "${k.name}": ${k.description.replace(/\s+/g, ' ').slice(0, 200)}`);
  return `${DESCRIPTION}\nCustom agents (the repository's or the user's agent files), as modes:\n${lines.join('\n')}`;
}

async function execute(input: TaskInput, ctx: ToolContext): Promise<ToolResult> {
  if (!ctx.subagents) {
    // Only a session's top-level agent gets the port: a sub-agent (depth limit 1) or `keel tool` do not.
    return fail(
      'BLOCKED_BY_POLICY',
      'Sub-agents cannot be started here (a sub-agent cannot start sub-agents: depth limit 1).',
      'Do the work with your own tools.',
    );
  }
  return ctx.subagents.run(
    {
      description: input.description,
      prompt: input.prompt,
      mode: input.mode,
      ...(input.id !== undefined ? { id: input.id } : {}),
      ...(input.after?.length ? { after: input.after } : {}),
    },
    ctx,
  );
}

/**
 * `kinds`: the session's custom agents, snapshotted at session start like the skill index (P1). With
 * none, the tool is byte-identical to a session without agent files.
 */
export function createTaskTool(kinds: readonly TaskAgentKind[] = []): ToolDefinition<TaskInput, unknown> {
  const schema = kinds.length === 0 ? defaultSchema : lazy(() => inputSchemaFor(kinds));
  return {
    name: 'Task',
    description: describe(kinds),
    get inputSchema() {
      return schema() as unknown as z.ZodType<TaskInput>;
    },
    readOnly: true,
    concurrent: true,
    execute,
  };
}
