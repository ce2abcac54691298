import type { CheckpointRecorder } from '../checkpoints/recorder.ts';
import type { AgentEventBody, TodoItem } from '../events.ts';
import { admitUserImages, type ImageBudget } from '../context/imageBudget.ts';
import type { Host } from '../host.ts';
import { type SessionHooks, blockedPrompt } from '../hooks/sessionHooks.ts';
import { backgroundWait, jobReminders } from '../jobs/backgroundWait.ts';
import type { JobManager } from '../jobs/manager.ts';
import { type LoopDeps, runLoop } from '../loop.ts';
import type { AgentMessage, ReminderMessage, UserMessage } from '../messages.ts';
import type { Effort } from '../model/models.ts';
import type { SwitchableModelClient } from '../model/switchable.ts';
import type { LoopDetectorControls } from '../safety/guards/loopDetector.ts';
import type { ToolContext } from '../tools/protocol.ts';
import { finishPlan, type SessionAgent, turnLimit } from './sessionAgent.ts';
import { newUserMessage } from './sessionStart.ts';
import type { ToolLimit } from './toolGate.ts';
import type { AgentSession, AgentSessionOptions, PromptOptions, RunOutcome } from './types.ts';

// A session's runs, kept out of session.ts: a prompt starts one (its agent_start, the hooks' gate, the
// loop, its agent_end) or, while one runs, waits as a steering message (P7); Abort ends it. The state
// only a run changes lives here: its id, its abort controller, its turn count and tool limit.

export interface SessionRunDeps {
  readonly options: AgentSessionOptions;
  readonly host: Host;
  /** The session id now (a reset moves it on). */
  readonly id: () => string;
  readonly main: SessionAgent;
  readonly model: SwitchableModelClient;
  readonly engine: LoopDeps['engine'];
  readonly registry: LoopDeps['registry'];
  readonly hooks: SessionHooks;
  readonly recorder: CheckpointRecorder | undefined;
  readonly loopDetector: Pick<LoopDetectorControls, 'reset'>;
  readonly reset: NonNullable<LoopDeps['reset']>;
  readonly jobs: JobManager;
  readonly transcript: AgentMessage[];
  readonly todos: () => readonly TodoItem[];
  /** A plan being carried out: its todo list is shown with the first prompt. */
  readonly seedTodos: boolean;
  readonly effort: () => Effort | undefined;
  readonly toolContext: (toolUseId: string, signal: AbortSignal) => ToolContext;
  /** The API's per-request image limits, which a user's attachments must fit too. */
  readonly images: ImageBudget;
  readonly append: (message: AgentMessage) => void;
  readonly emit: (body: AgentEventBody) => void;
  readonly newId: (prefix: string) => string;
  readonly now: () => number;
  readonly approvalWaitMs: () => number;
  readonly contextWindow: number;
  readonly maxTokens: number;
}

export interface SessionRuns extends Pick<AgentSession, 'prompt' | 'abort' | 'notify'> {
  readonly running: boolean;
  readonly runId: string | undefined;
  /** This run's tool limit (a slash command's `allowed-tools`). */
  readonly limit: ToolLimit | undefined;
  /** Turns the run's whole tree took (the parent's and its sub-agents'). */
  readonly treeTurns: number;
  countTurn(): void;
  hasSteering(): boolean;
  /** Aborts the run as the session is disposed. */
  dispose(): void;
}

export function createSessionRuns(deps: SessionRunDeps): SessionRuns {
  const { options, host, main, model, hooks, recorder, jobs, transcript, append, emit, newId, now } = deps;
  let seedTodos = deps.seedTodos;
  let limitOfRun: ToolLimit | undefined;
  let treeTurns = 0;
  let runId: string | undefined;
  let controller: AbortController | undefined;
  let current: Promise<RunOutcome> | undefined;
  const steering: AgentMessage[] = [];
  const byKey = new Map<string, Promise<RunOutcome>>();

  const userMessage = (text: string, opts: PromptOptions | undefined, isSteering: boolean): UserMessage => {
    const admitted = admitUserImages(deps.images, text, opts?.images);
    if (admitted.refused)
      emit({ type: 'notice', level: 'warn', text: `Images not sent: ${admitted.refused}.` });
    return newUserMessage({
      id: newId('usr'),
      ts: now(),
      text: admitted.text,
      steering: isSteering,
      mentions: opts?.mentions,
      images: admitted.images,
    });
  };

  const startRun = async (message: UserMessage, opts?: PromptOptions): Promise<RunOutcome> => {
    controller = new AbortController();
    // A prompt file's `model` and `allowed-tools` hold for this run only.
    model.setTurnModel(opts?.model);
    limitOfRun = turnLimit(opts);
    const signal = controller.signal;
    // Each user prompt is a fresh start for loop detection: a stop in one run must not block the next.
    deps.loopDetector.reset();
    runId = newId('run');
    treeTurns = 0;
    const promptNumber = recorder?.beginPrompt(message.text);
    emit({
      type: 'agent_start',
      runId,
      prompt: message.text,
      ...(promptNumber !== undefined ? { promptNumber } : {}),
    });
    emit({ type: 'user_message', message, queued: false });
    if (seedTodos) emit({ type: 'todo', todos: deps.todos() });
    seedTodos = false;
    let outcome: RunOutcome;
    try {
      // Hooks first: a blocked prompt never enters the transcript; their context goes around it.
      const gate = await hooks.beforePrompt(message.text, signal);
      for (const m of [...gate.before, ...(gate.blocked === undefined ? [message] : []), ...gate.after])
        append(m);
      const loop = gate.blocked === undefined ? runLoop : blockedPrompt(gate.blocked);
      const effort = deps.effort();
      outcome = await loop({
        model,
        engine: deps.engine,
        registry: deps.registry,
        append,
        emit: (body) => {
          if (body.type === 'turn_start') treeTurns++;
          emit(body);
        },
        newId,
        now,
        approvalWaitMs: deps.approvalWaitMs,
        signal,
        contextWindow: deps.contextWindow,
        transcript: () => transcript,
        toolContext: (toolUseId) => deps.toolContext(toolUseId, signal),
        awaitBackground: backgroundWait(jobs, { waitMs: options.jobWaitMs ?? 0, now, emit, signal }),
        takeSteering: () => {
          const drained = [...steering.splice(0), ...jobReminders(jobs, () => newId('rem'), now())];
          for (const m of drained)
            if (m.role === 'user') emit({ type: 'user_message', message: m, queued: false });
          return drained;
        },
        hasSteering: () => steering.some((m) => m.role === 'user'),
        beforeStop: () => hooks.beforeStop(signal),
        reset: deps.reset,
        maxTurns: options.maxTurns ?? 50,
        turnsUsed: () => treeTurns,
        maxTokens: deps.maxTokens,
        ...(effort ? { effort } : {}),
        ...(options.readConcurrency !== undefined ? { readConcurrency: options.readConcurrency } : {}),
      });
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      emit({ type: 'error', code: 'internal', message: text });
      outcome = { status: 'failed', finalText: '', error: text };
    }
    if (outcome.status === 'stopped' && outcome.error)
      emit({ type: 'notice', level: 'error', text: outcome.error });
    model.setTurnModel(undefined);
    limitOfRun = undefined;
    if (main.agent?.name === 'plan' && outcome.status === 'finished')
      finishPlan(host, deps.id(), message.text, outcome.finalText, emit);
    emit({
      type: 'agent_end',
      runId: runId ?? '',
      status: outcome.status,
      finalText: outcome.finalText,
      ...(outcome.error ? { error: outcome.error } : {}),
    });
    controller = undefined;
    runId = undefined;
    return outcome;
  };

  return {
    get running() {
      return current !== undefined;
    },
    get runId() {
      return runId;
    },
    get limit() {
      return limitOfRun;
    },
    get treeTurns() {
      return treeTurns;
    },
    countTurn() {
      treeTurns++;
    },
    hasSteering: () => steering.some((m) => m.role === 'user'),
    prompt(text, opts) {
      if (opts?.idempotencyKey) {
        const seen = byKey.get(opts.idempotencyKey);
        if (seen) return seen;
      }
      let promise: Promise<RunOutcome>;
      if (current) {
        const message = userMessage(text, opts, true);
        emit({ type: 'user_message', message, queued: true });
        hooks.steer(message, (m) => steering.push(m));
        promise = current;
      } else {
        const pendingNotes = steering.splice(0);
        for (const note of pendingNotes) append(note);
        promise = startRun(userMessage(text, opts, false), opts).finally(() => {
          current = undefined;
        });
        current = promise;
      }
      if (opts?.idempotencyKey) byKey.set(opts.idempotencyKey, promise);
      return promise;
    },
    abort(reason) {
      if (!controller) return;
      emit({ type: 'notice', level: 'warn', text: `Aborted${reason ? `: ${reason}` : ''}.` });
      // Stop ends the jobs this run started (their SIGTERM goes out now; the rest is awaited by hosts).
      if (runId) void jobs.stopAll(runId);
      controller.abort(reason);
    },
    notify(text, source) {
      const note: ReminderMessage = { role: 'reminder', id: newId('rem'), ts: now(), text, source };
      steering.push(note);
    },
    dispose() {
      controller?.abort('disposed');
    },
  };
}
