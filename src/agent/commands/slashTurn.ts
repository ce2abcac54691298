import * as fs from 'node:fs';
import type { AgentEvent } from '../events.ts';
import { memoryPaths } from '../memory/store.ts';
import { ModelRefError, parseModelRef } from '../model/providers/modelRef.ts';
import { resolveModelName } from '../model/switchable.ts';
import type { AgentSession, PromptOptions } from '../session/types.ts';
import { type CommandCatalog, discoverCommands } from './discover.ts';
import { parseSlash, resolveSlash } from './expand.ts';

// What a host (the CLI's `keel run`, the panel's input) does with a prompt that may be a slash
// command: send an expanded prompt, run a built-in on the session, or say why not. The same answer
// for both hosts, so a command works the same in the CLI and the IDE.

export type SlashTurn =
  | {
      readonly kind: 'send';
      readonly text: string;
      readonly options: Pick<PromptOptions, 'model' | 'allowedTools' | 'limitBy'>;
    }
  | {
      readonly kind: 'builtin';
      readonly action: 'model' | 'cost' | 'memory' | 'compact' | 'clear';
      /** `/model NAME` (aliases resolved); absent: show the current one. */
      readonly model?: string;
    }
  | { readonly kind: 'error'; readonly message: string };

/** `undefined`: not a slash command, send the text as it is. */
export function slashTurn(
  text: string,
  workspaceRoot: string,
  catalog?: CommandCatalog,
): SlashTurn | undefined {
  const parsed = parseSlash(text);
  if (!parsed) return undefined;
  const action = resolveSlash(parsed, catalog ?? discoverCommands({ workspaceRoot }));
  switch (action.kind) {
    case 'error':
      return action;
    case 'prompt': {
      const model = resolveModelName(action.model);
      return {
        kind: 'send',
        text: action.text,
        options: {
          ...(model ? { model } : {}),
          ...(action.allowedTools
            ? {
                allowedTools: action.allowedTools,
                limitBy: `the /${action.command} command (${action.file})`,
              }
            : {}),
        },
      };
    }
    case 'model': {
      const model = resolveModelName(action.model);
      // `/model provider:model`: an unknown provider is said now, not at the next model call.
      try {
        if (model) parseModelRef(model);
      } catch (error) {
        if (error instanceof ModelRefError) return { kind: 'error', message: `/model: ${error.message}` };
        throw error;
      }
      return { kind: 'builtin', action: 'model', ...(model ? { model } : {}) };
    }
    default:
      return { kind: 'builtin', action: action.kind };
  }
}

/** `/cost`: the session's spend and tokens, from its model_call records (sub-agents' included). */
export function costSummary(sessionId: string, events: readonly AgentEvent[]): string {
  let cost = 0;
  let calls = 0;
  let input = 0;
  let output = 0;
  let cacheRead = 0;
  for (const e of events) {
    if (e.type !== 'model_call') continue;
    calls++;
    cost += e.record.cost_usd;
    input += e.record.input + e.record.cache_write;
    output += e.record.output;
    cacheRead += e.record.cache_read;
  }
  return `Session ${sessionId}: $${cost.toFixed(4)} over ${calls} model call(s) — ${input} input, ${cacheRead} cache-read, ${output} output tokens`;
}

/**
 * `/model`, `/cost`, `/memory`, `/compact` on a session: what to show the user (`/clear` is the host's:
 * a new session). `resumeHint` is how this host continues the session, if it says so.
 */
export async function runSlashBuiltin(
  turn: Extract<SlashTurn, { kind: 'builtin' }>,
  session: AgentSession,
  stateDir: string,
  resumeHint = '',
): Promise<string> {
  switch (turn.action) {
    case 'model':
      if (!turn.model) return `Model for session ${session.id}: ${session.model}`;
      session.setModel(turn.model);
      return `Model for session ${session.id}: ${turn.model}${resumeHint}`;
    case 'cost':
      return costSummary(session.id, session.eventsSince(0));
    case 'memory': {
      const paths = memoryPaths(stateDir);
      const parts: string[] = [];
      for (const [label, file] of [
        ['workspace', paths.workspace],
        ['user', paths.user],
      ] as const) {
        if (!file) continue;
        const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : '';
        parts.push(`# ${label} memory: ${file}\n${text || '(empty)'}`);
      }
      parts.push('Edit these files directly; `keel memory rollback` undoes the last change Keel made.');
      return parts.join('\n\n');
    }
    case 'compact':
      if (session.running) return 'A run is in progress: /compact waits until it ends.';
      return (await session.compact())
        ? `Session ${session.id} compacted${resumeHint}`
        : 'Nothing to compact yet.';
    case 'clear':
      return 'A new session starts with the next prompt.';
  }
}
