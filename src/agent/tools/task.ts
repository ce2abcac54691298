import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { fail, type ToolContext, type ToolDefinition, type ToolResult } from './protocol.ts';

// Task: hand a self-contained job to a sub-agent (seed 000 §7). The sub-agent's reads and searches
// stay in its own context; only its structured answer comes back.

const inputSchema = lazy(() =>
  z.object({
    description: z.string().min(1).max(80),
    prompt: z.string().min(1),
    mode: z.enum(['explore', 'general']).default('explore'),
  }),
);
export type TaskInput = z.infer<ReturnType<typeof inputSchema>>;

const DESCRIPTION = `Delegate a broad search or self-contained job to a sub-agent; only its summary returns, keeping your context small. Several calls in one reply run in parallel. Mode "general" may also edit and run commands. Not for one known file (Read) or one search (Grep).
Example: {"description":"Find auth checks","prompt":"Where are tokens validated?"}`;

async function execute(input: TaskInput, ctx: ToolContext): Promise<ToolResult> {
  if (!ctx.subagents) {
    // Only a session's top-level agent gets the port: a sub-agent (depth limit 1) or `keel tool` do not.
    return fail(
      'BLOCKED_BY_POLICY',
      'Sub-agents cannot be started here (a sub-agent cannot start sub-agents: depth limit 1).',
      'Do the work with your own tools.',
    );
  }
  return ctx.subagents.run({ description: input.description, prompt: input.prompt, mode: input.mode }, ctx);
}

export function createTaskTool(): ToolDefinition<TaskInput, unknown> {
  return {
    name: 'Task',
    description: DESCRIPTION,
    get inputSchema() {
      return inputSchema();
    },
    readOnly: true,
    concurrent: true,
    execute,
  };
}
