import * as path from 'node:path';
import {
  type AgentCatalog,
  type AgentDefinition,
  agentPromptSection,
  discoverAgents,
} from '../agents/discover.ts';
import { planFileText, planSteps } from '../agents/plan.ts';
import type { AgentEvent, AgentEventBody } from '../events.ts';
import type { Host } from '../host.ts';
import type { ModelClient } from '../model/client.ts';
import { createSwitchableModelClient, type SwitchableModelClient } from '../model/switchable.ts';
import type { AnyToolDefinition } from '../tools/protocol.ts';
import { limitNames, type ToolLimit } from './toolGate.ts';
import { SessionConfigError } from './sessionStart.ts';
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
): SessionAgent {
  const catalog =
    options.agents ?? discoverAgents({ workspaceRoot: host.workspace.roots[0] ?? '', ...options.agentDirs });
  if (!options.agents) for (const p of catalog.problems) warn(`Agent file ${p.file}: ${p.message}`);
  const kinds = catalog.agents.filter((a) => a.source !== 'builtin');
  if (!options.agentName) return { catalog, kinds };
  const agent = catalog.agents.find((a) => a.name === options.agentName);
  if (!agent) {
    const names = catalog.agents.map((a) => a.name).join(', ');
    throw new SessionConfigError(
      `No agent named "${options.agentName}" (found: ${names}); \`keel agents\` lists them.`,
    );
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

/** The main agent's tool set: narrowed by its `tools` list (an agent file never adds a tool). */
export function agentTools(
  tools: readonly AnyToolDefinition[],
  limit: ToolLimit | undefined,
): AnyToolDefinition[] {
  if (!limit) return [...tools];
  const names = limitNames(limit);
  return tools.filter((t) => names.has(t.name));
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
