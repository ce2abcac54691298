import type Anthropic from '@anthropic-ai/sdk';
import * as vscode from 'vscode';
import { IMAGE_MEDIA_TYPES, type ImageMediaType, MAX_IMAGE_BYTES } from '../../agent/context/images.ts';

// The other direction of lmMessages.ts: what another extension (or VS Code's own chat) sends to one of
// Keel's models through `vscode.lm`, as a Messages API request. Text, tool calls, tool results and
// images cross; anything else (parts of newer API versions) is named in a short note, never dropped
// silently. The Messages API wants alternating roles starting with a user turn, so consecutive turns
// of one role are merged and a leading assistant turn gets an empty user turn before it.

type Block = Anthropic.ContentBlockParam;

/** A message as a provider receives it (`LanguageModelChatRequestMessage`, newer than Keel's typings). */
export interface LmRequestMessage {
  readonly role: vscode.LanguageModelChatMessageRole;
  readonly content: readonly unknown[];
}

interface DataPartLike {
  readonly mimeType: string;
  readonly data: Uint8Array;
}

/** `LanguageModelDataPart` is newer than the API Keel compiles against: recognised by shape. */
function asDataPart(part: unknown): DataPartLike | undefined {
  if (!part || typeof part !== 'object') return undefined;
  const p = part as Partial<DataPartLike>;
  return typeof p.mimeType === 'string' && p.data instanceof Uint8Array ? (p as DataPartLike) : undefined;
}

function imageOrNote(data: DataPartLike): Anthropic.ImageBlockParam | Anthropic.TextBlockParam {
  const type = data.mimeType.toLowerCase();
  if (!(IMAGE_MEDIA_TYPES as readonly string[]).includes(type))
    return {
      type: 'text',
      text: `[a ${data.mimeType} attachment was left out: this model takes images only]`,
    };
  if (data.data.byteLength > MAX_IMAGE_BYTES)
    return { type: 'text', text: `[an image over ${MAX_IMAGE_BYTES / 1024 / 1024} MB was left out]` };
  return {
    type: 'image',
    source: {
      type: 'base64',
      media_type: type as ImageMediaType,
      data: Buffer.from(data.data).toString('base64'),
    },
  };
}

function toolResultBlock(part: vscode.LanguageModelToolResultPart): Anthropic.ToolResultBlockParam {
  const content: (Anthropic.TextBlockParam | Anthropic.ImageBlockParam)[] = [];
  for (const c of part.content) {
    if (c instanceof vscode.LanguageModelTextPart) content.push({ type: 'text', text: c.value });
    else if (asDataPart(c)) content.push(imageOrNote(asDataPart(c)!));
  }
  return { type: 'tool_result', tool_use_id: part.callId, content };
}

function blocksOf(message: LmRequestMessage): Block[] {
  const blocks: Block[] = [];
  for (const part of message.content) {
    if (part instanceof vscode.LanguageModelTextPart) {
      if (part.value) blocks.push({ type: 'text', text: part.value });
    } else if (part instanceof vscode.LanguageModelToolCallPart) {
      blocks.push({ type: 'tool_use', id: part.callId, name: part.name, input: part.input });
    } else if (part instanceof vscode.LanguageModelToolResultPart) {
      blocks.push(toolResultBlock(part));
    } else if (asDataPart(part)) {
      const data = asDataPart(part)!;
      // Data parts that are not images (cache hints, JSON) carry nothing the model reads.
      if (data.mimeType.startsWith('image/')) blocks.push(imageOrNote(data));
    }
  }
  return blocks;
}

const SYSTEM_ROLE = 3; // LanguageModelChatMessageRole.System (not in the stable typings yet)

export interface ConvertedRequest {
  readonly system: Anthropic.TextBlockParam[];
  readonly messages: Anthropic.MessageParam[];
}

export function fromLmMessages(messages: readonly LmRequestMessage[]): ConvertedRequest {
  const system: Anthropic.TextBlockParam[] = [];
  const out: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  for (const message of messages) {
    const blocks = blocksOf(message);
    if ((message.role as number) === SYSTEM_ROLE) {
      for (const b of blocks) if (b.type === 'text') system.push(b);
      continue;
    }
    if (blocks.length === 0) continue;
    const role = message.role === vscode.LanguageModelChatMessageRole.Assistant ? 'assistant' : 'user';
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  }
  if (out[0]?.role === 'assistant')
    out.unshift({ role: 'user', content: [{ type: 'text', text: '(continue)' }] });
  return { system, messages: out };
}

/** VS Code's tool list as the Messages API's (a tool without a schema takes an empty object). */
export function fromLmTools(tools: readonly vscode.LanguageModelChatTool[] | undefined): Anthropic.Tool[] {
  return (tools ?? []).map((t) => ({
    name: t.name,
    description: t.description,
    input_schema: (t.inputSchema as Anthropic.Tool.InputSchema | undefined) ?? {
      type: 'object',
      properties: {},
    },
  }));
}
