import type { AgentEvent, TodoItem } from '../../src/agent/events.ts';
import type { AgentMessage } from '../../src/agent/messages.ts';
import type { ReviewFile, SessionSummary, SettledFile } from '../../src/shared/webviewProtocol.ts';

// The chat panel's view model. Pure data, built only by the reducers in reducer.ts, so the whole
// event → view pipeline runs (and is tested) in Node without a DOM. Items that change are replaced
// by new objects, never mutated: the renderer re-renders exactly the items whose identity changed.

export type ToolStatus = 'pending' | 'running' | 'success' | 'partial' | 'error' | 'cancelled';

export interface UserItem {
  readonly kind: 'user';
  readonly id: string;
  readonly text: string;
  readonly mentions: readonly string[];
  readonly steering: boolean;
  /** The prompt's checkpoint number (runs it started, from 1): "Restore to before this". */
  readonly promptNumber?: number;
  /** Attached images (shown as thumbnails). */
  readonly images?: readonly { readonly mediaType: string; readonly data: string }[];
}

/** A user message's images as a UserItem keeps them (only well-formed ones). */
export function imagesOf(message: { images?: unknown }): Pick<UserItem, 'images'> {
  if (!Array.isArray(message.images)) return {};
  const images = message.images.flatMap((i: { mediaType?: unknown; data?: unknown }) =>
    typeof i?.mediaType === 'string' &&
    /^image\/(png|jpeg|gif|webp)$/.test(i.mediaType) &&
    typeof i.data === 'string'
      ? [{ mediaType: i.mediaType, data: i.data }]
      : [],
  );
  return images.length > 0 ? { images } : {};
}

export interface AssistantBlockView {
  readonly kind: 'text' | 'thinking';
  readonly text: string;
}

export interface AssistantItem {
  readonly kind: 'assistant';
  readonly id: string;
  readonly model: string;
  readonly blocks: readonly AssistantBlockView[];
  /** Still receiving deltas. */
  readonly streaming: boolean;
}

export interface ToolErrorView {
  readonly code: string;
  readonly message: string;
  readonly suggestion: string;
}

export interface ToolItem {
  readonly kind: 'tool';
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
  readonly status: ToolStatus;
  readonly startedAt?: number;
  readonly durationMs?: number;
  /** Live output streamed by tool_update (tail only, bounded). */
  readonly stream: string;
  readonly streamTruncated: boolean;
  /** What the tool returned (rendered on demand: can be large). */
  readonly resultText?: string;
  readonly error?: ToolErrorView;
  /** Unified diff from `result.ui.diff` (edit tools). */
  readonly diff?: string;
  /** Workspace path the tool touched (edit tools), for review/accept/reject. */
  readonly path?: string;
  /** A Task call's sub-agent: its live tool calls and cost (a collapsible card). */
  readonly subagent?: SubagentView;
}

export interface SubagentCallView {
  readonly name: string;
  readonly input: unknown;
  readonly status: ToolStatus;
  readonly errorCode?: string;
}

export interface SubagentView {
  readonly agentId: string;
  readonly description: string;
  readonly mode: string;
  readonly status: 'running' | 'finished' | 'failed' | 'aborted' | 'max_turns' | 'stopped';
  readonly calls: readonly SubagentCallView[];
  readonly costUsd: number;
  readonly turns: number;
  readonly logPath: string;
}

/** A background command (Bash run_in_background). */
export interface JobView {
  readonly id: string;
  readonly command: string;
  readonly status: 'running' | 'exited' | 'killed' | 'failed';
  readonly exitCode: number | null;
}

export interface NoticeItem {
  readonly kind: 'notice';
  readonly id: string;
  readonly level: 'info' | 'warn' | 'error';
  readonly text: string;
}

export interface ErrorItem {
  readonly kind: 'error';
  readonly id: string;
  readonly code: string;
  readonly message: string;
  readonly suggestion?: string;
}

/** A MEMORY.md change made during the session: a small diff the user can keep or undo. */
export interface MemoryItem {
  readonly kind: 'memory';
  /** The change id (what Undo names). */
  readonly id: string;
  readonly scope: 'workspace' | 'user';
  readonly origin: string;
  readonly summary: string;
  readonly lines: ReadonlyArray<{ readonly sign: '+' | '-'; readonly text: string }>;
  readonly undone: boolean;
}

/** Plan mode's plan: editable in the card, then "Start" hands it to the default agent as its todos. */
export interface PlanItem {
  readonly kind: 'plan';
  readonly id: string;
  readonly text: string;
  readonly steps: readonly string[];
  readonly file?: string;
}

/** A line across the chat: the session was reset and goes on as a new one (the run continues below). */
export interface DividerItem {
  readonly kind: 'divider';
  readonly id: string;
  readonly text: string;
}

export type Item =
  | UserItem
  | AssistantItem
  | ToolItem
  | NoticeItem
  | ErrorItem
  | MemoryItem
  | PlanItem
  | DividerItem;

/** A message the user sent that the agent has not taken in yet. */
export interface QueuedMessage {
  readonly id: string;
  readonly text: string;
  /** Set for submissions from this webview until the host echoes them. */
  readonly idempotencyKey?: string;
  /** For a resend after the webview was reloaded before the host acknowledged it. */
  readonly mentions?: readonly string[];
  /** Epoch ms of the submission. */
  readonly sentAt?: number;
  /** 'sending': not yet in the transcript; 'queued': waiting for the agent's next turn. */
  readonly state: 'sending' | 'queued';
  /** The host said it has the message (`submitReceived`): no more re-posting. */
  readonly received?: boolean;
}

export interface UsageView {
  readonly contextTokens: number;
  readonly contextWindow: number;
  /** Of the last model call's prompt, percent served from the cache (0..100). */
  readonly cacheHitPct: number;
  /** Of every prompt token of the session, percent served from the cache (0..100). */
  readonly sessionCacheHitPct: number;
  /** Highest context pruning stage applied in the session (0 = none). */
  readonly stage: number;
  /** Session totals: prompt tokens sent and read from the cache (for sessionCacheHitPct). */
  readonly promptTokens: number;
  readonly cacheReadTokens: number;
  /** Session total. */
  readonly costUsd: number;
  readonly calls: number;
}

export interface ViewState {
  readonly sessionId: string | null;
  /** Highest event seq applied; the webview asks the host for everything after it. */
  readonly lastSeq: number;
  readonly running: boolean;
  readonly model: string;
  readonly items: readonly Item[];
  readonly queue: readonly QueuedMessage[];
  readonly todos: readonly TodoItem[];
  /** Background jobs of this session, newest last. */
  readonly jobs: readonly JobView[];
  readonly usage: UsageView;
  readonly review: readonly ReviewFile[];
  /** Paths whose hunks the user accepted / rejected (edit cards show it). */
  readonly reviewSettled?: readonly SettledFile[];
  /** The user's 👍/👎 of answers, by answer id (from the host, and from clicks here). */
  readonly ratings?: Readonly<Record<string, 'up' | 'down'>>;
  readonly sessions: readonly SessionSummary[];
  /** Host-level problem (no API key …) shown above the input until the next submit. */
  readonly banner?: {
    readonly level: 'info' | 'warn' | 'error';
    readonly text: string;
    readonly code?: string;
    readonly suggestion?: string;
  };
  /** Set when an event for another session arrived: the webview should ask the host to resync. */
  readonly needsResync: boolean;
}

export function initialState(): ViewState {
  return {
    sessionId: null,
    lastSeq: 0,
    running: false,
    model: '',
    items: [],
    queue: [],
    todos: [],
    jobs: [],
    usage: {
      contextTokens: 0,
      contextWindow: 0,
      cacheHitPct: 0,
      sessionCacheHitPct: 0,
      stage: 0,
      promptTokens: 0,
      cacheReadTokens: 0,
      costUsd: 0,
      calls: 0,
    },
    review: [],
    sessions: [],
    needsResync: false,
  };
}

export type { AgentEvent, AgentMessage, TodoItem };
