import type { TodoItem } from '../agent/events.ts';
import { planTodos, readPlanFile, startPlanPrompt } from '../agent/agents/plan.ts';
import { runSlashBuiltin, slashTurn } from '../agent/commands/slashTurn.ts';
import * as vscode from 'vscode';
import type { ModelCallRecord } from '../agent/events.ts';
import { parseModelRef } from '../agent/model/providers/modelRef.ts';
import type { ModelProvider } from '../agent/model/providers/types.ts';
import type { AgentSession, RunOutcome } from '../agent/session/types.ts';
import { closeInterruptedRun, holdSession } from './interruptedRun.ts';
import { usageFrom } from './usage.ts';
import type {
  ControllerEvent,
  SessionController,
  SessionControllerOptions,
} from './sessionControllerTypes.ts';

// Owns the current AgentSession: creates it lazily (the core is loaded on first use, not at
// activation), forwards its events to subscribers (chat view, status bar), switches sessions
// (new chat, reopen from history) and relays review rejections to the agent.

export type {
  ControllerEvent,
  SessionController,
  SessionControllerOptions,
  SessionListItem,
  SubmitResult,
} from './sessionControllerTypes.ts';
export type { Usage } from './usage.ts';

const LAST_SESSION_KEY = 'keel.lastSessionId';

const DEFAULT_WINDOW = 200_000;

export function createSessionController(options: SessionControllerOptions): SessionController {
  const emitter = new vscode.EventEmitter<ControllerEvent>();
  let session: AgentSession | undefined;
  let creating: Promise<AgentSession> | undefined;
  let subscription: { dispose(): void } | undefined;
  let records: ModelCallRecord[] = [];
  let lastRun: Promise<RunOutcome> | undefined;
  // Marks the current session's log as held by this extension host (see interruptedRun.ts).
  let release: (() => void) | undefined;
  // Notes (e.g. review rejections) that arrive before any session exists wait here.
  const pendingNotes: { text: string; source: string }[] = [];
  let runAbort: AbortController | undefined;
  // The next new session's main agent (mode picker) and first todo list (a started plan).
  let mode: string | undefined;
  let seedTodos: TodoItem[] | undefined;
  const abortRun = (reason: string) => {
    const current = runAbort;
    runAbort = undefined;
    current?.abort(new Error(reason));
  };

  // No API key: the chat answers with one of VS Code's language models (`vscode:vendor/id`).
  let lmModel: string | undefined;
  let lmProvider: ModelProvider | undefined;
  const vscodeModels = async (): Promise<ModelProvider> => {
    lmProvider ??= (await import('./lm/vscodeLmProvider.ts')).createVscodeLmProvider();
    return lmProvider;
  };
  /** Only a bare or `anthropic:` model needs Keel's key; others have their own (or VS Code's). */
  const needsAnthropicKey = (model: string) => {
    try {
      return parseModelRef(model).provider === 'anthropic';
    } catch {
      return false; // a bad name is reported when the session starts
    }
  };

  const windowSetting = () => options.settings().contextWindow ?? DEFAULT_WINDOW;

  const attach = (next: AgentSession) => {
    subscription?.dispose();
    release?.();
    session = next;
    try {
      release = holdSession(options.host().stateDir, next.id);
    } catch {
      release = undefined;
    }
    void options.memento?.update(LAST_SESSION_KEY, next.id);
    records = next.eventsSince(0).flatMap((e) => (e.type === 'model_call' ? [e.record] : []));
    for (const note of pendingNotes.splice(0)) next.notify(note.text, note.source);
    subscription = next.subscribe((event) => {
      emitter.fire({ type: 'event', event });
      // Nothing of an ended run may keep waiting (a proposal left open would block nobody, but
      // would still ask the user).
      if (event.type === 'agent_end') abortRun(`run ended: ${event.status}`);
      if (event.type === 'model_call') {
        records.push(event.record);
        emitter.fire({ type: 'usage', usage: usageFrom(records, windowSetting()) });
      }
    });
    emitter.fire({ type: 'switched' });
    emitter.fire({ type: 'usage', usage: usageFrom(records, windowSetting()) });
  };

  const create = async (resumeId?: string): Promise<AgentSession> => {
    // Loaded on demand: activation stays cheap, the core (SDK, tools) is evaluated on first use.
    const { createAgentSession } = await import('../agent/session/session.ts');
    await options.beforeCreate?.();
    const settings = options.settings();
    const host = options.host();
    const apiKey = await options.apiKey();
    const trusted = vscode.workspace.isTrusted;
    if (resumeId) {
      // A run cut off by a reload or crash is recorded as ended before the session is reopened.
      const closed = closeInterruptedRun(host.storage, host.stateDir, resumeId, Date.now());
      if (closed)
        options.log('info', `session ${resumeId}: run ${closed} was interrupted; recorded as aborted`);
    }
    const created = createAgentSession({
      host,
      model: lmModel ?? settings.model,
      providers: { hostProviders: { vscode: await vscodeModels() } },
      effort: settings.effort,
      fallbackModels: settings.fallbackModels,
      ...(apiKey ? { apiKey } : {}),
      ...(settings.baseUrl ? { baseURL: settings.baseUrl } : {}),
      ...(settings.maxTurns ? { maxTurns: settings.maxTurns } : {}),
      ...(settings.contextWindow ? { contextWindow: settings.contextWindow } : {}),
      ...(resumeId ? { resumeId } : {}),
      ...(settings.checkpointBudgetMB
        ? { checkpoints: { budgetBytes: settings.checkpointBudgetMB * 1024 * 1024 } }
        : {}),
      rulesDisabled: settings.rulesDisabled,
      readOnly: !trusted,
      ...(mode && !resumeId ? { agentName: mode } : {}),
      ...(seedTodos && !resumeId ? { initialTodos: seedTodos } : {}),
      ...(options.bundledSkillsDir ? { bundledSkillsDir: options.bundledSkillsDir } : {}),
    });
    await options.telemetry?.attach(created, settings.model);
    options.log(
      'info',
      `session ${created.id} ${resumeId ? 'reopened' : 'started'} (model ${lmModel ?? settings.model}${trusted ? '' : ', read-only: untrusted workspace'})`,
    );
    return created;
  };

  let warming: Promise<void> | undefined;
  // A reopened window brings back its last session when the panel first asks (`ready`); a prompt
  // sent meanwhile waits for that, so it goes into the restored chat instead of a new session that
  // the restore would then replace (the prompt, its run and its answer thrown away with it).
  let restoring: Promise<boolean> | undefined;

  const controller: SessionController = {
    onDidChange: emitter.event,
    warmUp() {
      warming ??= (async () => {
        const started = performance.now();
        await import('../agent/session/session.ts');
        const { warmUpModelCalls } = await import('../agent/model/warmUp.ts');
        await warmUpModelCalls();
        options.log('debug', `core warmed up in ${Math.round(performance.now() - started)} ms`);
      })().catch((error: unknown) => options.log('debug', `warm-up failed: ${String(error)}`));
      return warming;
    },
    get current() {
      return session;
    },
    get usage() {
      return usageFrom(records, windowSetting());
    },
    get model() {
      return options.settings().model;
    },
    get contextWindow() {
      return usageFrom(records, windowSetting()).contextWindow;
    },
    async ensure() {
      if (restoring) await restoring;
      if (session) return session;
      creating ??= create().then(
        (s) => {
          attach(s);
          creating = undefined;
          return s;
        },
        (error: unknown) => {
          creating = undefined;
          throw error;
        },
      );
      return creating;
    },
    async submit(text, submitOptions) {
      const apiKey = await options.apiKey();
      const settings = options.settings();
      let notice: string | undefined;
      if (apiKey || settings.baseUrl || !needsAnthropicKey(settings.model)) lmModel = undefined;
      else if (!session) {
        // No key of Keel's own: a model the user has in VS Code answers (their Copilot plan's, a key
        // added to VS Code, another extension's provider). Decided per new session.
        const { defaultLmModel } = await import('./lm/vscodeLmProvider.ts');
        const found = await defaultLmModel();
        if (!found)
          return {
            ok: false,
            code: 'NO_API_KEY',
            error: 'No Anthropic API key is set, and VS Code offers no language model.',
            suggestion:
              'Run "Keel: Set API Key" (the key is kept in VS Code\'s secret storage), or add a model to VS Code (GitHub Copilot, or "Chat: Manage Language Models").',
          };
        if (found !== lmModel)
          notice = `No Anthropic API key is set: ${found} (one of VS Code's language models) answers this chat. "Keel: Set API Key" or the keel.model setting changes that; /model switches this chat.`;
        lmModel = found;
      }
      // `/name args`: a prompt file expands here (as in `keel run`); a built-in acts on the session.
      const turn = slashTurn(text, options.host().workspace.roots[0] ?? '');
      if (turn?.kind === 'error') return { ok: false, code: 'UNKNOWN_COMMAND', error: turn.message };
      if (turn?.kind === 'builtin' && turn.action === 'clear') {
        controller.newChat();
        return {
          ok: true,
          info: 'New chat: the next prompt starts a new session (the old one stays in the history).',
        };
      }
      let s: AgentSession;
      try {
        s = await controller.ensure();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        options.log('error', `could not start a session: ${message}`);
        return {
          ok: false,
          code: 'SESSION_START_FAILED',
          error: message,
          suggestion: 'Check the Keel settings (model, base URL, context window).',
        };
      }
      if (turn?.kind === 'builtin')
        return { ok: true, info: await runSlashBuiltin(turn, s, options.host().stateDir) };
      // @problems / @changes: what the editor knows now, as reminders delivered with this message.
      // Loaded on first submit, like the session itself: activation stays small.
      const { fileMentions, mentionReminders } = await import('./contextMentions.ts');
      const mentions = fileMentions(submitOptions?.mentions ?? [], options.host().workspace.roots);
      for (const note of await mentionReminders(text, mentions, options.host())) s.notify(note, 'mention');
      const outcome = s.prompt(turn?.kind === 'send' ? turn.text : text, {
        ...(turn?.kind === 'send' ? turn.options : {}),
        ...(mentions.length ? { mentions } : {}),
        ...(submitOptions?.idempotencyKey ? { idempotencyKey: submitOptions.idempotencyKey } : {}),
      });
      lastRun = outcome;
      outcome.then(
        (o) => {
          options.log('info', `run ended: ${o.status}${o.error ? ` (${o.error})` : ''}`);
          // Durable facts of a run that did real work go to MEMORY.md (shown as a memory card).
          if (o.status === 'finished') void s.consolidateMemory();
        },
        (error: unknown) => options.log('error', `run failed: ${String(error)}`),
      );
      return { ok: true, outcome, ...(notice ? { notice } : {}) };
    },
    stop() {
      session?.abort('stopped by the user');
      abortRun('stopped by the user');
    },
    stopJob(id) {
      void session?.stopJob(id);
    },
    get runSignal() {
      runAbort ??= new AbortController();
      return runAbort.signal;
    },
    get mode() {
      return mode;
    },
    setMode(next) {
      if (next === mode) return;
      mode = next;
      controller.newChat();
    },
    async startPlan(text) {
      const { task, steps } = readPlanFile(text);
      if (steps.length === 0)
        return {
          ok: false,
          code: 'NO_PLAN_STEPS',
          error: 'The plan has no steps (a numbered list under "## Plan").',
        };
      mode = undefined;
      controller.newChat();
      seedTodos = planTodos(steps);
      try {
        return await controller.submit(startPlanPrompt('the plan in the panel', task, steps));
      } finally {
        seedTodos = undefined;
      }
    },
    newChat() {
      abortRun('new chat');
      subscription?.dispose();
      subscription = undefined;
      release?.();
      release = undefined;
      session?.dispose();
      session = undefined;
      records = [];
      void options.memento?.update(LAST_SESSION_KEY, undefined);
      emitter.fire({ type: 'switched' });
      emitter.fire({ type: 'usage', usage: usageFrom(records, windowSetting()) });
    },
    async open(id) {
      if (session?.id === id) return;
      const next = await create(id);
      abortRun('another session was opened');
      session?.dispose();
      attach(next);
    },
    restore(preferred) {
      // One at a time (two panels, or a reloaded one, can both ask), and never over a session that
      // exists or is being made for a prompt: that one is the user's.
      restoring ??= (async () => {
        if (session || creating) return false;
        const candidates = [preferred, options.memento?.get<string>(LAST_SESSION_KEY)].filter(
          (id): id is string => typeof id === 'string' && id.length > 0,
        );
        const known = new Set((await controller.list()).map((s) => s.id));
        const id = candidates.find((c) => known.has(c));
        if (!id || session || creating) return false;
        try {
          await controller.open(id);
          return true;
        } catch (error) {
          options.log('warn', `could not reopen session ${id}: ${String(error)}`);
          return false;
        }
      })().finally(() => {
        restoring = undefined;
      });
      return restoring;
    },
    async list() {
      const { listSessions } = await import('../agent/session/log.ts');
      let stateDir: string;
      try {
        stateDir = options.host().stateDir;
      } catch {
        return [];
      }
      // A log Keel did not create here cannot be resumed: not offered in the history list.
      return listSessions(stateDir, { log: (m) => options.log('warn', m) })
        .filter((s) => !s.foreign)
        .map((s) => ({
          id: s.id,
          title: s.title,
          updatedAt: s.updatedAt,
          messageCount: s.messageCount,
        }));
    },
    notify(text, source) {
      if (session) session.notify(text, source);
      else pendingNotes.push({ text, source });
    },
    async shutdown(timeoutMs) {
      const s = session;
      const run = lastRun;
      abortRun('VS Code is closing or reloading the window');
      if (!s?.running || !run) {
        await options.telemetry?.flush();
        return;
      }
      s.abort('VS Code is closing or reloading the window');
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        run.then(
          () => undefined,
          () => undefined,
        ),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
      await options.telemetry?.flush();
    },
    dispose() {
      abortRun('Keel is shutting down');
      subscription?.dispose();
      release?.();
      release = undefined;
      session?.dispose();
      emitter.dispose();
    },
  };
  return controller;
}
