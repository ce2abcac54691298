import { createContextEngine, type ContextEngine } from '../context/engine.ts';
import type { ContextEngineOptions } from '../context/engineTypes.ts';
import { nodeRuntimeFacts } from '../context/runtimeProbe.ts';
import type { AgentEventBody } from '../events.ts';
import type { SessionHooks } from '../hooks/sessionHooks.ts';
import { askText, replyText, SUMMARY_SYSTEM } from '../model/ask.ts';
import type { ModelClient } from '../model/client.ts';
import { loadProjectRules, withScopedRules } from '../projectRules/index.ts';
import type { PathGuard } from '../safety/paths/pathGuard.ts';
import type { PrefixRecord } from './log.ts';
import { withPrefixLog } from './prefixLog.ts';
import type { AgentSessionOptions } from './types.ts';

// A session's context engine: the frozen prefix (tools, red lines, every always-on rules file,
// memory, skill index, MCP lines, the main agent's prompt) built once at session start (P1); every
// new prefix written to the session log; compaction with the PreCompact hooks first; path-scoped rules
// offered after the last breakpoint when the agent touches a matching file.

export interface SessionEngine {
  /** The engine itself (a Skill call asks it what is in context). */
  readonly engine: ContextEngine;
  /** What the loop and `/compact` use: prefixes logged, scoped rules added. */
  readonly logged: ContextEngine;
}

export function createSessionEngine(
  options: AgentSessionOptions,
  deps: Omit<ContextEngineOptions, 'rulesText' | 'summarize' | 'summarizeInContext'> & {
    readonly guard: PathGuard;
    readonly model: ModelClient;
    readonly hooks: Pick<SessionHooks, 'beforeCompact'>;
    readonly emit: (body: AgentEventBody) => void;
    readonly loggedPrefixHash: string | undefined;
    readonly writePrefix: (record: Omit<PrefixRecord, 'seq'>) => void;
    readonly now: () => number;
    readonly newReminderId: () => string;
  },
): SessionEngine {
  const { guard, model, hooks, emit, loggedPrefixHash, writePrefix, now, newReminderId, ...engineOptions } =
    deps;
  // Every rules file, read once now (P1); path-scoped ones come later as reminders (projectRules/).
  const rules = loadProjectRules({ guard, disabled: options.rulesDisabled ?? [] });
  for (const problem of rules.problems)
    emit({ type: 'notice', level: 'warn', text: `Rules file ${problem.rel}: ${problem.message}.` });
  const engine = createContextEngine({
    // The runtime layer and the restatement every 20 turns and on a task switch (context/antiDrift.ts).
    antiDrift: { runtime: nodeRuntimeFacts(engineOptions.workspaceRoot) },
    ...engineOptions,
    rulesText: rules.prefixText,
    summarize: hooks.beforeCompact((prompt, signal) =>
      askText(model, { system: SUMMARY_SYSTEM, prompt, maxTokens: 4096 }, signal),
    ),
    // The same conversation the agent's calls cache, the instruction at the end: read from cache.
    summarizeInContext: hooks.beforeCompact(async (request, signal) =>
      replyText(await model.stream({ ...request, maxTokens: 4096 }, signal)),
    ),
  });
  const prefixLogged = withPrefixLog(engine, loggedPrefixHash, (prefix) =>
    writePrefix({
      type: 'prefix',
      sessionId: engineOptions.sessionId ?? '',
      ts: now(),
      hash: prefix.prefixHash,
      system: prefix.system,
      tools: prefix.tools,
    }),
  );
  const logged = rules.scoped ? withScopedRules(prefixLogged, rules.scoped, newReminderId) : prefixLogged;
  return { engine, logged };
}
