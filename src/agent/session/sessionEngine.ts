import { createContextEngine, type ContextEngine } from '../context/engine.ts';
import type { ContextEngineOptions } from '../context/engineTypes.ts';
import { nodeRuntimeFacts } from '../context/runtimeProbe.ts';
import type { AgentEventBody } from '../events.ts';
import type { SessionHooks } from '../hooks/sessionHooks.ts';
import { askText, replyText, SUMMARY_SYSTEM } from '../model/ask.ts';
import type { ModelClient } from '../model/client.ts';
import type { Effort } from '../model/models.ts';
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
  /**
   * The engine of the session a reset continues into: the same frozen tools and system text, archives
   * and prefix records under the new id, its prefix logged again (in the new log).
   */
  continueAs(sessionId: string): SessionEngine;
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
    /**
     * The agent's calls' thinking level and output limit: an in-context summary sends the same thinking
     * parameters, since the API drops the cached messages of a request whose thinking differs.
     */
    readonly thinking?: () => { readonly effort?: Effort; readonly maxTokens: number };
  },
): SessionEngine {
  const {
    guard,
    model,
    hooks,
    emit,
    loggedPrefixHash,
    writePrefix,
    now,
    newReminderId,
    thinking,
    ...engineOptions
  } = deps;
  // Every rules file, read once now (P1); path-scoped ones come later as reminders (projectRules/).
  const rules = loadProjectRules({ guard, disabled: options.rulesDisabled ?? [] });
  for (const problem of rules.problems)
    emit({ type: 'notice', level: 'warn', text: `Rules file ${problem.rel}: ${problem.message}.` });
  const make = (sessionId: string | undefined, loggedHash: string | undefined, systemText?: string) => {
    const engine = createContextEngine({
      // The runtime layer and the restatement every 20 turns and on a task switch (context/antiDrift.ts).
      antiDrift: { runtime: nodeRuntimeFacts(engineOptions.workspaceRoot) },
      ...engineOptions,
      ...(sessionId !== undefined ? { sessionId } : {}),
      ...(systemText !== undefined ? { systemText } : {}),
      rulesText: rules.prefixText,
      summarize: hooks.beforeCompact((prompt, signal) =>
        askText(model, { system: SUMMARY_SYSTEM, prompt, maxTokens: 4096 }, signal),
      ),
      // The same conversation the agent's calls cache, the instruction at the end: read from cache.
      summarizeInContext: hooks.beforeCompact(async (request, signal) => {
        const asAgent = thinking?.();
        const same = asAgent?.effort ? { effort: asAgent.effort, maxTokens: asAgent.maxTokens } : {};
        return replyText(await model.stream({ ...request, maxTokens: 4096, ...same }, signal));
      }),
    });
    const prefixLogged = withPrefixLog(engine, loggedHash, (prefix) =>
      writePrefix({
        type: 'prefix',
        sessionId: sessionId ?? '',
        ts: now(),
        hash: prefix.prefixHash,
        system: prefix.system,
        tools: prefix.tools,
      }),
    );
    const logged = rules.scoped ? withScopedRules(prefixLogged, rules.scoped, newReminderId) : prefixLogged;
    const built: SessionEngine = {
      engine,
      logged,
      // The very system text this engine froze (not the rules files read again): the same bytes (P1).
      continueAs: (nextId) => make(nextId, undefined, engine.systemText),
    };
    return built;
  };
  return make(engineOptions.sessionId, loggedPrefixHash);
}

/** An engine that is always the one `get` returns now (a reset swaps the session's engine mid-run). */
export function currentEngine(get: () => ContextEngine): ContextEngine {
  return {
    prepare: (args) => get().prepare(args),
    afterTools: (transcript) => get().afterTools(transcript),
    skillInContext: (name) => get().skillInContext(name),
    get systemText() {
      return get().systemText;
    },
    get prefixHash() {
      return get().prefixHash;
    },
  };
}
