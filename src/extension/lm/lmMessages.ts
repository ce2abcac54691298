import type Anthropic from '@anthropic-ai/sdk';
import * as vscode from 'vscode';
import type { ModelRequest } from '../../agent/model/client.ts';

// Keel's request (Messages API shape) as `vscode.lm` messages. The API has no system role: the system
// text opens the first user message, unchanged from call to call, so the prefix stays byte-stable for
// a provider that caches identical prefixes. Thinking blocks do not cross (the API has no part for
// them) and cache breakpoints have no meaning there; both are dropped.

type UserPart = vscode.LanguageModelTextPart | vscode.LanguageModelToolResultPart;
type AssistantPart = vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart;

interface DataPartApi {
  image(data: Uint8Array, mimeType: string): unknown;
}

/** `LanguageModelDataPart` (images) is newer than the API Keel compiles against; use it where present. */
function imagePart(block: Anthropic.ImageBlockParam): vscode.LanguageModelTextPart | unknown {
  const api = (vscode as unknown as { LanguageModelDataPart?: DataPartApi }).LanguageModelDataPart;
  if (api && block.source.type === 'base64')
    return api.image(Buffer.from(block.source.data, 'base64'), block.source.media_type);
  return new vscode.LanguageModelTextPart('[an image was attached here; this model API cannot carry it]');
}

function toolResultContent(block: Anthropic.ToolResultBlockParam): unknown[] {
  const parts: unknown[] = [];
  if (block.is_error) parts.push(new vscode.LanguageModelTextPart('[tool error]'));
  if (typeof block.content === 'string') parts.push(new vscode.LanguageModelTextPart(block.content));
  else
    for (const c of block.content ?? []) {
      if (c.type === 'text') parts.push(new vscode.LanguageModelTextPart(c.text));
      else if (c.type === 'image') parts.push(imagePart(c));
    }
  return parts;
}

function userParts(content: Anthropic.MessageParam['content']): UserPart[] {
  if (typeof content === 'string') return [new vscode.LanguageModelTextPart(content)];
  const parts: UserPart[] = [];
  for (const block of content) {
    if (block.type === 'text') parts.push(new vscode.LanguageModelTextPart(block.text));
    else if (block.type === 'image') parts.push(imagePart(block) as UserPart);
    else if (block.type === 'tool_result')
      parts.push(new vscode.LanguageModelToolResultPart(block.tool_use_id, toolResultContent(block)));
  }
  return parts;
}

function assistantParts(content: Anthropic.MessageParam['content']): AssistantPart[] {
  if (typeof content === 'string') return [new vscode.LanguageModelTextPart(content)];
  const parts: AssistantPart[] = [];
  for (const block of content) {
    if (block.type === 'text') parts.push(new vscode.LanguageModelTextPart(block.text));
    else if (block.type === 'tool_use')
      parts.push(new vscode.LanguageModelToolCallPart(block.id, block.name, block.input as object));
  }
  return parts;
}

export function toLmMessages(request: ModelRequest): vscode.LanguageModelChatMessage[] {
  const system = request.system.map((b) => b.text).join('\n\n');
  const out: vscode.LanguageModelChatMessage[] = [];
  for (const message of request.messages) {
    if (message.role === 'assistant') {
      const parts = assistantParts(message.content);
      if (parts.length > 0) out.push(vscode.LanguageModelChatMessage.Assistant(parts));
      continue;
    }
    const parts = userParts(message.content);
    if (out.length === 0 && system) parts.unshift(new vscode.LanguageModelTextPart(system));
    out.push(vscode.LanguageModelChatMessage.User(parts));
  }
  if (out.length === 0 && system) out.push(vscode.LanguageModelChatMessage.User(system));
  return out;
}

export function toLmTools(tools: readonly Anthropic.Tool[]): vscode.LanguageModelChatTool[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description ?? '',
    inputSchema: t.input_schema as object,
  }));
}
