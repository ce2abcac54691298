import type { AgentEvent } from '../../src/agent/events.ts';
import type { HostMessage } from '../../src/shared/webviewProtocol.ts';
import { type Draft, put } from './draft.ts';
import { imagesOf, type QueuedMessage, type ViewState } from './model.ts';

// The user's messages on their way: a submission shown as "sending" until the host says it was
// received, queued while a run goes on (steering), then shown in the transcript when its
// user_message event arrives.

/** Record a submission from this webview (shown as "sending" until the host echoes it). */
export function addPending(
  state: ViewState,
  text: string,
  idempotencyKey: string,
  mentions: readonly string[] = [],
  sentAt: number = Date.now(),
): ViewState {
  const entry: QueuedMessage = {
    id: `pending:${idempotencyKey}`,
    text,
    idempotencyKey,
    mentions,
    sentAt,
    state: 'sending',
  };
  return { ...state, banner: undefined, queue: [...state.queue, entry] };
}

/**
 * Is `sent` (a user message's text) what the user typed as `typed`? A slash command arrives expanded,
 * its first line naming what was typed (src/agent/commands/expand.ts: `[/name …; the user typed: /name args]`).
 */
function sentAs(typed: string, sent: string): boolean {
  const t = typed.trim();
  if (t === sent.trim()) return true;
  const first = sent.split('\n', 1)[0] ?? '';
  return t.startsWith('/') && first.startsWith('[/') && first.endsWith(`; the user typed: ${t}]`);
}

export function applyUserMessage(draft: Draft, event: Extract<AgentEvent, { type: 'user_message' }>): void {
  const { message } = event;
  // Our own submission is recognised by its text (events do not carry the idempotency key).
  const mine = draft.queue.findIndex((q) => q.idempotencyKey !== undefined && sentAs(q.text, message.text));
  if (mine >= 0) draft.queue.splice(mine, 1);
  const queuedAt = draft.queue.findIndex((q) => q.id === message.id);
  if (event.queued) {
    const entry: QueuedMessage = { id: message.id, text: message.text, state: 'queued' };
    if (queuedAt >= 0) draft.queue[queuedAt] = entry;
    else draft.queue.push(entry);
    return;
  }
  if (queuedAt >= 0) draft.queue.splice(queuedAt, 1);
  const steering = message.steering ?? false;
  // A message that starts a run is a prompt with a checkpoint: its number counts such messages.
  const promptNumber = steering
    ? undefined
    : draft.items.filter((i) => i.kind === 'user' && !i.steering).length + 1;
  put(draft, {
    kind: 'user',
    id: message.id,
    text: message.text,
    mentions: message.mentions ?? [],
    steering,
    ...(promptNumber !== undefined ? { promptNumber } : {}),
    ...imagesOf(message),
  });
}

/** The host has the submission (it stops re-posting it). */
export function submitReceived(state: ViewState, idempotencyKey: string): ViewState {
  const at = state.queue.findIndex((q) => q.idempotencyKey === idempotencyKey);
  if (at < 0 || state.queue[at]!.received) return state;
  const queue = [...state.queue];
  queue[at] = { ...queue[at]!, received: true };
  return { ...state, queue };
}

export function submitResult(
  state: ViewState,
  message: Extract<HostMessage, { type: 'submitResult' }>,
): ViewState {
  const at = state.queue.findIndex((q) => q.idempotencyKey === message.idempotencyKey);
  if (message.ok) {
    if (at < 0) return state;
    // A built-in command answered at once: nothing will arrive in the transcript for it.
    if (message.settled) return { ...state, queue: state.queue.filter((_, i) => i !== at) };
    // Accepted while running: it is a steering message waiting for the next turn.
    const queue = [...state.queue];
    queue[at] = { ...queue[at]!, ...(state.running ? { state: 'queued' as const } : {}), received: true };
    return { ...state, queue };
  }
  return {
    ...state,
    queue: state.queue.filter((q) => q.idempotencyKey !== message.idempotencyKey),
    banner: { level: 'error', text: message.error ?? 'The message could not be sent.' },
  };
}
