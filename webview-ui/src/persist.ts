import { initialState, type Item, type ViewState } from './model.ts';

// What the webview keeps in `vscode.setState` so a re-shown panel (no retainContextWhenHidden)
// repaints at once and then asks the host only for events after `lastSeq`.

/** A submission the host had not acknowledged when the webview went away. */
export interface UnsentMessage {
  readonly text: string;
  readonly mentions: readonly string[];
  readonly idempotencyKey: string;
  readonly sentAt: number;
}

export interface Saved {
  readonly v: 1;
  /** Absent when the view was too large to keep; the panel then replays from the host. */
  readonly view?: ViewState;
  readonly draft: { readonly text: string; readonly mentions: readonly string[] };
  /**
   * Recent unacknowledged submissions: the reloaded webview sends them again with the same
   * idempotency key (the host runs a key once), unless the transcript shows they arrived.
   */
  readonly unsent?: readonly UnsentMessage[];
}

/** An unacknowledged submission older than this is not resent; its text goes back to the input. */
export const RESEND_WITHIN_MS = 120_000;

/** Past this many items the saved state would be megabytes; a full replay from the host is cheaper. */
export const MAX_SAVED_ITEMS = 3000;

export function toSaved(state: ViewState, draft: Saved['draft'], now: number = Date.now()): Saved {
  const unsent: UnsentMessage[] = state.queue.flatMap((q) =>
    q.state === 'sending' && q.idempotencyKey
      ? [
          {
            text: q.text,
            mentions: q.mentions ?? [],
            idempotencyKey: q.idempotencyKey,
            sentAt: q.sentAt ?? now,
          },
        ]
      : [],
  );
  const extra = unsent.length > 0 ? { unsent } : {};
  if (state.items.length > MAX_SAVED_ITEMS || state.sessionId === null || state.lastSeq === 0)
    return { v: 1, draft, ...extra };
  // The history list and banners are refreshed by the host; a resync request is not carried over.
  return { v: 1, view: { ...state, sessions: [], banner: undefined, needsResync: false }, draft, ...extra };
}

function restoreUnsent(
  raw: unknown,
  draft: Saved['draft'],
  now: number,
): { unsent: UnsentMessage[]; draft: Saved['draft'] } {
  const all = (Array.isArray(raw) ? raw : []).filter(
    (u): u is UnsentMessage =>
      isRecord(u) &&
      typeof u['text'] === 'string' &&
      typeof u['idempotencyKey'] === 'string' &&
      typeof u['sentAt'] === 'number' &&
      Array.isArray(u['mentions']),
  );
  const unsent = all.filter((u) => now - u.sentAt >= 0 && now - u.sentAt <= RESEND_WITHIN_MS);
  // Too old to send on the user's behalf, but never lost: back into an empty input.
  const stale = all.find((u) => !unsent.includes(u));
  const nextDraft =
    stale && !draft.text
      ? { text: stale.text, mentions: stale.mentions.filter((m) => typeof m === 'string') }
      : draft;
  return { unsent, draft: nextDraft };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Accept only what an earlier instance of this webview wrote; anything else starts fresh. */
export function restoreSaved(raw: unknown, now: number = Date.now()): Saved | undefined {
  if (!isRecord(raw) || raw['v'] !== 1) return undefined;
  const draftRaw = raw['draft'];
  const savedDraft =
    isRecord(draftRaw) && typeof draftRaw['text'] === 'string' && Array.isArray(draftRaw['mentions'])
      ? {
          text: draftRaw['text'],
          mentions: draftRaw['mentions'].filter((m): m is string => typeof m === 'string'),
        }
      : { text: '', mentions: [] };
  const { unsent, draft } = restoreUnsent(raw['unsent'], savedDraft, now);
  const extra = unsent.length > 0 ? { unsent } : {};
  const view = raw['view'];
  if (
    !isRecord(view) ||
    typeof view['sessionId'] !== 'string' ||
    typeof view['lastSeq'] !== 'number' ||
    !Array.isArray(view['items']) ||
    !Array.isArray(view['queue']) ||
    !Array.isArray(view['todos']) ||
    !Array.isArray(view['review']) ||
    !isRecord(view['usage'])
  ) {
    return { v: 1, draft, ...extra };
  }
  const items = (view['items'] as unknown[]).filter(
    (item): item is Item =>
      isRecord(item) && typeof item['id'] === 'string' && typeof item['kind'] === 'string',
  );
  const base = initialState();
  // Messages still "sending" come back through `unsent` (recent ones) or the draft (older ones).
  const queue = (view['queue'] as ViewState['queue']).filter((q) => q.state === 'queued');
  return {
    v: 1,
    draft,
    ...extra,
    view: {
      ...base,
      ...(view as unknown as ViewState),
      items,
      queue,
      sessions: [],
      banner: undefined,
      needsResync: false,
    },
  };
}
