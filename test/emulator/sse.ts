import { estimateTokens } from './cache.ts';
import { type IdSource, type Rng, randInt, redactThinking, signThinking } from './ids.ts';
import type { ScriptedReply, UsageOut } from './types.ts';

export type OutBlock =
  | { type: 'text'; text: string; citations: null }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | {
      type: 'tool_use';
      id: string;
      name: string;
      input: unknown;
      caller: { type: 'direct' };
      /** Set when max_tokens cut the input: the JSON streamed so far (never a complete object). */
      partialJson?: string;
    };

export interface OutMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: OutBlock[];
  stop_reason: string | null;
  stop_sequence: string | null;
  usage: UsageOut;
}

export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

export function buildContent(reply: ScriptedReply, ids: IdSource): OutBlock[] {
  return (reply.content ?? []).map((block): OutBlock => {
    switch (block.type) {
      case 'text':
        return { type: 'text', text: block.text, citations: null };
      case 'thinking':
        return { type: 'thinking', thinking: block.thinking, signature: signThinking(block.thinking) };
      case 'redacted_thinking':
        return { type: 'redacted_thinking', data: redactThinking(block.hidden) };
      default:
        return {
          type: 'tool_use',
          id: block.id ?? ids.toolUse(),
          name: block.name,
          input: block.input,
          caller: { type: 'direct' },
        };
    }
  });
}

function outputText(b: OutBlock): string {
  if (b.type === 'text') return b.text;
  if (b.type === 'thinking') return b.thinking;
  if (b.type === 'redacted_thinking') return b.data;
  return b.partialJson ?? JSON.stringify(b.input);
}

/** Thinking tokens are output tokens, as the API bills them. */
export function estimateOutputTokens(content: OutBlock[]): number {
  return Math.max(1, estimateTokens(content.map(outputText).join('')));
}

/**
 * The reply as the API gives it under `max_tokens`: generation stops at the limit, in the middle of a
 * block if need be (a tool call's input then ends as partial JSON), and the stop reason says so.
 */
export function cutToMaxTokens(
  content: OutBlock[],
  maxTokens: number,
): { content: OutBlock[]; cut: boolean } {
  if (estimateOutputTokens(content) <= maxTokens) return { content, cut: false };
  const out: OutBlock[] = [];
  // The estimate is 4 UTF-8 bytes a token; cutting by characters keeps it simple and never over.
  let room = maxTokens * 4;
  for (const block of content) {
    const text = outputText(block);
    const bytes = Buffer.byteLength(text);
    if (bytes <= room) {
      out.push(block);
      room -= bytes;
      continue;
    }
    const part = Buffer.from(text)
      .subarray(0, room)
      .toString('utf8')
      .replace(/\uFFFD$/, '');
    if (block.type === 'text') out.push({ ...block, text: part });
    else if (block.type === 'thinking') out.push({ ...block, thinking: part, signature: signThinking(part) });
    else if (block.type === 'redacted_thinking')
      break; // opaque: whole or not at all
    else out.push({ ...block, input: {}, partialJson: part });
    break;
  }
  return { content: out, cut: true };
}

export function defaultStopReason(reply: ScriptedReply): NonNullable<ScriptedReply['stop_reason']> {
  return reply.stop_reason ?? (reply.content?.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
}

/** Splits at arbitrary code-point boundaries, as the API's token-sized deltas do. */
export function splitArbitrarily(text: string, rng: Rng, maxPiece = 12): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; ) {
    const n = randInt(rng, 1, maxPiece);
    out.push(chars.slice(i, i + n).join(''));
    i += n;
  }
  return out;
}

/** Valid-looking JSON cut so that no parser, partial or strict, can recover an object from it. */
export function corruptJson(json: string): string {
  return `${json.slice(0, Math.max(1, json.length - 1))}, "oops": ]]`;
}

/**
 * The SSE sequence of the real API: message_start, then per block content_block_start (ping after the
 * first one), deltas split at arbitrary points, content_block_stop; then message_delta and message_stop.
 */
export function streamEvents(
  message: OutMessage,
  rng: Rng,
  opts: { corruptToolJson?: boolean } = {},
): SseEvent[] {
  const events: SseEvent[] = [];
  const { usage } = message;
  events.push({
    event: 'message_start',
    data: {
      type: 'message_start',
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    },
  });
  const ping: SseEvent = { event: 'ping', data: { type: 'ping' } };
  if (message.content.length === 0) events.push(ping);
  let corrupted = false;
  for (const [index, block] of message.content.entries()) {
    const delta = (d: Record<string, unknown>): SseEvent => ({
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index, delta: d },
    });
    const start = (content_block: Record<string, unknown>): SseEvent => ({
      event: 'content_block_start',
      data: { type: 'content_block_start', index, content_block },
    });
    if (block.type === 'text') {
      events.push(start({ type: 'text', text: '' }));
      if (index === 0) events.push(ping);
      for (const piece of splitArbitrarily(block.text, rng))
        events.push(delta({ type: 'text_delta', text: piece }));
    } else if (block.type === 'redacted_thinking') {
      // The API sends a redacted block whole in its start event, with no deltas.
      events.push(start({ type: 'redacted_thinking', data: block.data }));
      if (index === 0) events.push(ping);
    } else if (block.type === 'thinking') {
      events.push(start({ type: 'thinking', thinking: '', signature: '' }));
      if (index === 0) events.push(ping);
      for (const piece of splitArbitrarily(block.thinking, rng)) {
        events.push(delta({ type: 'thinking_delta', thinking: piece }));
      }
      events.push(delta({ type: 'signature_delta', signature: block.signature }));
    } else {
      events.push(
        start({ type: 'tool_use', id: block.id, name: block.name, input: {}, caller: block.caller }),
      );
      if (index === 0) events.push(ping);
      let json = block.partialJson ?? JSON.stringify(block.input ?? {});
      if (opts.corruptToolJson && !corrupted) {
        json = corruptJson(json);
        corrupted = true;
      }
      // The API opens every tool input with an empty partial_json; `{}` input sends nothing else.
      events.push(delta({ type: 'input_json_delta', partial_json: '' }));
      if (json !== '{}') {
        for (const piece of splitArbitrarily(json, rng))
          events.push(delta({ type: 'input_json_delta', partial_json: piece }));
      }
    }
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  }
  events.push({
    event: 'message_delta',
    data: {
      type: 'message_delta',
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
      },
    },
  });
  events.push({ event: 'message_stop', data: { type: 'message_stop' } });
  return events;
}

export function formatSse(e: SseEvent): string {
  return `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`;
}
