import * as path from 'node:path';
import {
  type AgentCatalog,
  type AgentDefinition,
  agentPromptSection,
  discoverAgents,
} from '../agents/discover.ts';
import { planFileText, planSteps } from '../agents/plan.ts';
import type { ContextEngine } from '../context/engine.ts';
import type { AgentEvent, AgentEventBody } from '../events.ts';
import type { Host } from '../host.ts';
import type { AgentMessage } from '../messages.ts';
import type { ModelClient } from '../model/client.ts';
import type { Effort } from '../model/models.ts';
import { createSwitchableModelClient, type SwitchableModelClient } from '../model/switchable.ts';
import type { SubagentRunnerOptions } from '../subagents/runner.ts';
import type { AnyToolDefinition } from '../tools/protocol.ts';
import { limitNames, type ToolLimit } from './toolGate.ts';
import { SessionConfigError, sessionModelClient } from './sessionStart.ts';
import type { AgentSessionOptions, PromptOptions } from './types.ts';

// Which agent a session is (the default one, a custom agent file, plan mode), fixed at session start:
// its prompt and tool list are part of the frozen prefix (P1). Custom agents are also offered as Task
// modes; their prompts stay in the sub-agents' own prefixes.

export interface SessionAgent {
  readonly catalog: AgentCatalog;
  /** The main agent, when not the default one. */
  readonly agent?: AgentDefinition;
  /** Custom agents (not the built-in `plan`), offered as Task modes. */
  readonly kinds: readonly AgentDefinition[];
  /** The main agent's tool limit (its file's `tools`). */
  readonly limit?: ToolLimit;
  /** Its prompt section for the system prompt. */
  readonly prompt?: string;
}

export function sessionAgent(
  host: Host,
  options: AgentSessionOptions,
  warn: (t: string) => void,
  /** The agent a resumed session's log names. */
  logged?: string,
): SessionAgent {
  const catalog =
    options.agents ?? discoverAgents({ workspaceRoot: host.workspace.roots[0] ?? '', ...options.agentDirs });
  if (!options.agents) for (const p of catalog.problems) warn(`Agent file ${p.file}: ${p.message}`);
  const kinds = catalog.agents.filter((a) => a.source !== 'builtin');
  // A resumed session keeps the agent its log names: its prompt and tools are part of the fixed prefix.
  if (options.resumeId && options.agentName && options.agentName !== (logged ?? options.agentName))
    throw new SessionConfigError(
      `Session ${options.resumeId} runs as the agent "${logged}"; it cannot change (start a new session for "${options.agentName}").`,
    );
  if (options.resumeId && options.agentName && !logged)
    throw new SessionConfigError(
      `Session ${options.resumeId} runs as Keel's own agent; it cannot change (start a new session for "${options.agentName}").`,
    );
  const name = logged ?? options.agentName;
  if (!name) return { catalog, kinds };
  const agent = catalog.agents.find((a) => a.name === name);
  if (!agent) {
    const names = catalog.agents.map((a) => a.name).join(', ');
    throw new SessionConfigError(`No agent named "${name}" (found: ${names}); \`keel agents\` lists them.`);
  }
  return {
    catalog,
    agent,
    kinds,
    ...(agent.tools
      ? { limit: { allowed: agent.tools, by: `the agent "${agent.name}" (${agent.shown})` } }
      : {}),
    prompt: agentPromptSection(agent),
  };
}

/**
 * The main agent's tool set, narrowed by its `tools` list (an agent file never adds a tool), and the
 * limit its calls are checked against: a read-only agent's names what it has, so a forced Write is
 * refused as "not allowed in plan mode" rather than as an unknown tool.
 */
export function agentTools(
  main: SessionAgent,
  tools: readonly AnyToolDefinition[],
): { offered: AnyToolDefinition[]; limit?: ToolLimit } {
  const names = main.limit ? limitNames(main.limit) : undefined;
  const offered = names ? tools.filter((t) => names.has(t.name)) : [...tools];
  if (main.agent?.readOnly)
    return {
      offered,
      limit: { allowed: offered.map((t) => t.name), by: `${main.agent.name} mode (read-only)` },
    };
  return { offered, ...(main.limit ? { limit: main.limit } : {}) };
}

/**
 * The session's model: the agent's, else the last `/model` switch a resumed log holds, else the
 * option's. Each model gets a client with the session's fallbacks behind it.
 */
export function sessionModel(
  options: AgentSessionOptions,
  agent: AgentDefinition | undefined,
  events: readonly AgentEvent[],
  make: (model: string) => ModelClient,
): SwitchableModelClient {
  const switched = [...events].reverse().find((e) => e.type === 'model_switch');
  const initial = agent?.model ?? (switched?.type === 'model_switch' ? switched.model : options.model);
  return createSwitchableModelClient(initial, make);
}

/** A prompt's limit for its run (a slash command's `allowed-tools`). */
export function turnLimit(opts: PromptOptions | undefined): ToolLimit | undefined {
  return opts?.allowedTools?.length
    ? { allowed: opts.allowedTools, by: opts.limitBy ?? 'the command that started this turn' }
    : undefined;
}

/** Plan mode's run ended: its plan goes to `.keel/plans/<session>.md` and out as a `plan` event. */
export function finishPlan(
  host: Host,
  sessionId: string,
  task: string,
  finalText: string,
  emit: (body: AgentEventBody) => void,
): void {
  const file = path.join(host.stateDir, 'plans', `${sessionId}.md`);
  const root = host.workspace.roots[0] ?? '';
  let shown: string | undefined;
  try {
    host.storage.writeText(file, planFileText(task, finalText, sessionId));
    shown = path.relative(root, file).split(path.sep).join('/');
  } catch (error) {
    emit({
      type: 'notice',
      level: 'warn',
      text: `The plan could not be written to ${file}: ${String(error)}`,
    });
  }
  emit({ type: 'plan', text: finalText, steps: planSteps(finalText), ...(shown ? { file: shown } : {}) });
}

/** The sub-agent runner's settings that come from the session (the turn budget and steering are the session's). */
export function subagentOptions(
  options: AgentSessionOptions,
  s: {
    readonly host: Host;
    readonly id: string;
    readonly model: SwitchableModelClient;
    readonly contextWindow: number;
    /** The main model's output limit (sub-agents on another model get their own from the client). */
    readonly maxTokens: number;
    readonly effort?: Effort;
    /** The hooks' wrapper (PreToolUse/PostToolUse) around each sub-agent tool too. */
    readonly wrapTool: (tool: AnyToolDefinition) => AnyToolDefinition;
    readonly readOnly: boolean;
    readonly now: () => number;
    readonly emit: (body: AgentEventBody) => void;
    readonly main: SessionAgent;
  },
): Omit<SubagentRunnerOptions, 'hasSteering' | 'turnsLeft' | 'onTurn'> {
  return {
    host: s.host,
    parentId: s.id,
    model: s.model,
    modelName: s.model.current,
    contextWindow: s.contextWindow,
    maxTokens: s.maxTokens,
    ...(s.effort ? { effort: s.effort } : {}),
    maxTurns: options.maxTurns ?? 50,
    readOnly: s.readOnly,
    now: s.now,
    emit: s.emit,
    agents: s.main.kinds,
    // A custom agent's own `model` gets a client with the session's fallbacks behind it.
    clientFor: (m) => sessionModelClient({ ...options, model: m }, s.now),
    ...(options.subagentModels ? { kindModels: options.subagentModels } : {}),
    wrapTool: s.wrapTool,
  };
}

/** `/compact`: as after a "prompt too long" error, the engine compacts now, whatever the cache's state. */
export async function compactNow(
  engine: ContextEngine,
  transcript: readonly AgentMessage[],
  now: number,
  append: (message: AgentMessage) => void,
): Promise<boolean> {
  const signal = new AbortController().signal;
  const { appended } = await engine.prepare({ transcript, now, overflow: true, signal });
  for (const message of appended) append(message);
  return appended.some((m) => m.role === 'summary');
}
