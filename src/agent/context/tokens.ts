import { createHash } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import type { AgentMessage } from '../messages.ts';
import { IMAGE_TOKENS } from './images.ts';
import { toLlm } from '../messages.ts';
import { canonicalJson } from '../safety/guards/loopDetector.ts';

// Token estimates without a tokenizer. The unit is deliberately the one the emulator and our budget
// tests use: ceil(UTF-8 bytes / 4) of a block's canonical JSON, so an estimate made here and a count
// made by the emulator agree to within a few percent and a calibration factor absorbs the rest.

export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

/** A deep copy whose objects have their keys inserted in sorted order (so JSON.stringify is canonical). */
export function sortKeysDeep<T>(value: T): T {
  if (Array.isArray(value)) return value.map(sortKeysDeep) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value as Record<string, unknown>).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeysDeep(v);
    }
    return out as T;
  }
  return value;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function blockTokens(block: object, role?: string): number {
  // An image costs what its pixels cost, not its base64 (images.ts).
  const type = (block as { type?: unknown }).type;
  if (type === 'image') return IMAGE_TOKENS;
  const content = (block as { content?: unknown }).content;
  if (type === 'tool_result' && Array.isArray(content) && content.some((b) => b?.type === 'image')) {
    const images = content.filter((b) => b?.type === 'image').length;
    const rest = content.filter((b) => b?.type !== 'image');
    return blockTokens({ ...block, content: rest }, role) + images * IMAGE_TOKENS;
  }
  const { cache_control: _ignored, ...rest } = block as Record<string, unknown>;
  // The unit is the canonical JSON's length; key order never changes a length, so the engine's own
  // JSON.stringify measures it without sorting every object of every block.
  return estimateTokens(JSON.stringify(role === undefined ? { block: rest } : { role, block: rest }));
}

export function estimateToolsTokens(tools: readonly Anthropic.Tool[]): number {
  return tools.reduce((sum, t) => sum + blockTokens(t), 0);
}

export function estimateSystemTokens(system: readonly Anthropic.TextBlockParam[]): number {
  return system.reduce((sum, b) => sum + blockTokens(b, 'system'), 0);
}

export function estimateMessageTokens(message: Anthropic.MessageParam): number {
  const blocks =
    typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
  return blocks.reduce((sum, b) => sum + blockTokens(b, message.role), 0);
}

export function estimateMessagesTokens(messages: readonly Anthropic.MessageParam[]): number {
  return messages.reduce((sum, m) => sum + estimateMessageTokens(m), 0);
}

export function estimateRequestTokens(request: {
  readonly tools: readonly Anthropic.Tool[];
  readonly system: readonly Anthropic.TextBlockParam[];
  readonly messages: readonly Anthropic.MessageParam[];
}): number {
  return (
    estimateToolsTokens(request.tools) +
    estimateSystemTokens(request.system) +
    estimateMessagesTokens(request.messages)
  );
}

// Messages are immutable, so each one's estimate is computed once: a call at 100k tokens then only
// serialises what is new instead of re-serialising the whole conversation (the harness's main CPU cost).
const agentMessageTokens = new WeakMap<AgentMessage, number>();

/**
 * Estimate of the blocks `toLlm` makes of one message. Summed over a view it equals the estimate of
 * the whole converted list: blocks are counted one by one, and merging messages never changes a block.
 */
export function estimateAgentMessageTokens(message: AgentMessage): number {
  let tokens = agentMessageTokens.get(message);
  if (tokens === undefined) {
    tokens = estimateMessagesTokens(toLlm([message]));
    agentMessageTokens.set(message, tokens);
  }
  return tokens;
}

/** Volatile notes as `placeBreakpoints` appends them (user text blocks, empty ones dropped). */
export function estimateVolatileTailTokens(tail: readonly string[] | undefined): number {
  let sum = 0;
  for (const text of tail ?? []) if (text.length > 0) sum += blockTokens({ type: 'text', text }, 'user');
  return sum;
}

/** sha256 of a request's tools + system in canonical form, cache markers aside (what P1 keeps fixed). */
export function requestPrefixHash(request: {
  readonly tools: readonly Anthropic.Tool[];
  readonly system: readonly Anthropic.TextBlockParam[];
}): string {
  const strip = <T extends object>(block: T): T => {
    const { cache_control: _ignored, ...rest } = block as T & { cache_control?: unknown };
    return rest as T;
  };
  return sha256(canonicalJson({ tools: request.tools.map(strip), system: request.system.map(strip) }));
}
