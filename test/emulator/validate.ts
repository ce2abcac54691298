import type { z } from 'zod';
import { signThinking, verifyRedacted } from './ids.ts';
import { type ContentBlockIn, type MessageIn, type MessagesRequest, MessagesRequestSchema } from './types.ts';

export type Validation = { ok: true; request: MessagesRequest } | { ok: false; message: string };

export const MAX_CACHE_CONTROL_BLOCKS = 4;
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** Checks a /v1/messages body the way the real API does; the message mimics the API's wording. */
export function validateRequest(body: unknown): Validation {
  const parsed = MessagesRequestSchema.safeParse(body, { reportInput: true });
  if (!parsed.success) return { ok: false, message: formatIssue(parsed.error.issues[0]) };
  const req = parsed.data;
  const message =
    checkTools(req) ??
    checkSystem(req) ??
    checkMessages(req.messages) ??
    checkImageCount(req.messages) ??
    checkPairing(req.messages) ??
    checkCacheControlCount(req) ??
    checkCacheTtlOrder(req) ??
    checkThinkingConfig(req);
  return message === undefined ? { ok: true, request: req } : { ok: false, message };
}

function formatIssue(issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return 'invalid request';
  const path = issue.path.join('.');
  const text =
    issue.code === 'invalid_type' && issue.input === undefined
      ? 'Field required'
      : issue.code === 'invalid_type'
        ? `Input should be a valid ${issue.expected === 'int' ? 'integer' : issue.expected}`
        : issue.message;
  return path ? `${path}: ${text}` : text;
}

export function blocksOf(content: string | ContentBlockIn[]): ContentBlockIn[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

function checkTools(req: MessagesRequest): string | undefined {
  const seen = new Set<string>();
  for (const [i, tool] of (req.tools ?? []).entries()) {
    if (seen.has(tool.name)) return 'tools: Tool names must be unique.';
    seen.add(tool.name);
    // Server tools (bash_20250124, web_search_…) carry a versioned type and no schema.
    if (tool.type !== undefined && tool.type !== 'custom') continue;
    if (!TOOL_NAME.test(tool.name)) {
      return `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`;
    }
    const schema = tool['input_schema'];
    if (schema === undefined) return `tools.${i}.custom.input_schema: Field required`;
    if (typeof schema !== 'object' || schema === null || (schema as { type?: unknown }).type !== 'object') {
      return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
    }
  }
  return undefined;
}

function checkSystem(req: MessagesRequest): string | undefined {
  if (typeof req.system === 'string' || req.system === undefined) return undefined;
  for (const [j, block] of req.system.entries()) {
    if (block.type !== 'text') return `system.${j}.type: Input should be 'text'`;
    if (typeof block['text'] !== 'string') return `system.${j}.text: Field required`;
    if (block['text'] === '') return 'system: text content blocks must be non-empty';
  }
  return undefined;
}

function checkTextBlock(block: ContentBlockIn, path: string): string | undefined {
  if (typeof block['text'] !== 'string') return `${path}.text: Field required`;
  if (block['text'] === '') return 'messages: text content blocks must be non-empty';
  return undefined;
}

function checkMessages(messages: MessageIn[]): string | undefined {
  if (messages.length === 0) return 'messages: at least one message is required';
  for (const [i, msg] of messages.entries()) {
    if (msg.role !== 'user' && msg.role !== 'assistant') {
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    }
  }
  if (messages[0]?.role !== 'user') return 'messages: first message must use the "user" role';
  const toolUseIds = new Set<string>();
  for (const [i, msg] of messages.entries()) {
    const isFinal = i === messages.length - 1;
    const empty = typeof msg.content === 'string' ? msg.content === '' : msg.content.length === 0;
    if (empty && !(isFinal && msg.role === 'assistant')) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    for (const [j, block] of blocksOf(msg.content).entries()) {
      const path = `messages.${i}.content.${j}`;
      const problem = checkBlock(block, path, msg.role, toolUseIds);
      if (problem) return problem;
    }
    if (isFinal && msg.role === 'assistant') {
      const last = blocksOf(msg.content).at(-1);
      if (last?.type === 'text' && typeof last['text'] === 'string' && /\s$/.test(last['text'])) {
        return 'messages: final assistant content cannot end with trailing whitespace';
      }
    }
  }
  return undefined;
}

/** Tool-result content kinds the API takes besides text and images (not checked further here). */
const TOOL_RESULT_OTHER = ['document', 'search_result', 'tool_reference'];
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
const MAGIC: Record<string, (b: Buffer) => boolean> = {
  'image/png': (b) => b.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/gif': (b) => b.subarray(0, 4).toString('latin1') === 'GIF8',
  'image/webp': (b) =>
    b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
};

/** An image block as the API checks it: base64 source, one of four media types, at most 5 MB, bytes that match. */
function checkImageBlock(block: ContentBlockIn, path: string, role: string): string | undefined {
  if (role !== 'user') return `${path}: image blocks may only appear in user messages`;
  const source = block['source'] as Record<string, unknown> | undefined;
  if (!source || typeof source !== 'object') return `${path}.source: Field required`;
  if (source['type'] !== 'base64') return `${path}.source.type: Input should be 'base64'`;
  const mediaType = source['media_type'];
  if (typeof mediaType !== 'string' || !IMAGE_TYPES.includes(mediaType))
    return `${path}.source.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
  const data = source['data'];
  if (typeof data !== 'string' || data.length === 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data))
    return `${path}.source.base64: invalid base64 data`;
  const bytes = Buffer.from(data, 'base64');
  if (bytes.length > 5 * 1024 * 1024) return `${path}.source.base64: image exceeds 5 MB maximum`;
  if (!MAGIC[mediaType]!(bytes)) return `${path}: Image does not match the provided media type ${mediaType}`;
  const side = imageSide(bytes, mediaType);
  if (side === undefined) return `${path}: Could not process image`;
  if (side > 8000) return `${path}: image dimensions exceed max allowed size: 8000 pixels`;
  return undefined;
}

/** Per request: at most 100 images, and past 20 none over 2000 px a side (the API's wording). */
function checkImageCount(messages: MessageIn[]): string | undefined {
  const images: Array<{ path: string; block: ContentBlockIn }> = [];
  for (const [i, msg] of messages.entries()) {
    for (const [j, block] of blocksOf(msg.content).entries()) {
      if (block.type === 'image') images.push({ path: `messages.${i}.content.${j}.image`, block });
      const inner = block.type === 'tool_result' ? block['content'] : undefined;
      if (Array.isArray(inner))
        for (const [k, item] of inner.entries())
          if ((item as ContentBlockIn)?.type === 'image')
            images.push({ path: `messages.${i}.content.${j}.tool_result.content.${k}.image`, block: item });
    }
  }
  if (images.length > 100) return `Too many images in request (${images.length}). Maximum is 100.`;
  if (images.length <= 20) return undefined;
  for (const { path, block } of images) {
    const source = block['source'] as { data?: string; media_type?: string };
    const side = imageSide(Buffer.from(source.data ?? '', 'base64'), source.media_type ?? '');
    if ((side ?? 0) > 2000)
      return `${path}.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels`;
  }
  return undefined;
}

/** The longer side of a PNG or GIF as its header says (undefined: no readable header); 0 for other types. */
function imageSide(b: Buffer, mediaType: string): number | undefined {
  if (mediaType === 'image/png') {
    if (b.length < 24 || b.subarray(12, 16).toString('latin1') !== 'IHDR') return undefined;
    return Math.max(b.readUInt32BE(16), b.readUInt32BE(20));
  }
  if (mediaType === 'image/gif')
    return b.length < 10 ? undefined : Math.max(b.readUInt16LE(6), b.readUInt16LE(8));
  return 0;
}

function checkBlock(
  block: ContentBlockIn,
  path: string,
  role: string,
  toolUseIds: Set<string>,
): string | undefined {
  switch (block.type) {
    case 'text':
      return checkTextBlock(block, path);
    case 'thinking':
    case 'redacted_thinking': {
      if (role !== 'assistant') return `${path}: thinking blocks may only appear in assistant messages`;
      if (block.type === 'redacted_thinking' && !verifyRedacted(block['data']))
        return `${path}: Invalid \`data\` in \`redacted_thinking\` block`;
      if (block.type === 'thinking') {
        if (typeof block['thinking'] !== 'string') return `${path}.thinking: Field required`;
        if (block['signature'] !== signThinking(block['thinking'])) {
          return `${path}: Invalid \`signature\` in \`thinking\` block`;
        }
      }
      return undefined;
    }
    case 'tool_use': {
      if (role !== 'assistant') return `${path}: tool_use blocks may only appear in assistant messages`;
      const id = block['id'];
      if (typeof id !== 'string') return `${path}.id: Field required`;
      if (!/^[a-zA-Z0-9_-]+$/.test(id)) return `${path}.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
      if (typeof block['name'] !== 'string') return `${path}.name: Field required`;
      if (typeof block['input'] !== 'object' || block['input'] === null || Array.isArray(block['input'])) {
        return `${path}.input: Input should be a valid dictionary`;
      }
      if (toolUseIds.has(id)) return `${path}: \`tool_use\` ids must be unique`;
      toolUseIds.add(id);
      return undefined;
    }
    case 'image':
      return checkImageBlock(block, path, role);
    case 'tool_result': {
      if (role !== 'user') return `${path}: tool_result blocks may only appear in user messages`;
      if (typeof block['tool_use_id'] !== 'string') return `${path}.tool_use_id: Field required`;
      const content = block['content'];
      if (Array.isArray(content)) {
        for (const [k, inner] of content.entries()) {
          const item = inner as ContentBlockIn;
          const where = `${path}.content.${k}`;
          // A tool result holds text, images and the few other kinds the API lists, nothing else.
          const problem =
            item?.type === 'text'
              ? checkTextBlock(item, where)
              : item?.type === 'image'
                ? checkImageBlock(item, where, role)
                : TOOL_RESULT_OTHER.includes(String(item?.type))
                  ? undefined
                  : `${where}: Input tag '${String(item?.type)}' found using 'type' does not match any of the expected tags: 'text', 'image', 'search_result', 'document'`;
          if (problem) return problem;
        }
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

interface TurnBlock {
  block: ContentBlockIn;
  msg: number;
  idx: number;
}

// The API merges consecutive same-role messages into one turn before pairing tool calls with results.
function turnsOf(messages: MessageIn[]): Array<{ role: string; blocks: TurnBlock[]; lastMsg: number }> {
  const turns: Array<{ role: string; blocks: TurnBlock[]; lastMsg: number }> = [];
  for (const [i, msg] of messages.entries()) {
    const blocks = blocksOf(msg.content).map((block, idx) => ({ block, msg: i, idx }));
    const prev = turns.at(-1);
    if (prev && prev.role === msg.role) {
      prev.blocks.push(...blocks);
      prev.lastMsg = i;
    } else {
      turns.push({ role: msg.role, blocks, lastMsg: i });
    }
  }
  return turns;
}

function checkPairing(messages: MessageIn[]): string | undefined {
  const turns = turnsOf(messages);
  for (const [t, turn] of turns.entries()) {
    if (turn.role !== 'user') continue;
    const prev = turns[t - 1];
    const offered = new Set(
      (prev?.blocks ?? []).filter((b) => b.block.type === 'tool_use').map((b) => String(b.block['id'])),
    );
    const answered = new Set<string>();
    let sawOther = false;
    for (const b of turn.blocks) {
      if (b.block.type !== 'tool_result') {
        sawOther = true;
        continue;
      }
      const id = String(b.block['tool_use_id']);
      const where = `messages.${b.msg}.content.${b.idx}`;
      if (!offered.has(id)) {
        return `${where}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
      if (answered.has(id))
        return `${where}: each \`tool_use\` block must have a single \`tool_result\` block: ${id}`;
      if (sawOther) {
        return `${where}: \`tool_result\` blocks must come first in the user message that follows \`tool_use\` blocks; put any text after them.`;
      }
      answered.add(id);
    }
  }
  for (const [t, turn] of turns.entries()) {
    if (turn.role !== 'assistant') continue;
    const ids = turn.blocks.filter((b) => b.block.type === 'tool_use').map((b) => String(b.block['id']));
    if (ids.length === 0) continue;
    const next = turns[t + 1];
    const answered = new Set(
      (next?.blocks ?? [])
        .filter((b) => b.block.type === 'tool_result')
        .map((b) => String(b.block['tool_use_id'])),
    );
    const missing = ids.filter((id) => !answered.has(id));
    if (missing.length > 0) {
      return `messages.${turn.lastMsg}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
  }
  return undefined;
}

function hasCacheControl(x: unknown): boolean {
  return typeof x === 'object' && x !== null && (x as { cache_control?: unknown }).cache_control != null;
}

export function countCacheControl(req: MessagesRequest): number {
  let n = (req.tools ?? []).filter(hasCacheControl).length;
  if (Array.isArray(req.system)) n += req.system.filter(hasCacheControl).length;
  for (const msg of req.messages) {
    if (typeof msg.content === 'string') continue;
    for (const block of msg.content) {
      if (hasCacheControl(block)) n++;
      const inner = block['content'];
      if (block.type === 'tool_result' && Array.isArray(inner)) n += inner.filter(hasCacheControl).length;
    }
  }
  return n;
}

function checkCacheControlCount(req: MessagesRequest): string | undefined {
  const n = countCacheControl(req);
  return n > MAX_CACHE_CONTROL_BLOCKS
    ? `A maximum of ${MAX_CACHE_CONTROL_BLOCKS} blocks with cache_control may be provided. Found ${n}.`
    : undefined;
}

/** Every cache_control marker with its API path, in the order the API processes them. */
function cacheControls(req: MessagesRequest): { path: string; ttl: unknown }[] {
  const out: { path: string; ttl: unknown }[] = [];
  const add = (x: unknown, path: string) => {
    if (hasCacheControl(x))
      out.push({ path, ttl: (x as { cache_control: { ttl?: unknown } }).cache_control.ttl });
  };
  for (const [i, tool] of (req.tools ?? []).entries()) add(tool, `tools.${i}`);
  if (Array.isArray(req.system)) for (const [j, b] of req.system.entries()) add(b, `system.${j}`);
  for (const [i, msg] of req.messages.entries()) {
    if (typeof msg.content === 'string') continue;
    for (const [j, block] of msg.content.entries()) {
      const inner = block['content'];
      if (block.type === 'tool_result' && Array.isArray(inner)) {
        for (const [k, b] of inner.entries()) add(b, `messages.${i}.content.${j}.content.${k}`);
      }
      add(block, `messages.${i}.content.${j}`);
    }
  }
  return out;
}

/** The API's rule: TTLs never increase along tools → system → messages (a 1h marker after a 5m one is a 400). */
function checkCacheTtlOrder(req: MessagesRequest): string | undefined {
  let sawShort = false;
  for (const { path, ttl } of cacheControls(req)) {
    if (ttl !== undefined && ttl !== '5m' && ttl !== '1h') {
      return `${path}.cache_control.ttl: Input should be '5m' or '1h'`;
    }
    if (ttl === '1h' && sawShort) {
      return `${path}.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: \`tools\`, \`system\`, \`messages\`.`;
    }
    if (ttl !== '1h') sawShort = true;
  }
  return undefined;
}

const THINKING_TYPES = ['enabled', 'disabled', 'adaptive'];
const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'];

function checkThinkingConfig(req: MessagesRequest): string | undefined {
  const effort = req.output_config?.effort;
  if (effort != null && !EFFORTS.includes(effort))
    return `output_config.effort: Input should be ${EFFORTS.map((e) => `'${e}'`).join(', ')}`;
  if (req.thinking && !THINKING_TYPES.includes(req.thinking.type))
    return `thinking.type: Input should be ${THINKING_TYPES.map((t) => `'${t}'`).join(', ')}`;
  if (req.thinking?.type !== 'enabled') return undefined;
  const budget = req.thinking.budget_tokens;
  if (budget === undefined) return 'thinking.enabled.budget_tokens: Field required';
  if (budget < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (req.max_tokens <= budget) return '`max_tokens` must be greater than `thinking.budget_tokens`';
  return undefined;
}
