import type Anthropic from '@anthropic-ai/sdk';

// Cache breakpoints (the API allows at most 4 `cache_control` markers):
//  1. end of system (covers tools + system: the frozen prefix) — 1 h TTL, it never changes;
//  2. the ANCHOR: the end of the last user turn before the first tool result that pruning could still
//     rewrite (1 h TTL). Pruning only ever edits after it, so a pruning pass still reads everything up
//     to here from cache. Without an anchor: the end of the summaries at the front after a compaction;
//  3. end of the previous request (the block before the newest assistant reply) — the exact point the
//     previous call wrote, so the read never depends on the API's 20-block lookback;
//  4. the last block of the conversation.
// Volatile text (runtime notes) is appended after breakpoint 4, so the next call can read the whole
// previous prompt up to there from cache. Longer TTLs always come first, as the API requires.

export const MAX_BREAKPOINTS = 4;
const EPHEMERAL = { type: 'ephemeral' } as const;
const EPHEMERAL_1H = { type: 'ephemeral', ttl: '1h' } as const;

type Block = Anthropic.ContentBlockParam;
interface Msg {
  role: Anthropic.MessageParam['role'];
  content: Block[];
}

function cacheable(block: Block): boolean {
  return block.type !== 'thinking' && block.type !== 'redacted_thinking';
}

function mark(block: Block, long: boolean): Block {
  return { ...block, cache_control: long ? EPHEMERAL_1H : EPHEMERAL } as Block;
}

function blocksOf(message: Anthropic.MessageParam): Block[] {
  return typeof message.content === 'string'
    ? [{ type: 'text', text: message.content }]
    : [...message.content];
}

function lastCacheable(blocks: readonly Block[]): number {
  for (let i = blocks.length - 1; i >= 0; i--) if (cacheable(blocks[i]!)) return i;
  return -1;
}

export interface BreakpointInput {
  readonly system: readonly Anthropic.TextBlockParam[];
  readonly messages: readonly Anthropic.MessageParam[];
  /** Text of the last summary at the front of the view (its block gets breakpoint 2). */
  readonly lastSummaryText?: string;
  /** Volatile notes, placed after the last breakpoint. */
  readonly volatileTail?: readonly string[];
  /** tool_use ids of results that a later pruning pass may still rewrite (they decide the anchor). */
  readonly editableToolUseIds?: ReadonlySet<string>;
  /** Use 1 h TTLs for the stable breakpoints (system, anchor, summary). Default true. */
  readonly longTtl?: boolean;
}

export interface BreakpointOutput {
  readonly system: Anthropic.TextBlockParam[];
  readonly messages: Anthropic.MessageParam[];
  /** [messageIndex, blockIndex] of every conversation breakpoint, in order. */
  readonly positions: readonly (readonly [number, number])[];
}

/** Index of the first user message holding a result pruning may still rewrite, or -1. */
function firstEditable(messages: readonly Msg[], editable: ReadonlySet<string> | undefined): number {
  if (!editable || editable.size === 0) return -1;
  return messages.findIndex(
    (m) =>
      m.role === 'user' &&
      m.content.some(
        (b) => b.type === 'tool_result' && editable.has((b as Anthropic.ToolResultBlockParam).tool_use_id),
      ),
  );
}

export function placeBreakpoints(input: BreakpointInput): BreakpointOutput {
  const long = input.longTtl ?? true;
  const system = input.system.map((b, i) =>
    i === input.system.length - 1 ? { ...b, cache_control: long ? EPHEMERAL_1H : EPHEMERAL } : { ...b },
  );
  const messages: Msg[] = input.messages.map((m) => ({ role: m.role, content: blocksOf(m) }));
  // [message, block, long TTL]
  const wanted: [number, number, boolean][] = [];

  // The anchor sits before the assistant turn that produced the first still-editable result.
  const editableAt = firstEditable(messages, input.editableToolUseIds);
  const anchorMessage = editableAt >= 2 ? editableAt - 2 : -1;
  const anchorBlock = anchorMessage >= 0 ? lastCacheable(messages[anchorMessage]!.content) : -1;
  if (anchorBlock >= 0) {
    wanted.push([anchorMessage, anchorBlock, long]);
  } else if (input.lastSummaryText !== undefined && messages[0]?.role === 'user') {
    const index = messages[0].content.findIndex(
      (b) => b.type === 'text' && (b as Anthropic.TextBlockParam).text === input.lastSummaryText,
    );
    if (index >= 0) wanted.push([0, index, long]);
  }

  let lastAssistant = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'assistant') {
      lastAssistant = i;
      break;
    }
  }
  if (lastAssistant > 0) {
    const block = lastCacheable(messages[lastAssistant - 1]!.content);
    if (block >= 0) wanted.push([lastAssistant - 1, block, false]);
  }

  const lastIndex = messages.length - 1;
  if (lastIndex >= 0) {
    const block = lastCacheable(messages[lastIndex]!.content);
    if (block >= 0) wanted.push([lastIndex, block, false]);
  }

  const positions: [number, number, boolean][] = [];
  for (const [m, b, ttl] of wanted) {
    const same = positions.find(([pm, pb]) => pm === m && pb === b);
    if (same) continue; // the earlier entry (the longer TTL) wins
    if (positions.length + 1 >= MAX_BREAKPOINTS) positions.pop(); // never exceed 4 with the system one
    positions.push([m, b, ttl]);
  }
  for (const [m, b, ttl] of positions) {
    const message = messages[m]!;
    message.content[b] = mark(message.content[b]!, ttl);
  }

  const tail = (input.volatileTail ?? []).filter((t) => t.length > 0);
  if (tail.length > 0) {
    const blocks: Block[] = tail.map((text) => ({ type: 'text', text }));
    const last = messages[messages.length - 1];
    if (last && last.role === 'user') last.content.push(...blocks);
    else messages.push({ role: 'user', content: blocks });
  }
  return {
    system,
    messages: messages as Anthropic.MessageParam[],
    positions: positions.map(([m, b]) => [m, b] as const),
  };
}

/** Number of `cache_control` markers in a request (tests and assertions). */
export function countBreakpoints(request: {
  readonly system: readonly Anthropic.TextBlockParam[];
  readonly tools: readonly Anthropic.Tool[];
  readonly messages: readonly Anthropic.MessageParam[];
}): number {
  let count = 0;
  for (const t of request.tools) if (t.cache_control) count++;
  for (const b of request.system) if (b.cache_control) count++;
  for (const m of request.messages) {
    if (typeof m.content === 'string') continue;
    for (const b of m.content) if ((b as { cache_control?: unknown }).cache_control) count++;
  }
  return count;
}
