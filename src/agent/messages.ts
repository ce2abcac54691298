import type Anthropic from '@anthropic-ai/sdk';
import { checkImage, type ImageAttachment } from './context/images.ts';
import type { ToolResult } from './tools/protocol.ts';

// App-level messages (what the session log and the UIs hold) vs. the LLM message list (what the
// model sees). `toLlm()` is the only bridge; kinds the model must not see simply don't map.

export type AssistantBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'thinking'; readonly thinking: string; readonly signature: string }
  | { readonly type: 'redacted_thinking'; readonly data: string }
  | {
      readonly type: 'tool_use';
      readonly id: string;
      readonly name: string;
      readonly input: Record<string, unknown>;
      /** Set when the model's tool input was not valid JSON; the raw text it sent. */
      readonly invalidJson?: string;
      /** max_tokens cut the reply in the middle of this call's input: it is never run. */
      readonly truncated?: boolean;
    };

export interface Usage {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  /** The part of cacheWrite written with a 1-hour TTL (priced at 2x input instead of 1.25x). */
  readonly cacheWrite1h?: number;
}

interface Base {
  readonly id: string;
  readonly ts: number;
}

export interface UserMessage extends Base {
  readonly role: 'user';
  readonly text: string;
  /** Sent while a run was in progress (P7). */
  readonly steering?: boolean;
  /** Files the user @-mentioned; rendered as a reminder to read them, never their content (P3). */
  readonly mentions?: readonly string[];
  /** Images the user attached (a pasted screenshot): image blocks of this message only (P1). */
  readonly images?: readonly ImageAttachment[];
}

export interface AssistantMessage extends Base {
  readonly role: 'assistant';
  readonly content: readonly AssistantBlock[];
  readonly model: string;
  readonly stopReason: string | null;
  readonly usage: Usage;
}

export interface ToolResultMessage extends Base {
  readonly role: 'tool_result';
  readonly toolUseId: string;
  readonly toolName: string;
  readonly result: ToolResult;
  /** The exact text the model sees (deterministic rendering, possibly pruned later as a new view). */
  readonly content: string;
  readonly isError: boolean;
  /** Images the model sees after `content` (Read of an image); dropped once pruning edits the result. */
  readonly images?: readonly ImageAttachment[];
}

/** Runtime notes for the model (recap, loop warnings, skill reminders): appended as user text. */
export interface ReminderMessage extends Base {
  readonly role: 'reminder';
  readonly text: string;
  readonly source: string;
}

/** Immutable compaction summary standing in for everything before it (P2/P4). */
export interface SummaryMessage extends Base {
  readonly role: 'summary';
  readonly text: string;
  /** Ids of the messages this summary replaces (they stay in the log, P8). */
  readonly replaces: readonly string[];
  readonly archivePath: string;
}

/** UI-only: never reaches the model. */
export interface NoticeMessage extends Base {
  readonly role: 'notice';
  readonly level: 'info' | 'warn' | 'error';
  readonly text: string;
}

/**
 * A persisted change to the model's VIEW of older messages (pruning stages 1-2). The transcript
 * itself never changes (P2/P8); the context engine applies these when it builds a request.
 */
export interface ContextEditMessage extends Base {
  readonly role: 'context_edit';
  readonly stage: number;
  readonly edits: readonly { readonly messageId: string; readonly content: string }[];
}

export type AgentMessage =
  | ContextEditMessage
  | UserMessage
  | AssistantMessage
  | ToolResultMessage
  | ReminderMessage
  | SummaryMessage
  | NoticeMessage;

export type LlmMessage = Anthropic.MessageParam;
type UserBlock = Anthropic.ContentBlockParam;

export function renderUserText(message: UserMessage): string {
  if (!message.mentions?.length) return message.text;
  const list = message.mentions.map((p) => `- ${p}`).join('\n');
  return `${message.text}\n\n<system-reminder>\nThe user referenced these files. Read them with the Read tool before relying on their content:\n${list}\n</system-reminder>`;
}

function assistantToLlm(message: AssistantMessage): Anthropic.ContentBlockParam[] {
  const blocks: Anthropic.ContentBlockParam[] = [];
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
        if (block.text.length > 0) blocks.push({ type: 'text', text: block.text });
        break;
      case 'thinking':
        // Sent back exactly as received. One cut off by max_tokens before its signature arrived cannot
        // be: the API rejects an unsigned block (the log keeps it; no tool call can follow it).
        if (block.signature)
          blocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
        break;
      case 'redacted_thinking':
        blocks.push({ type: 'redacted_thinking', data: block.data });
        break;
      case 'tool_use':
        blocks.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
        break;
    }
  }
  return blocks;
}

// Messages are immutable, so the model message built from an assistant reply or from a run of user-side
// items is reused while that run is unchanged: a request at 100k tokens then hands the serialiser the
// same objects as the previous call for everything but its end (model/requestBody.ts caches their bytes).
const assistantLlm = new WeakMap<AssistantMessage, LlmMessage | null>();
const userRunLlm = new WeakMap<AgentMessage, { members: readonly AgentMessage[]; message: LlmMessage }>();

// Checked again here: a message read back from a log file is not trusted to hold what was checked.
function imageBlocks(
  images: readonly ImageAttachment[] | undefined,
): (Anthropic.ImageBlockParam | Anthropic.TextBlockParam)[] {
  return (images ?? []).map((image) => {
    const checked = checkImage(image);
    if (!checked.ok) return { type: 'text', text: `[An attached image was left out: ${checked.error}]` };
    const { mediaType, data } = checked.image;
    return { type: 'image', source: { type: 'base64', media_type: mediaType, data } };
  });
}

/** A user message's images (before its text, as the API recommends), then its text. */
function userMessageBlocks(message: UserMessage): UserBlock[] {
  return [...imageBlocks(message.images), { type: 'text', text: renderUserText(message) }];
}

/** A tool result's content: its text, then its images (the API takes image blocks in a tool_result). */
function toolResultContent(message: ToolResultMessage): Anthropic.ToolResultBlockParam['content'] {
  // The API rejects some empty blocks; an explicit marker also tells the model "nothing".
  const text = message.content.length > 0 ? message.content : '(no output)';
  if (!message.images?.length) return text;
  return [{ type: 'text', text }, ...imageBlocks(message.images)];
}

function userBlock(message: AgentMessage): UserBlock | undefined {
  switch (message.role) {
    case 'user':
      return { type: 'text', text: renderUserText(message) };
    case 'reminder':
      return { type: 'text', text: `<system-reminder>\n${message.text}\n</system-reminder>` };
    case 'summary':
      return { type: 'text', text: message.text };
    case 'tool_result':
      return {
        type: 'tool_result',
        tool_use_id: message.toolUseId,
        content: toolResultContent(message),
        ...(message.isError ? { is_error: true } : {}),
      };
    default:
      return undefined;
  }
}

function sameMembers(a: readonly AgentMessage[], b: readonly AgentMessage[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One user message from consecutive user-side items: tool_result blocks first, as the API requires. */
function userRunToLlm(members: readonly AgentMessage[]): LlmMessage {
  const first = members[0]!;
  const cached = userRunLlm.get(first);
  if (cached && sameMembers(cached.members, members)) return cached.message;
  const results: UserBlock[] = [];
  const rest: UserBlock[] = [];
  for (const member of members) {
    if (member.role === 'user' && member.images?.length) {
      rest.push(...userMessageBlocks(member));
      continue;
    }
    const block = userBlock(member)!;
    (block.type === 'tool_result' ? results : rest).push(block);
  }
  const message: LlmMessage = { role: 'user', content: [...results, ...rest] };
  userRunLlm.set(first, { members, message });
  return message;
}

/**
 * Pure conversion of the app-level transcript to the Messages API list.
 * Consecutive user-side items (tool results, reminders, user text) merge into one user message,
 * tool_result blocks first as the API requires. Notices are dropped. The returned objects may be
 * shared with earlier calls: never mutate them.
 */
export function toLlm(messages: readonly AgentMessage[]): LlmMessage[] {
  const out: LlmMessage[] = [];
  let run: AgentMessage[] = [];
  const flushUser = () => {
    if (run.length === 0) return;
    out.push(userRunToLlm(run));
    run = [];
  };
  for (const message of messages) {
    switch (message.role) {
      case 'user':
      case 'reminder':
      case 'summary':
      case 'tool_result':
        run.push(message);
        break;
      case 'assistant': {
        let llm = assistantLlm.get(message);
        if (llm === undefined) {
          const blocks = assistantToLlm(message);
          llm = blocks.length === 0 ? null : { role: 'assistant', content: blocks };
          assistantLlm.set(message, llm);
        }
        if (llm === null) break;
        flushUser();
        out.push(llm);
        break;
      }
      case 'notice':
      case 'context_edit':
        break;
    }
  }
  flushUser();
  return out;
}

export function assistantText(message: AssistantMessage): string {
  return message.content
    .filter((b): b is Extract<AssistantBlock, { type: 'text' }> => b.type === 'text')
    .map((b) => b.text)
    .join('');
}

export function toolUses(message: AssistantMessage): Extract<AssistantBlock, { type: 'tool_use' }>[] {
  return message.content.filter(
    (b): b is Extract<AssistantBlock, { type: 'tool_use' }> => b.type === 'tool_use',
  );
}
