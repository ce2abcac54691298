import type { AgentEvent } from '../../src/agent/events.ts';
import type { HostMessage } from '../../src/shared/webviewProtocol.ts';
import { t } from './l10n.ts';
import {
  addNotice,
  appendToBlock,
  assistantBlocks,
  BATCH_MAP_THRESHOLD,
  type Draft,
  draftOf,
  freeze,
  get,
  isSettled,
  put,
  removeAt,
  reportedSinceLastUser,
  settleOpenTools,
  toolFromUse,
  withResult,
} from './draft.ts';
import { initialState, type ViewState } from './model.ts';
import { itemsFromMessages } from './fromMessages.ts';
import { applyUserMessage, submitReceived, submitResult } from './reduceQueue.ts';
import { applyWorkEvent } from './reduceWork.ts';

export { addPending } from './reduceQueue.ts';

// Pure reducers: (state, input) → new state; the input state is never mutated. A batch of events
// copies the top-level arrays once and then edits the copies, so replaying thousands of events
// (snapshot catch-up) stays linear.

/** Live tool output kept per card; older output is in the tool's result and the session log. */
export const STREAM_TAIL_CHARS = 16_000;

function applyEvent(draft: Draft, event: AgentEvent): void {
  if (draft.sessionId === null) draft.sessionId = event.sessionId;
  if (event.sessionId !== draft.sessionId) {
    draft.needsResync = true;
    return;
  }
  // Catch-up and live delivery can overlap; an event is applied once.
  if (event.seq <= draft.lastSeq) return;
  draft.lastSeq = event.seq;
  switch (event.type) {
    case 'agent_start':
      draft.running = true;
      break;
    case 'agent_end':
      draft.running = false;
      settleOpenTools(draft);
      // The session already reports aborts (notice), explicit stops (notice) and failures (error
      // event); only say something here when nothing in this run has.
      if (event.status === 'failed') {
        if (!reportedSinceLastUser(draft, 'error')) {
          put(draft, {
            kind: 'error',
            id: `end:${event.runId}`,
            code: 'run_failed',
            message: event.error ?? t('The run failed.'),
          });
        }
      } else if (event.status === 'max_turns') {
        const text = event.error ?? t('Stopped: reached the turn limit.');
        put(draft, { kind: 'notice', id: `end:${event.runId}`, level: 'warn', text });
      } else if (event.status !== 'finished' && !reportedSinceLastUser(draft, 'notice')) {
        put(draft, { kind: 'notice', id: `end:${event.runId}`, level: 'warn', text: t('Stopped.') });
      }
      break;
    case 'message_start':
      draft.model = event.model || draft.model;
      put(draft, { kind: 'assistant', id: event.messageId, model: event.model, blocks: [], streaming: true });
      break;
    case 'message_delta': {
      if (event.kind === 'tool_input') break;
      const item = get(draft, event.messageId, 'assistant') ?? {
        kind: 'assistant',
        id: event.messageId,
        model: draft.model,
        blocks: [],
        streaming: true,
      };
      put(draft, appendToBlock(item, event.blockIndex, event.kind, event.delta));
      break;
    }
    case 'message_end': {
      const { message } = event;
      const blocks = assistantBlocks(message);
      put(draft, { kind: 'assistant', id: message.id, model: message.model, blocks, streaming: false });
      for (const block of message.content) {
        if (block.type === 'tool_use' && get(draft, block.id, 'tool') === undefined) {
          put(draft, toolFromUse(block.id, block.name, block.input));
        }
      }
      break;
    }
    case 'discarded': {
      // The partial reply was thrown away (stream failed, retried): drop what was shown of it.
      for (let i = draft.items.length - 1; i >= 0; i--) {
        const item = draft.items[i]!;
        if (item.kind === 'assistant' && item.streaming) {
          removeAt(draft, i);
          break;
        }
      }
      break;
    }
    case 'user_message':
      applyUserMessage(draft, event);
      break;
    case 'tool_start': {
      const prev =
        get(draft, event.toolUseId, 'tool') ?? toolFromUse(event.toolUseId, event.name, event.input);
      put(draft, { ...prev, name: event.name, input: event.input, status: 'running', startedAt: event.ts });
      break;
    }
    case 'tool_update': {
      const prev = get(draft, event.toolUseId, 'tool');
      if (!prev) break;
      let stream = prev.stream + event.text;
      const truncated = stream.length > STREAM_TAIL_CHARS;
      if (truncated) stream = stream.slice(stream.length - STREAM_TAIL_CHARS);
      put(draft, { ...prev, stream, streamTruncated: prev.streamTruncated || truncated });
      break;
    }
    case 'tool_end': {
      const prev = get(draft, event.toolUseId, 'tool') ?? toolFromUse(event.toolUseId, event.name, undefined);
      put(draft, withResult(prev, event.result, event.durationMs));
      break;
    }
    case 'model_call': {
      const r = event.record;
      if (r.agent) {
        // A sub-agent's call: it costs the session, but the meter shows the main conversation.
        draft.usage = {
          ...draft.usage,
          costUsd: draft.usage.costUsd + (Number.isFinite(r.cost_usd) ? r.cost_usd : 0),
          calls: draft.usage.calls + 1,
        };
        break;
      }
      const prompt = r.input + r.cache_read + r.cache_write;
      draft.model = r.model || draft.model;
      const promptTokens = (draft.usage.promptTokens ?? 0) + prompt;
      const cacheReadTokens = (draft.usage.cacheReadTokens ?? 0) + r.cache_read;
      const stage = typeof r.stage === 'number' && Number.isFinite(r.stage) ? r.stage : 0;
      draft.usage = {
        contextTokens: prompt > 0 ? prompt : r.est_tokens,
        contextWindow: r.context_window || draft.usage.contextWindow,
        cacheHitPct: prompt > 0 ? Math.round((r.cache_read / prompt) * 1000) / 10 : draft.usage.cacheHitPct,
        sessionCacheHitPct:
          promptTokens > 0
            ? Math.round((cacheReadTokens / promptTokens) * 1000) / 10
            : (draft.usage.sessionCacheHitPct ?? 0),
        stage: Math.max(draft.usage.stage ?? 0, stage),
        promptTokens,
        cacheReadTokens,
        costUsd: draft.usage.costUsd + (Number.isFinite(r.cost_usd) ? r.cost_usd : 0),
        calls: draft.usage.calls + 1,
      };
      break;
    }
    case 'todo':
      draft.todos = event.todos;
      break;
    case 'job':
    case 'subagent_start':
    case 'subagent_tool':
    case 'subagent_end':
    case 'memory_changed':
      applyWorkEvent(draft, event);
      break;
    case 'retry':
      put(draft, {
        kind: 'notice',
        id: `seq:${event.seq}`,
        level: 'warn',
        text: t(
          'Retrying {0} (attempt {1}) in {2}s: {3}',
          event.model,
          event.attempt,
          Math.round(event.delayMs / 100) / 10,
          event.reason,
        ),
      });
      break;
    case 'notice':
      addNotice(draft, `seq:${event.seq}`, event.level, event.text);
      break;
    case 'message_appended': {
      const { message } = event;
      if (message.role === 'notice') addNotice(draft, message.id, message.level, message.text);
      else if (message.role === 'tool_result') {
        // Calls skipped for a steering message or cut by an abort get a result but no tool_end.
        const card = get(draft, message.toolUseId, 'tool');
        if (card && !isSettled(card.status) && typeof message.result?.status === 'string') {
          put(draft, withResult(card, message.result, undefined));
        }
      } else if (message.role === 'summary') {
        addNotice(draft, message.id, 'info', t('Earlier conversation was summarised to free context space.'));
      }
      break;
    }
    case 'error':
      put(draft, {
        kind: 'error',
        id: `seq:${event.seq}`,
        code: event.code,
        message: event.message,
        suggestion: suggestionFor(event.code),
      });
      break;
    case 'plan':
      put(draft, {
        kind: 'plan',
        id: `seq:${event.seq}`,
        text: event.text,
        steps: event.steps,
        ...(event.file ? { file: event.file } : {}),
      });
      break;
    case 'model_switch':
      addNotice(draft, `seq:${event.seq}`, 'info', `Model: ${event.model} from now on in this chat.`);
      break;
    case 'effort_change':
      addNotice(
        draft,
        `seq:${event.seq}`,
        'info',
        event.effort === 'off'
          ? 'Thinking off from now on in this chat.'
          : `Thinking: ${event.effort} effort from now on in this chat.`,
      );
      break;
    case 'session_reset':
      put(draft, {
        kind: 'divider',
        id: `seq:${event.seq}`,
        text: t('Session reset ({0}): continuing as a new session, seeded with a handoff', event.reason),
      });
      // The run goes on in the new session: its events carry the new id (the sequence goes on).
      draft.sessionId = event.newSessionId;
      break;
    case 'turn_start':
    case 'turn_end':
      break;
  }
}

// Suggestions for the model error kinds the loop reports (src/agent/model/errors.ts) and host codes.
const SUGGESTIONS: Record<string, string> = {
  auth: 'Run "Keel: Set API Key" and try again.',
  NO_API_KEY: 'Run "Keel: Set API Key" and try again.',
  rate_limited: 'Wait a moment, then send again.',
  overloaded: 'The model is overloaded: try again shortly, or set keel.fallbackModels.',
  model_unavailable: 'Check keel.model, or set keel.fallbackModels.',
  connection: 'Check the network and keel.baseUrl, then send again.',
  prompt_too_long: 'Start a new chat, or raise keel.contextWindow if the model allows it.',
  exhausted: 'Every configured model failed; check keel.model and keel.fallbackModels.',
  internal: 'This is a Keel bug; "Keel: Show Log" has details.',
};

export function suggestionFor(code: string): string | undefined {
  return SUGGESTIONS[code];
}

/** Apply events in order (pure). */
export function reduceMany(state: ViewState, events: readonly AgentEvent[]): ViewState {
  if (events.length === 0) return state;
  const draft = draftOf(state);
  if (events.length > BATCH_MAP_THRESHOLD) draft.lookup = new Map(draft.items.map((item, i) => [item.id, i]));
  for (const event of events) applyEvent(draft, event);
  return freeze(draft);
}

/** Apply one event (pure). */
export function reduce(state: ViewState, event: AgentEvent): ViewState {
  return reduceMany(state, [event]);
}

/** The user rated an answer here (the host is told separately); the rating shows from now on. */
export function rateAnswer(state: ViewState, messageId: string, rating: 'up' | 'down'): ViewState {
  return { ...state, ratings: { ...state.ratings, [messageId]: rating } };
}

/** Apply a (validated) host message (pure). */
export function applyHostMessage(state: ViewState, message: HostMessage): ViewState {
  switch (message.type) {
    case 'event':
      return reduce(state, message.event);
    case 'snapshot': {
      let base: ViewState = state;
      if (message.replace || message.sessionId !== state.sessionId) {
        const items = message.messages ? itemsFromMessages(message.messages) : [];
        base = {
          ...initialState(),
          sessions: state.sessions,
          review: state.review,
          // Our own submissions survive a resync (sending, or accepted and queued): dropping one the
          // new transcript does not show would lose a typed message without a word.
          queue: state.queue.filter((q) => q.state === 'sending' || q.idempotencyKey !== undefined),
          // A session that was reset in this host replays from its predecessor's events (the reset
          // event moves the view on to the new id).
          sessionId: message.events[0]?.sessionId ?? message.sessionId,
          items,
          usage: { ...initialState().usage, contextWindow: message.contextWindow },
        };
      }
      const next = reduceMany({ ...base, needsResync: false }, message.events);
      return {
        ...next,
        running: message.running,
        todos: message.todos,
        // The host sends every rating it holds for the session; one clicked here since is kept.
        ratings: { ...next.ratings, ...message.ratings },
        model: message.model || next.model,
        usage: { ...next.usage, contextWindow: next.usage.contextWindow || message.contextWindow },
      };
    }
    case 'sessions':
      return { ...state, sessions: message.items };
    case 'review':
      return { ...state, review: message.files, reviewSettled: message.settled ?? [] };
    case 'usage':
      return {
        ...state,
        usage: {
          ...state.usage,
          contextTokens: message.contextTokens,
          contextWindow: message.contextWindow,
          cacheHitPct: message.cacheHitPct,
          ...(message.sessionCacheHitPct !== undefined
            ? { sessionCacheHitPct: message.sessionCacheHitPct }
            : {}),
          ...(message.stage !== undefined ? { stage: message.stage } : {}),
          costUsd: message.costUsd,
        },
      };
    case 'submitReceived':
      return submitReceived(state, message.idempotencyKey);
    case 'submitResult':
      return submitResult(state, message);
    case 'hostNotice':
      return {
        ...state,
        banner: {
          level: message.level,
          text: message.text,
          code: message.code,
          suggestion: message.suggestion,
        },
      };
    case 'fileCompletions':
    case 'setInput':
    case 'modes':
    case 'effort':
      // UI-local concerns, handled by the input component.
      return state;
  }
}
