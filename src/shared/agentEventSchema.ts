import * as z from 'zod/mini';
import type { AgentEventType } from '../agent/events.ts';
import { count, id, MAX_CODE, MAX_PATH, MAX_TEXT } from './protocolFields.ts';

// Agent events as they cross to the webview (host → webview, inside `event` and `snapshot`), checked
// loosely: the envelope ({type, seq, sessionId, ts}) strictly, plus the fields the UI reads; anything
// else passes through so the protocol does not have to mirror every event field.

/** Every AgentEvent type; the compile-time check below fails if events.ts grows a new one. */
export const AGENT_EVENT_TYPES = [
  'agent_start',
  'turn_start',
  'message_start',
  'message_delta',
  'message_end',
  'user_message',
  'tool_start',
  'tool_update',
  'tool_end',
  'turn_end',
  'agent_end',
  'retry',
  'model_call',
  'discarded',
  'todo',
  'message_appended',
  'notice',
  'error',
  'memory_changed',
  'job',
  'subagent_start',
  'subagent_tool',
  'subagent_end',
  'plan',
  'model_switch',
  'effort_change',
  'session_reset',
  'auto_classifier',
] as const satisfies readonly AgentEventType[];

type MissingEventTypes = Exclude<AgentEventType, (typeof AGENT_EVENT_TYPES)[number]>;
const exhaustive: [MissingEventTypes] extends [never] ? true : MissingEventTypes = true;
void exhaustive;

// ---------- agent events (host → webview, inside `event` and `snapshot`) ----------

const envelope = {
  seq: count,
  sessionId: id,
  ts: z.number(),
};

const toolResultSchema = z.looseObject({
  status: z.enum(['success', 'partial', 'error']),
  text: z.string(),
  error: z.optional(z.looseObject({ code: z.string(), message: z.string(), suggestion: z.string() })),
  stats: z.looseObject({}),
  ui: z.optional(z.record(z.string(), z.unknown())),
});

const assistantBlockSchema = z.looseObject({ type: z.string() });

export const todoSchema = z.looseObject({
  id: z.string(),
  content: z.string(),
  status: z.enum(['pending', 'in_progress', 'completed']),
});

const ev = <T extends (typeof AGENT_EVENT_TYPES)[number], S extends z.core.$ZodLooseShape>(
  type: T,
  shape: S,
) => z.looseObject({ type: z.literal(type), ...envelope, ...shape });

export const agentEventSchema = z.discriminatedUnion('type', [
  ev('agent_start', { runId: z.string(), prompt: z.string() }),
  ev('turn_start', { turn: z.number() }),
  ev('message_start', { messageId: z.string(), model: z.string() }),
  ev('message_delta', {
    messageId: z.string(),
    blockIndex: count,
    kind: z.enum(['text', 'thinking', 'tool_input']),
    delta: z.string(),
  }),
  ev('message_end', {
    message: z.looseObject({
      id: z.string(),
      role: z.literal('assistant'),
      content: z.array(assistantBlockSchema),
    }),
  }),
  ev('user_message', {
    message: z.looseObject({
      id: z.string(),
      role: z.literal('user'),
      text: z.string(),
      mentions: z.optional(z.array(z.string())),
      steering: z.optional(z.boolean()),
    }),
    queued: z.boolean(),
  }),
  ev('tool_start', { toolUseId: z.string(), name: z.string(), input: z.unknown() }),
  ev('tool_update', { toolUseId: z.string(), text: z.string() }),
  ev('tool_end', {
    toolUseId: z.string(),
    name: z.string(),
    result: toolResultSchema,
    durationMs: z.number(),
  }),
  ev('turn_end', { turn: z.number(), stopReason: z.nullable(z.string()) }),
  ev('agent_end', {
    runId: z.string(),
    status: z.enum(['finished', 'failed', 'aborted', 'max_turns', 'stopped']),
    finalText: z.string(),
    error: z.optional(z.string()),
  }),
  ev('retry', { attempt: z.number(), delayMs: z.number(), reason: z.string(), model: z.string() }),
  ev('model_call', {
    record: z.looseObject({
      est_tokens: z.number(),
      context_window: z.number(),
      cache_read: z.number(),
      cache_write: z.number(),
      input: z.number(),
      output: z.number(),
      cost_usd: z.number(),
      model: z.string(),
    }),
  }),
  ev('discarded', { model: z.string(), content: z.array(assistantBlockSchema), reason: z.string() }),
  ev('todo', { todos: z.array(todoSchema) }),
  ev('message_appended', { message: z.looseObject({ id: z.string(), role: z.string() }) }),
  ev('notice', { level: z.enum(['info', 'warn', 'error']), text: z.string() }),
  ev('error', { code: z.string(), message: z.string() }),
  ev('memory_changed', {
    change: z.looseObject({
      id,
      scope: z.enum(['workspace', 'user']),
      before: z.nullable(z.string().check(z.maxLength(MAX_CODE))),
      after: z.nullable(z.string().check(z.maxLength(MAX_CODE))),
      origin: z.string(),
      summary: z.string().check(z.maxLength(MAX_TEXT)),
    }),
  }),
  ev('job', {
    job: z.looseObject({
      id: z.string(),
      command: z.string().check(z.maxLength(MAX_CODE)),
      status: z.enum(['running', 'exited', 'killed', 'failed']),
      exitCode: z.nullable(z.number()),
      runId: z.string(),
    }),
  }),
  ev('subagent_start', {
    toolUseId: z.string(),
    agentId: z.string(),
    description: z.string().check(z.maxLength(MAX_TEXT)),
    /** `explore`, `general`, or a custom agent's name. */
    mode: z.string().check(z.maxLength(200)),
    logPath: z.string(),
  }),
  ev('subagent_tool', {
    toolUseId: z.string(),
    agentId: z.string(),
    phase: z.enum(['start', 'end']),
    name: z.string(),
    input: z.optional(z.unknown()),
    status: z.optional(z.enum(['success', 'partial', 'error'])),
    errorCode: z.optional(z.string()),
  }),
  ev('plan', {
    text: z.string().check(z.maxLength(MAX_TEXT)),
    steps: z.array(z.string().check(z.maxLength(MAX_TEXT))),
    file: z.optional(z.string().check(z.maxLength(MAX_PATH))),
  }),
  ev('model_switch', { model: z.string().check(z.maxLength(200)) }),
  ev('effort_change', { effort: z.enum(['low', 'medium', 'high', 'max', 'off']) }),
  ev('session_reset', {
    oldSessionId: id,
    newSessionId: id,
    reason: z.string().check(z.maxLength(MAX_TEXT)),
    compactions: count,
    logPath: z.string().check(z.maxLength(MAX_PATH)),
  }),
  ev('auto_classifier', {
    toolUseId: z.string(),
    command: z.string().check(z.maxLength(MAX_TEXT)),
    decision: z.enum(['allow', 'escalate']),
    reason: z.string().check(z.maxLength(MAX_TEXT)),
    model: z.string().check(z.maxLength(200)),
    latencyMs: z.number(),
  }),
  ev('subagent_end', {
    toolUseId: z.string(),
    agentId: z.string(),
    status: z.enum(['finished', 'failed', 'aborted', 'max_turns', 'stopped']),
    turns: z.number(),
    costUsd: z.number(),
  }),
]);
