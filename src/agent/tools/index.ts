import type { TodoItem } from '../events.ts';
import type { Host, McpPort } from '../host.ts';
import type { McpManager } from '../mcp/manager.ts';
import type { SkillIndex } from '../skills/discover.ts';
import { createBashTool } from './bash.ts';
import { createEditTool } from './edit.ts';
import { createGlobTool } from './glob.ts';
import { createGrepTool } from './grep.ts';
import { createJobTool } from './job.ts';
import { createLsTool } from './ls.ts';
import { createMcpCallTool } from './mcpCall.ts';
import { createMcpSearchTool } from './mcpSearch.ts';
import { createMemoryTool, type MemoryToolOptions } from './memory.ts';
import { createMemorySearchTool } from './memorySearch.ts';
import { createMultiEditTool } from './multiEdit.ts';
import type { AnyToolDefinition } from './protocol.ts';
import { createReadTool } from './read.ts';
import { createSkillTool } from './skill.ts';
import { createTaskTool, type TaskAgentKind } from './task.ts';
import { createTodoWriteTool } from './todoWrite.ts';
import { createWriteTool } from './write.ts';

export interface ToolsetOptions {
  readonly host: Host;
  /** Untrusted workspace (or a read-only request): only tools that change nothing. */
  readonly readOnly: boolean;
  readonly todos: { current: () => readonly TodoItem[]; onChange: (todos: TodoItem[]) => void };
  /** The session's skill index snapshot (P1: frozen at session start). */
  readonly skills?: SkillIndex;
  /** Whether a skill's full guide is still in the model's context (the context engine knows). */
  readonly skillInContext?: (name: string) => boolean;
  /** MCP servers are configured: McpSearch + McpCall are offered (never in an everyday session). */
  readonly mcp?: { readonly manager: McpManager; readonly port: McpPort };
  /** Semantic memory (MEMORY.md files); absent: no Memory tool. */
  readonly memory?: MemoryToolOptions;
  /** Custom agents offered as Task modes (snapshot taken at session start). */
  readonly agentKinds?: readonly TaskAgentKind[];
}

/** Every built-in tool, one factory each. The registry sorts them (P1). */
export function createToolset(options: ToolsetOptions): AnyToolDefinition[] {
  const all = [
    createLsTool(),
    createGlobTool(),
    createGrepTool(),
    createReadTool(),
    createEditTool(),
    createMultiEditTool(),
    createWriteTool(),
    createBashTool(),
    createJobTool(),
    createTodoWriteTool(options.todos),
    createMemorySearchTool(options.memory ? { userMemoryFile: options.memory.paths.user } : {}),
    ...(options.memory ? [createMemoryTool(options.memory)] : []),
    createTaskTool(options.agentKinds),
    ...(options.skills ? [createSkillTool(options.skills, { inContext: options.skillInContext })] : []),
    ...(options.mcp
      ? [createMcpSearchTool(options.mcp.manager), createMcpCallTool(options.mcp.manager, options.mcp.port)]
      : []),
  ] as AnyToolDefinition[];
  return options.readOnly ? all.filter((t) => t.readOnly) : all;
}
