import { initialState, type Item, type ViewState } from './model.ts';

// What the webview keeps in `vscode.setState` so a re-shown panel (no retainContextWhenHidden)
// repaints at once and then asks the host only for events after `lastSeq`.

export interface Saved {
  readonly v: 1;
  /** Absent when the view was too large to keep; the panel then replays from the host. */
  readonly view?: ViewState;
  readonly draft: { readonly text: string; readonly mentions: readonly string[] };
}

/** Past this many items the saved state would be megabytes; a full replay from the host is cheaper. */
export const MAX_SAVED_ITEMS = 3000;

export function toSaved(state: ViewState, draft: Saved['draft']): Saved {
  if (state.items.length > MAX_SAVED_ITEMS || state.sessionId === null || state.lastSeq === 0)
    return { v: 1, draft };
  // The history list and banners are refreshed by the host; a resync request is not carried over.
  return { v: 1, view: { ...state, sessions: [], banner: undefined, needsResync: false }, draft };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Accept only what an earlier instance of this webview wrote; anything else starts fresh. */
export function restoreSaved(raw: unknown): Saved | undefined {
  if (!isRecord(raw) || raw['v'] !== 1) return undefined;
  const draftRaw = raw['draft'];
  const draft =
    isRecord(draftRaw) && typeof draftRaw['text'] === 'string' && Array.isArray(draftRaw['mentions'])
      ? {
          text: draftRaw['text'],
          mentions: draftRaw['mentions'].filter((m): m is string => typeof m === 'string'),
        }
      : { text: '', mentions: [] };
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
    return { v: 1, draft };
  }
  const items = (view['items'] as unknown[]).filter(
    (item): item is Item =>
      isRecord(item) && typeof item['id'] === 'string' && typeof item['kind'] === 'string',
  );
  const base = initialState();
  // Messages still "sending" were never acknowledged; the host knows whether they arrived.
  const queue = (view['queue'] as ViewState['queue']).filter((q) => q.state === 'queued');
  return {
    v: 1,
    draft,
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
