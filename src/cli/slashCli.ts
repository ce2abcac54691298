import * as fs from 'node:fs';
import * as path from 'node:path';
import { discoverAgents } from '../agent/agents/discover.ts';
import { planTodos, readPlanFile, startPlanPrompt } from '../agent/agents/plan.ts';
import { discoverCommands } from '../agent/commands/discover.ts';
import { parseSlash, resolveSlash } from '../agent/commands/expand.ts';
import type { TodoItem } from '../agent/events.ts';
import { memoryPaths } from '../agent/memory/store.ts';
import { resolveModelName } from '../agent/model/switchable.ts';
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
  const parsed = parseSlash(prompt);
  if (!parsed) return { kind: 'prompt', prompt, options: {}, ...withAgent };
  const action = resolveSlash(parsed, discoverCommands({ workspaceRoot: workspace }));
  switch (action.kind) {
    case 'error':
      throw new UsageError(action.message);
    case 'prompt': {
      const model = resolveModelName(action.model);
      const options: PromptOptions = {
        ...(model ? { model } : {}),
        ...(action.allowedTools
          ? { allowedTools: action.allowedTools, limitBy: `the /${action.command} command (${action.file})` }
          : {}),
      };
      return { kind: 'prompt', prompt: action.text, options, ...withAgent };
    }
    case 'clear':
      return {
        kind: 'done',
        message:
          'keel: /clear: every `keel run` without --resume already starts a new session (the old one stays in .keel/sessions/).',
      };
    case 'model': {
      const model = resolveModelName(action.model);
      return { kind: 'session', action: 'model', ...(model ? { model } : {}) };
    }
    default:
      return { kind: 'session', action: action.kind };
  }
}

/** `/model`, `/cost`, `/memory`, `/compact` on the (usually resumed) session. */
export async function sessionAction(
  start: Extract<RunStart, { kind: 'session' }>,
  session: AgentSession,
  stateDir: string,
  out: (text: string) => void,
): Promise<void> {
  const resume = `keel run --resume ${session.id} PROMPT`;
  switch (start.action) {
    case 'model':
      if (start.model) {
        session.setModel(start.model);
        out(`Model for session ${session.id}: ${start.model} (continue with: ${resume})\n`);
      } else out(`Model for session ${session.id}: ${session.model}\n`);
      return;
    case 'cost': {
      let cost = 0;
      let calls = 0;
      let input = 0;
      let output = 0;
      let cacheRead = 0;
      for (const e of session.eventsSince(0)) {
        if (e.type !== 'model_call') continue;
        calls++;
        cost += e.record.cost_usd;
        input += e.record.input + e.record.cache_write;
        output += e.record.output;
        cacheRead += e.record.cache_read;
      }
      out(
        `Session ${session.id}: $${cost.toFixed(4)} over ${calls} model call(s) — ${input} input, ${cacheRead} cache-read, ${output} output tokens\n`,
      );
      return;
    }
    case 'memory': {
      const paths = memoryPaths(stateDir);
      for (const [label, file] of [
        ['workspace', paths.workspace],
        ['user', paths.user],
      ] as const) {
        if (!file) continue;
        const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : '';
        out(`# ${label} memory: ${file}\n${text || '(empty)'}\n\n`);
      }
      out('Edit these files directly; `keel memory rollback` undoes the last change Keel made.\n');
      return;
    }
    case 'compact': {
      const done = await session.compact();
      out(
        done ? `Session ${session.id} compacted (continue with: ${resume})\n` : 'Nothing to compact yet.\n',
      );
      return;
    }
  }
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
