import type { AssistantMessage } from '../../src/agent/messages.ts';
import type { ToolResult } from '../../src/agent/tools/protocol.ts';
import { editPath } from './format.ts';
import type {
  AssistantBlockView,
  AssistantItem,
  Item,
  QueuedMessage,
  ToolItem,
  ToolStatus,
  ViewState,
} from './model.ts';

// The reducers' working copy of the view state and the small operations on it. A batch of events
// copies the top-level arrays once and then edits the copies; changed items are replaced by new
// objects, never mutated, so the renderer can skip every item whose identity is unchanged.

export interface Draft {
  sessionId: string | null;
  lastSeq: number;
  running: boolean;
  model: string;
  items: Item[];
  queue: QueuedMessage[];
  todos: ViewState['todos'];
  jobs: ViewState['jobs'];
  usage: ViewState['usage'];
  review: ViewState['review'];
  sessions: ViewState['sessions'];
  banner?: ViewState['banner'];
  needsResync: boolean;
  lookup?: Map<string, number>;
}

export function draftOf(state: ViewState): Draft {
  return { ...state, items: [...state.items], queue: [...state.queue] };
}

export function freeze(draft: Draft): ViewState {
  const { lookup: _lookup, ...state } = draft;
  return state;
}

// Lookups: a single live event scans from the end (it almost always touches the newest items, and
// copying an id→index map per event would grow with the transcript); a large batch (catch-up) builds
// one map for the whole batch instead.
export const BATCH_MAP_THRESHOLD = 64;

export function indexOf(draft: Draft, id: string): number {
  if (draft.lookup) return draft.lookup.get(id) ?? -1;
  for (let i = draft.items.length - 1; i >= 0; i--) if (draft.items[i]!.id === id) return i;
  return -1;
}

export function put(draft: Draft, item: Item): void {
  const at = indexOf(draft, item.id);
  if (at >= 0) {
    draft.items[at] = item;
    return;
  }
  draft.lookup?.set(item.id, draft.items.length);
  draft.items.push(item);
}

export function removeAt(draft: Draft, at: number): void {
  draft.items.splice(at, 1);
  if (draft.lookup) draft.lookup = new Map(draft.items.map((item, i) => [item.id, i]));
}

export function get<K extends Item['kind']>(
  draft: Draft,
  id: string,
  kind: K,
): Extract<Item, { kind: K }> | undefined {
  const item = draft.items[indexOf(draft, id)];
  return item?.kind === kind ? (item as Extract<Item, { kind: K }>) : undefined;
}

export function appendToBlock(
  item: AssistantItem,
  blockIndex: number,
  kind: 'text' | 'thinking',
  delta: string,
): AssistantItem {
  const blocks = [...item.blocks];
  // Stream block indexes include tool_use blocks we don't show; keep a sparse slot per index.
  while (blocks.length <= blockIndex) blocks.push({ kind: 'text', text: '' });
  const block = blocks[blockIndex]!;
  blocks[blockIndex] = { kind, text: (block.kind === kind ? block.text : '') + delta };
  return { ...item, blocks };
}

export const isSettled = (status: ToolStatus) => status !== 'pending' && status !== 'running';

export function settleOpenTools(draft: Draft): void {
  draft.items.forEach((item, i) => {
    if (item.kind === 'tool' && !isSettled(item.status)) draft.items[i] = { ...item, status: 'cancelled' };
  });
}

/** A finished assistant message as the panel shows it: its non-empty text and its thinking. */
export function assistantBlocks(message: AssistantMessage): AssistantBlockView[] {
  const blocks: AssistantBlockView[] = [];
  for (const block of message.content) {
    if (block.type === 'text' && block.text.length > 0) blocks.push({ kind: 'text', text: block.text });
    else if (block.type === 'thinking') blocks.push({ kind: 'thinking', text: block.thinking });
  }
  return blocks;
}

export function toolFromUse(id: string, name: string, input: unknown): ToolItem {
  return {
    kind: 'tool',
    id,
    name,
    input,
    status: 'pending',
    stream: '',
    streamTruncated: false,
    path: editPath(name, input),
  };
}

export function withResult(card: ToolItem, result: ToolResult, durationMs: number | undefined): ToolItem {
  const diff = result.ui?.['diff'];
  const uiPath = result.ui?.['path'];
  return {
    ...card,
    status: result.status,
    durationMs: durationMs ?? card.durationMs,
    resultText: result.text,
    error: result.error
      ? { code: result.error.code, message: result.error.message, suggestion: result.error.suggestion }
      : undefined,
    diff: typeof diff === 'string' && diff.length > 0 ? diff : undefined,
    path: typeof uiPath === 'string' && uiPath.length > 0 ? uiPath : card.path,
  };
}

export function reportedSinceLastUser(draft: Draft, kind: 'error' | 'notice'): boolean {
  for (let i = draft.items.length - 1; i >= 0; i--) {
    const item = draft.items[i]!;
    if (item.kind === 'user') return false;
    if (item.kind === kind && (kind === 'error' || (item.kind === 'notice' && item.level !== 'info')))
      return true;
  }
  return false;
}

// A notice may reach us both as a `notice` event and as the appended notice message: show it once.
export function addNotice(draft: Draft, id: string, level: 'info' | 'warn' | 'error', text: string): void {
  const last = draft.items[draft.items.length - 1];
  if (last?.kind === 'notice' && last.level === level && last.text === text) return;
  put(draft, { kind: 'notice', id, level, text });
}
