import * as fs from 'node:fs';
import * as path from 'node:path';
import { discoverAgents } from '../agent/agents/discover.ts';
import { planTodos, readPlanFile, startPlanPrompt } from '../agent/agents/plan.ts';
import { discoverCommands } from '../agent/commands/discover.ts';
import { runSlashBuiltin, slashTurn } from '../agent/commands/slashTurn.ts';
import type { TodoItem } from '../agent/events.ts';
import type { AgentSession, PromptOptions } from '../agent/session/types.ts';
import type { ListingArgs, RunArgs } from './argSchemas.ts';
import { UsageError } from './args.ts';

// The CLI side of slash commands, custom agents and plan mode: what `keel run` sends (or does
// instead of sending), and the `keel commands` / `keel agents` listings.

/** What `keel run` does with its PROMPT and flags. */
export type RunStart =
  | {
      readonly kind: 'prompt';
      readonly prompt: string;
      readonly options: PromptOptions;
      readonly agentName?: string;
      readonly initialTodos?: readonly TodoItem[];
    }
  /** A built-in that acts on the session instead of sending a prompt. */
  | {
      readonly kind: 'session';
      readonly action: 'model' | 'cost' | 'memory' | 'compact';
      readonly model?: string;
    }
  | { readonly kind: 'done'; readonly message: string };

/** `--from-plan FILE`: the plan's steps become the first todo list and the prompt names them. */
function fromPlan(file: string, extra: string): { prompt: string; todos: TodoItem[] } {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (error) {
    throw new UsageError(`--from-plan: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`);
  }
  const { task, steps } = readPlanFile(text);
  if (steps.length === 0)
    throw new UsageError(`--from-plan: ${file} has no steps (a "## Plan" section with a numbered list)`);
  const prompt = startPlanPrompt(path.basename(abs), task, steps);
  return {
    prompt: extra.trim() ? `${prompt}\n\nThe user adds: ${extra.trim()}` : prompt,
    todos: planTodos(steps),
  };
}

export function prepareRun(args: RunArgs, workspace: string, prompt: string): RunStart {
  const agentName = args.agent;
  const withAgent = agentName ? { agentName } : {};
  if (args.fromPlan) {
    const plan = fromPlan(args.fromPlan, args.prompt);
    return { kind: 'prompt', prompt: plan.prompt, options: {}, ...withAgent, initialTodos: plan.todos };
  }
  const turn = slashTurn(prompt, workspace);
  if (!turn) return { kind: 'prompt', prompt, options: {}, ...withAgent };
  if (turn.kind === 'error') throw new UsageError(turn.message);
  if (turn.kind === 'send') return { kind: 'prompt', prompt: turn.text, options: turn.options, ...withAgent };
  if (turn.action === 'clear')
    return {
      kind: 'done',
      message:
        'keel: /clear: every `keel run` without --resume already starts a new session (the old one stays in .keel/sessions/).',
    };
  return { kind: 'session', action: turn.action, ...(turn.model ? { model: turn.model } : {}) };
}

/** `/model`, `/cost`, `/memory`, `/compact` on the (usually resumed) session. */
export async function sessionAction(
  start: Extract<RunStart, { kind: 'session' }>,
  session: AgentSession,
  stateDir: string,
  out: (text: string) => void,
): Promise<void> {
  const turn = {
    kind: 'builtin',
    action: start.action,
    ...(start.model ? { model: start.model } : {}),
  } as const;
  out(
    `${await runSlashBuiltin(turn, session, stateDir, ` (continue with: keel run --resume ${session.id} PROMPT)`)}\n`,
  );
}

/** `keel commands` / `keel agents`: name, where it comes from, what it does; problems on stderr. */
export function listingCommand(
  args: ListingArgs,
  workspace: string,
  out: (t: string) => void,
  err: (t: string) => void,
): number {
  const found =
    args.command === 'commands'
      ? discoverCommands({ workspaceRoot: workspace })
      : discoverAgents({ workspaceRoot: workspace });
  const rows =
    'commands' in found
      ? found.commands.map((c) => ({
          name: `/${c.name}`,
          file: c.shown,
          description: c.description,
          ...(c.argumentHint ? { argumentHint: c.argumentHint } : {}),
          ...(c.allowedTools ? { allowedTools: c.allowedTools } : {}),
          ...(c.model ? { model: c.model } : {}),
        }))
      : found.agents.map((a) => ({
          name: a.name,
          file: a.shown,
          description: a.description,
          ...(a.tools ? { tools: a.tools } : {}),
          ...(a.model ? { model: a.model } : {}),
        }));
  if (args.json) out(`${JSON.stringify({ [args.command]: rows, problems: found.problems })}\n`);
  else {
    if (rows.length === 0) out(`No ${args.command} found.\n`);
    const width = Math.max(0, ...rows.map((r) => r.name.length));
    for (const r of rows) out(`${r.name.padEnd(width)}  ${r.file}  ${r.description}\n`);
  }
  for (const p of found.problems) err(`keel: ${p.file}: ${p.message}\n`);
  return 0;
}
