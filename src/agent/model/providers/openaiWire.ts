import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import type { ModelRequest } from '../client.ts';

// Keel's request (Messages API shapes, messages.ts) → the OpenAI wire formats, Chat Completions and
// Responses. Pure and deterministic: the same request gives the same bytes, so the tools + system
// that lead every request stay byte-identical call after call (P1) — OpenAI-compatible servers cache
// identical prompt prefixes on their own (`cached_tokens`), nothing to mark.
//
// What does not map: thinking blocks are dropped (another provider's reasoning cannot be sent back,
// and a chat model's own reasoning is not returned in a form that could be); cache_control markers are
// dropped (caching is automatic); `is_error` on a tool result has no field (the rendered result already
// starts with "Error [CODE]"); images in a tool result go in a user message right after the results.

type ChatMessage = OpenAI.Chat.ChatCompletionMessageParam;
type ChatTool = OpenAI.Chat.ChatCompletionFunctionTool;
type ChatPart = OpenAI.Chat.ChatCompletionContentPartText | OpenAI.Chat.ChatCompletionContentPartImage;
type InputItem = OpenAI.Responses.ResponseInputItem;
type InputPart = OpenAI.Responses.ResponseInputText | OpenAI.Responses.ResponseInputImage;

export function systemText(system: readonly Anthropic.TextBlockParam[]): string {
  return system.map((b) => b.text).join('\n\n');
}

// The tools list is frozen per session (one array object): its wire form is made once.
const chatToolsOf = new WeakMap<readonly Anthropic.Tool[], ChatTool[]>();
const responseToolsOf = new WeakMap<readonly Anthropic.Tool[], OpenAI.Responses.FunctionTool[]>();

export function chatTools(tools: readonly Anthropic.Tool[]): ChatTool[] {
  let out = chatToolsOf.get(tools);
  if (!out) {
    out = tools.map((t) => ({
      type: 'function' as const,
      function: {
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.input_schema as Record<string, unknown>,
      },
    }));
    chatToolsOf.set(tools, out);
  }
  return out;
}

export function responseTools(tools: readonly Anthropic.Tool[]): OpenAI.Responses.FunctionTool[] {
  let out = responseToolsOf.get(tools);
  if (!out) {
    out = tools.map((t) => ({
      type: 'function' as const,
      name: t.name,
      description: t.description ?? null,
      parameters: t.input_schema as Record<string, unknown>,
      // Keel validates every input itself (zod) and answers INVALID_PARAM; strict mode would reject
      // the optional fields of its schemas.
      strict: false,
    }));
    responseToolsOf.set(tools, out);
  }
  return out;
}

type Block = Anthropic.ContentBlockParam;

function blocksOf(content: Anthropic.MessageParam['content']): readonly Block[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function dataUrl(source: Anthropic.ImageBlockParam['source']): string | undefined {
  if (source.type === 'base64') return `data:${source.media_type};base64,${source.data}`;
  if (source.type === 'url') return source.url;
  return undefined;
}

/** A tool result's text, and its images (which a tool message cannot carry). */
function resultParts(block: Anthropic.ToolResultBlockParam): { text: string; images: string[] } {
  const content = block.content;
  if (content === undefined) return { text: '(no output)', images: [] };
  if (typeof content === 'string') return { text: content, images: [] };
  const texts: string[] = [];
  const images: string[] = [];
  for (const part of content) {
    if (part.type === 'text') texts.push(part.text);
    else if (part.type === 'image') {
      const url = dataUrl(part.source);
      if (url) images.push(url);
    }
  }
  return { text: texts.join('\n') || '(no output)', images };
}

// Messages are immutable and reused call after call (messages.ts): each converts once.
const chatOf = new WeakMap<Anthropic.MessageParam, ChatMessage[]>();
const inputOf = new WeakMap<Anthropic.MessageParam, InputItem[]>();

function chatMessage(message: Anthropic.MessageParam): ChatMessage[] {
  const cached = chatOf.get(message);
  if (cached) return cached;
  const out: ChatMessage[] = [];
  if (message.role === 'assistant') {
    const text: string[] = [];
    const calls: OpenAI.Chat.ChatCompletionMessageFunctionToolCall[] = [];
    for (const b of blocksOf(message.content)) {
      if (b.type === 'text') text.push(b.text);
      else if (b.type === 'tool_use')
        calls.push({
          id: b.id,
          type: 'function',
          function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
        });
    }
    if (text.length > 0 || calls.length > 0)
      out.push({
        role: 'assistant',
        content: text.length > 0 ? text.join('') : null,
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      });
  } else {
    const parts: ChatPart[] = [];
    for (const b of blocksOf(message.content)) {
      if (b.type === 'tool_result') {
        const { text, images } = resultParts(b);
        out.push({ role: 'tool', tool_call_id: b.tool_use_id, content: text });
        for (const url of images) parts.push({ type: 'image_url', image_url: { url } });
      } else if (b.type === 'text') parts.push({ type: 'text', text: b.text });
      else if (b.type === 'image') {
        const url = dataUrl(b.source);
        if (url) parts.push({ type: 'image_url', image_url: { url } });
      }
    }
    if (parts.length > 0)
      out.push({
        role: 'user',
        content: parts.length === 1 && parts[0]!.type === 'text' ? parts[0]!.text : parts,
      });
  }
  chatOf.set(message, out);
  return out;
}

export function chatMessages(request: ModelRequest): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = systemText(request.system);
  if (system) out.push({ role: 'system', content: system });
  for (const m of request.messages) out.push(...chatMessage(m));
  return out;
}

function inputItems(message: Anthropic.MessageParam): InputItem[] {
  const cached = inputOf.get(message);
  if (cached) return cached;
  const out: InputItem[] = [];
  if (message.role === 'assistant') {
    for (const b of blocksOf(message.content)) {
      if (b.type === 'text' && b.text) out.push({ type: 'message', role: 'assistant', content: b.text });
      else if (b.type === 'tool_use')
        out.push({
          type: 'function_call',
          call_id: b.id,
          name: b.name,
          arguments: JSON.stringify(b.input ?? {}),
        });
    }
  } else {
    const parts: InputPart[] = [];
    for (const b of blocksOf(message.content)) {
      if (b.type === 'tool_result') {
        const { text, images } = resultParts(b);
        out.push({ type: 'function_call_output', call_id: b.tool_use_id, output: text });
        for (const url of images) parts.push({ type: 'input_image', image_url: url, detail: 'auto' });
      } else if (b.type === 'text') parts.push({ type: 'input_text', text: b.text });
      else if (b.type === 'image') {
        const url = dataUrl(b.source);
        if (url) parts.push({ type: 'input_image', image_url: url, detail: 'auto' });
      }
    }
    if (parts.length > 0) out.push({ role: 'user', content: parts });
  }
  inputOf.set(message, out);
  return out;
}

export function responseInput(request: ModelRequest): InputItem[] {
  return request.messages.flatMap(inputItems);
}
