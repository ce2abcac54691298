import type Anthropic from '@anthropic-ai/sdk';

// Cache breakpoints (the API allows at most 4 `cache_control` markers):
// (TTLs: with the default policy 'all' every marker is 1 h, so an idle gap under an hour keeps the whole
// prompt; with 'stable' only the system, anchor and summary are, as described below.)
//  1. end of system (covers tools + system: the frozen prefix) — 1 h TTL, it never changes;
//  2. the ANCHOR: the assistant turn just before the first tool result that pruning could still
//     rewrite (1 h TTL). Pruning only ever edits after it, so a pruning pass still reads everything up
//     to here from cache (in that call the old anchor replaces breakpoint 3). Without an anchor: the
//     end of the summaries at the front after a compaction;
//  3. end of the previous request (the block before the newest assistant reply) — the exact point the
//     previous call wrote, so the read never depends on the API's 20-block lookback;
//  4. the last block of the conversation.
// Volatile text (runtime notes) is appended after breakpoint 4, so the next call can read the whole
// previous prompt up to there from cache.
// TTL order: the API rejects a request (400) where a ttl=1h marker follows a 5m one in the order tools →
// system → messages. The anchor can land after the previous end (the first prunable result is in the
// newest turn), so every marker before the last 1 h marker is promoted to 1 h: promoting loses no cache
// (a marker already cached is only read; dropping the late 1 h anchor would lose its long life).

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

/** The last cacheable block before the `skip` trailing ones (when they exist and one is left). */
function previousEndBlock(blocks: readonly Block[], skip: number): number {
  const last = lastCacheable(blocks);
  if (skip <= 0 || last !== blocks.length - 1) return last;
  for (let i = last - skip; i >= 0; i--) if (cacheable(blocks[i]!)) return i;
  return last;
}

export interface BreakpointInput {
  readonly system: readonly Anthropic.TextBlockParam[];
  readonly messages: readonly Anthropic.MessageParam[];
  /** Text of the last summary at the front of the view (its block gets breakpoint 2). */
  readonly lastSummaryText?: string;
  /** Volatile notes, placed after the last breakpoint. */
  readonly volatileTail?: readonly string[];
  /**
   * Blocks at the end of the message before the newest assistant reply that were the previous call's
   * tail (after its last breakpoint): the previous-end breakpoint goes before them, where that call wrote.
   */
  readonly previousEndSkip?: number;
  /** tool_use ids of results that a later pruning pass may still rewrite (they decide the anchor). */
  readonly editableToolUseIds?: ReadonlySet<string>;
  /** The same set before this call's pruning edits (the previous anchor: where the cache read ends). */
  readonly previousEditableToolUseIds?: ReadonlySet<string>;
  /**
   * Which breakpoints get the 1 h TTL: 'all' (every one; an idle gap under an hour keeps the whole
   * prompt), 'stable' (system, anchor, summary; the moving ends stay 5 min), 'none'. `true` = 'all',
   * `false` = 'none'. Default 'all'.
   */
  readonly longTtl?: boolean | CacheTtlPolicy;
}

export type CacheTtlPolicy = 'all' | 'stable' | 'none';

export function ttlPolicyOf(value: boolean | CacheTtlPolicy | undefined): CacheTtlPolicy {
  if (value === undefined || value === true) return 'all';
  if (value === false) return 'none';
  return value;
}

export interface BreakpointOutput {
  readonly system: Anthropic.TextBlockParam[];
  readonly messages: Anthropic.MessageParam[];
  /** [messageIndex, blockIndex] of every conversation breakpoint, in order. */
  readonly positions: readonly (readonly [number, number])[];
}

/**
 * The anchor: the last block of the assistant turn that produced the first result pruning may still
 * rewrite. That block was never the end of a request, so the call that first shows it writes it fresh
 * (with the long TTL); every later pruning pass edits only after it and still reads up to it.
 */
function anchorOf(
  messages: readonly Msg[],
  editable: ReadonlySet<string> | undefined,
): [number, number] | undefined {
  if (!editable || editable.size === 0) return undefined;
  const at = messages.findIndex(
    (m) =>
      m.role === 'user' &&
      m.content.some(
        (b) => b.type === 'tool_result' && editable.has((b as Anthropic.ToolResultBlockParam).tool_use_id),
      ),
  );
  if (at < 1 || messages[at - 1]!.role !== 'assistant') return undefined;
  const block = lastCacheable(messages[at - 1]!.content);
  return block >= 0 ? [at - 1, block] : undefined;
}

export function placeBreakpoints(input: BreakpointInput): BreakpointOutput {
  const policy = ttlPolicyOf(input.longTtl);
  const long = policy !== 'none';
  const moving = policy === 'all';
  const system = input.system.map((b, i) =>
    i === input.system.length - 1 ? { ...b, cache_control: long ? EPHEMERAL_1H : EPHEMERAL } : { ...b },
  );
  // Messages no marker touches are handed on as they are (never mutated): the serialiser reuses the
  // bytes of the ones the previous call sent. A marked message is a copy.
  const messages: Msg[] = input.messages.map((m) =>
    typeof m.content === 'string' ? { role: m.role, content: blocksOf(m) } : (m as Msg),
  );
  const copied = new Set<number>();
  const own = (index: number): Msg => {
    if (!copied.has(index)) {
      messages[index] = { role: messages[index]!.role, content: [...messages[index]!.content] };
      copied.add(index);
    }
    return messages[index]!;
  };
  const same = (a: readonly number[] | undefined, b: readonly number[] | undefined) =>
    !!a && !!b && a[0] === b[0] && a[1] === b[1];

  const anchor = anchorOf(messages, input.editableToolUseIds);
  // In a call that just pruned, the anchor before the edits is where the cached prefix ends.
  const before = anchorOf(messages, input.previousEditableToolUseIds);
  let front: [number, number] | undefined = anchor;
  if (!front && input.lastSummaryText !== undefined && messages[0]?.role === 'user') {
    const index = messages[0].content.findIndex(
      (b) => b.type === 'text' && (b as Anthropic.TextBlockParam).text === input.lastSummaryText,
    );
    if (index >= 0) front = [0, index];
  }

  let lastAssistant = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'assistant') {
      lastAssistant = i;
      break;
    }
  }
  const previousEnd: [number, number] | undefined =
    lastAssistant > 0
      ? [
          lastAssistant - 1,
          previousEndBlock(messages[lastAssistant - 1]!.content, input.previousEndSkip ?? 0),
        ]
      : undefined;
  const lastIndex = messages.length - 1;
  const last: [number, number] | undefined =
    lastIndex >= 0 ? [lastIndex, lastCacheable(messages[lastIndex]!.content)] : undefined;

  // At most 3 in the conversation (the system takes the 4th), by priority.
  const candidates: [[number, number] | undefined, boolean][] = [
    [last, moving],
    [front, long],
    [before && !same(before, anchor) ? before : undefined, long],
    [previousEnd, moving],
  ];
  const chosen: [number, number, boolean][] = [];
  for (const [position, ttl] of candidates) {
    if (!position || position[1] < 0 || chosen.some((c) => c[0] === position[0] && c[1] === position[1]))
      continue;
    if (chosen.length >= MAX_BREAKPOINTS - 1) break;
    chosen.push([position[0], position[1], ttl]);
  }
  chosen.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  // Non-increasing TTLs: everything before the last 1 h marker becomes 1 h (the system is already).
  for (let i = chosen.length - 2; i >= 0; i--) if (chosen[i + 1]![2]) chosen[i]![2] = true;
  for (const [m, b, ttl] of chosen) {
    const message = own(m);
    message.content[b] = mark(message.content[b]!, ttl);
  }
  const positions = chosen.map(([m, b]) => [m, b] as const);

  const tail = (input.volatileTail ?? []).filter((t) => t.length > 0);
  if (tail.length > 0) {
    const blocks: Block[] = tail.map((text) => ({ type: 'text', text }));
    const last = messages[messages.length - 1];
    if (last && last.role === 'user') own(messages.length - 1).content.push(...blocks);
    else messages.push({ role: 'user', content: blocks });
  }
  return { system, messages: messages as Anthropic.MessageParam[], positions };
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
