import * as z from 'zod/mini';
import type { AgentEvent, TodoItem } from '../agent/events.ts';
import { IMAGE_MEDIA_TYPES, MAX_IMAGE_BASE64, MAX_IMAGES_PER_MESSAGE } from '../agent/context/images.ts';
import type { AgentMessage } from '../agent/messages.ts';
import { agentEventSchema, todoSchema } from './agentEventSchema.ts';
import { count, id, MAX_CODE, MAX_PATH, MAX_TEXT, relPath } from './protocolFields.ts';

/** A chat's thinking level: an effort, or no thinking at all. */
const effortLevel = z.enum(['low', 'medium', 'high', 'max', 'off']);

// The one typed channel between the extension host and the chat webview. Both sides validate
// everything they receive with these schemas (the webview is a separate, untrusted-ish JS context;
// the host must never act on a malformed message). Agent events are validated loosely: the envelope
// ({type, seq, sessionId, ts}) strictly, plus the fields the UI reads; anything else passes through
// so the protocol does not have to mirror every event field (agentEventSchema.ts).

// The agent-event schemas live in agentEventSchema.ts; re-exported so importers keep this one path.
export { AGENT_EVENT_TYPES, agentEventSchema } from './agentEventSchema.ts';

// ---------- host → webview ----------

const sessionSummarySchema = z.strictObject({
  id,
  title: z.string().check(z.maxLength(MAX_TEXT)),
  /** Epoch milliseconds. */
  updatedAt: z.number(),
  messageCount: count,
});

const hunkSchema = z.strictObject({
  id,
  /** 1-based first line of the hunk in the current file. */
  startLine: z.int().check(z.positive()),
  /** Number of added / removed lines. */
  added: count,
  removed: count,
});

export const hostMessageSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('event'), event: agentEventSchema }),
  z.strictObject({
    type: z.literal('snapshot'),
    sessionId: id,
    /**
     * true: the webview discards its view and rebuilds from `events` (new chat, other session, or a
     * webview that asked for a session the host no longer holds). false: `events` are the ones after
     * the webview's `afterSeq` and are appended.
     */
    replace: z.boolean(),
    events: z.array(agentEventSchema),
    todos: z.array(todoSchema),
    running: z.boolean(),
    model: z.string(),
    contextWindow: count,
    /**
     * Optional transcript for sessions reopened from a log whose events are not available: the
     * webview renders these messages (before `events`) when `replace` is true.
     */
    messages: z.optional(z.array(z.looseObject({ id: z.string(), role: z.string() }))),
    /** The user's latest 👍/👎 of each answer of this session, by answer id. */
    ratings: z.optional(z.record(id, z.enum(['up', 'down']))),
  }),
  z.strictObject({
    type: z.literal('sessions'),
    items: z.array(sessionSummarySchema),
    currentId: z.optional(id),
  }),
  /** The effort picker: the chat's thinking level for its next turns. */
  z.strictObject({ type: z.literal('effort'), effort: effortLevel }),
  /** The mode picker's choices (built-in plan and custom agents) and the current one (null = default). */
  z.strictObject({
    type: z.literal('modes'),
    modes: z.array(
      z.strictObject({
        name: z.string().check(z.maxLength(64)),
        description: z.string().check(z.maxLength(MAX_TEXT)),
      }),
    ),
    current: z.nullable(z.string().check(z.maxLength(64))),
  }),
  z.strictObject({
    type: z.literal('fileCompletions'),
    query: z.string().check(z.maxLength(MAX_PATH)),
    items: z.array(relPath),
  }),
  z.strictObject({
    type: z.literal('review'),
    /** Every file with pending (not yet accepted/rejected) agent edits; an empty list = nothing pending. */
    files: z.array(z.strictObject({ path: relPath, hunks: z.array(hunkSchema) })),
    /** Hunks the user already accepted / rejected per path, so edit cards can say what became of them. */
    settled: z.optional(z.array(z.strictObject({ path: relPath, accepted: count, rejected: count }))),
  }),
  z.strictObject({
    type: z.literal('usage'),
    contextTokens: count,
    contextWindow: count,
    /** 0..100, the last call's prompt. */
    cacheHitPct: z.number().check(z.minimum(0), z.maximum(100)),
    /** 0..100, every prompt token of the session. */
    sessionCacheHitPct: z.optional(z.number().check(z.minimum(0), z.maximum(100))),
    /** Highest context pruning stage applied in the session (0 = none). */
    stage: z.optional(count),
    costUsd: z.number().check(z.nonnegative()),
  }),
  /**
   * Sent the moment a `submit` arrives, before it is acted on (starting a session can take a while, or
   * wait for the user in a dialog): the webview stops re-posting it. A webview that hears nothing
   * posts it again with the same key (the host runs a key once).
   */
  z.strictObject({ type: z.literal('submitReceived'), idempotencyKey: id }),
  /** Answer to a `submit`: accepted (the run or steering message is under way) or refused with a reason. */
  z.strictObject({
    type: z.literal('submitResult'),
    idempotencyKey: id,
    ok: z.boolean(),
    error: z.optional(z.string().check(z.maxLength(MAX_TEXT))),
    /** Answered without a run (a built-in slash command): no user message will follow for it. */
    settled: z.optional(z.literal(true)),
  }),
  /** Prefill the input (e.g. "Ask Keel About Selection" when the user should edit before sending). */
  z.strictObject({
    type: z.literal('setInput'),
    text: z.string().check(z.maxLength(MAX_TEXT)),
    mentions: z.array(relPath),
    /** Add to what is typed instead of replacing it ("Add Selection to Chat"). */
    append: z.optional(z.literal(true)),
  }),
  /** A host-side problem outside any session event (no API key, session failed to start). */
  z.strictObject({
    type: z.literal('hostNotice'),
    level: z.enum(['info', 'warn', 'error']),
    text: z.string().check(z.maxLength(MAX_TEXT)),
    code: z.optional(z.string().check(z.maxLength(100))),
    suggestion: z.optional(z.string().check(z.maxLength(MAX_TEXT))),
  }),
]);

// ---------- webview → host ----------

const reviewTarget = { path: relPath, hunkId: z.optional(id) };

export const webviewMessageSchema = z.discriminatedUnion('type', [
  /**
   * Sent on every load/re-show: "send me everything after this seq of this session". The host answers
   * with a `snapshot`: replace=false and the events after `afterSeq` when `sessionId` is its current
   * session, otherwise replace=true with all events of the current session. Also sent with
   * afterSeq 0 and no sessionId when the webview sees an event of a session it does not show.
   */
  z.strictObject({ type: z.literal('ready'), afterSeq: count, sessionId: z.optional(id) }),
  z.strictObject({
    type: z.literal('submit'),
    text: z.string().check(z.minLength(1), z.maxLength(MAX_TEXT)),
    mentions: z.array(relPath).check(z.maxLength(200)),
    /** A double-send with the same key runs once. */
    idempotencyKey: id,
    /** Pasted images (checked again by the host: context/images.ts). */
    images: z.optional(
      z
        .array(
          z.strictObject({
            mediaType: z.enum(IMAGE_MEDIA_TYPES),
            // A little over the limit gets through, so that the host can say how big it is.
            data: z.string().check(z.maxLength(MAX_IMAGE_BASE64 * 2)),
            name: z.optional(z.string().check(z.maxLength(260))),
          }),
        )
        .check(z.maxLength(MAX_IMAGES_PER_MESSAGE)),
    ),
  }),
  z.strictObject({ type: z.literal('stop') }),
  z.strictObject({ type: z.literal('stopJob'), id }),
  z.strictObject({ type: z.literal('newChat') }),
  z.strictObject({ type: z.literal('openSession'), id }),
  z.strictObject({ type: z.literal('listSessions') }),
  z.strictObject({ type: z.literal('accept'), ...reviewTarget }),
  z.strictObject({ type: z.literal('reject'), ...reviewTarget }),
  z.strictObject({ type: z.literal('acceptAll') }),
  z.strictObject({ type: z.literal('rejectAll') }),
  z.strictObject({ type: z.literal('openDiff'), path: relPath }),
  /** "Restore to before this": the files Keel changed from that prompt on (confirmed by the host). */
  z.strictObject({ type: z.literal('restoreBefore'), promptNumber: z.int().check(z.positive()) }),
  /** "Restore and edit this message": files back, the chat forked before it, its text in the input. */
  z.strictObject({ type: z.literal('forkBefore'), promptNumber: z.int().check(z.positive()) }),
  /** The memory diff card's buttons: keep the change, or undo it (restores the previous version). */
  z.strictObject({ type: z.literal('memoryDecision'), changeId: id, keep: z.boolean() }),
  /** The effort picker: the chat's thinking level from its next turn on (stored with the session). */
  z.strictObject({ type: z.literal('setEffort'), effort: effortLevel }),
  /** The mode picker: the main agent of the next chat (`plan`, a custom agent; null = Keel's own). */
  z.strictObject({ type: z.literal('setMode'), mode: z.nullable(z.string().check(z.maxLength(64))) }),
  /** A plan card's Start: a new chat with the default agent carries out this (edited) plan. */
  z.strictObject({
    type: z.literal('startPlan'),
    text: z.string().check(z.minLength(1), z.maxLength(MAX_TEXT)),
  }),
  /**
   * Open a workspace file at a line (paths in tool cards, `path:line` and file links in answers);
   * line and column are 1-based. The host refuses a path outside the workspace.
   */
  z.strictObject({
    type: z.literal('openFile'),
    path: relPath,
    line: z.optional(z.int().check(z.positive())),
    column: z.optional(z.int().check(z.positive())),
  }),
  z.strictObject({ type: z.literal('copyCode'), code: z.string().check(z.maxLength(MAX_CODE)) }),
  z.strictObject({ type: z.literal('insertCode'), code: z.string().check(z.maxLength(MAX_CODE)) }),
  z.strictObject({
    type: z.literal('requestFileCompletions'),
    query: z.string().check(z.maxLength(MAX_PATH)),
  }),
  /** "Run outside the sandbox…" on a SANDBOX_DENIED card: the host asks in a modal first. */
  z.strictObject({ type: z.literal('runOutsideSandbox'), toolUseId: id }),
  /** 👍/👎 on a finished answer (a later one replaces it); the host keeps it with the session. */
  z.strictObject({
    type: z.literal('feedback'),
    messageId: id,
    rating: z.enum(['up', 'down']),
    note: z.optional(z.string().check(z.maxLength(4000))),
  }),
]);

// ---------- types ----------

type HostMessageWire = z.infer<typeof hostMessageSchema>;
type Narrow<U extends HostMessageWire['type']> = Extract<HostMessageWire, { type: U }>;

/**
 * Snapshot as the host builds it: events, todos and messages typed as the core's own types (the
 * schema checks the envelope and the fields the UI reads; the fixtures in
 * test/unit/webviewProtocol.test.ts keep the two in step).
 */
export type SnapshotMessage = Omit<Narrow<'snapshot'>, 'events' | 'todos' | 'messages'> & {
  events: readonly AgentEvent[];
  todos: readonly TodoItem[];
  messages?: readonly AgentMessage[];
};

/** Host → webview. */
export type HostMessage =
  | { type: 'event'; event: AgentEvent }
  | SnapshotMessage
  | Exclude<HostMessageWire, { type: 'event' | 'snapshot' }>;
export type WebviewMessage = z.infer<typeof webviewMessageSchema>;
export type HostMessageType = HostMessage['type'];
export type WebviewMessageType = WebviewMessage['type'];
export type SessionSummary = z.infer<typeof sessionSummarySchema>;
export type ReviewHunk = z.infer<typeof hunkSchema>;
export type ReviewFile = Narrow<'review'>['files'][number];
export type SettledFile = NonNullable<Narrow<'review'>['settled']>[number];
export type UsageMessage = Narrow<'usage'>;

export type ParseResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: string };

function parseWith<T>(schema: z.ZodMiniType, data: unknown): ParseResult<T> {
  const result = schema.safeParse(data);
  if (!result.success) return { ok: false, error: z.prettifyError(result.error) };
  // The schema has checked every field the receiver reads; the declared type is the richer contract.
  return { ok: true, value: result.data as T };
}

/** Validate a message the webview received from the host. */
export function parseHostMessage(data: unknown): ParseResult<HostMessage> {
  return parseWith<HostMessage>(hostMessageSchema, data);
}

/** Validate a message the host received from the webview. */
export function parseWebviewMessage(data: unknown): ParseResult<WebviewMessage> {
  return parseWith<WebviewMessage>(webviewMessageSchema, data);
}

/** Validate one agent event (e.g. when replaying a log). */
export function parseAgentEvent(data: unknown): ParseResult<AgentEvent> {
  return parseWith<AgentEvent>(agentEventSchema, data);
}
