import { createHash } from 'node:crypto';
import Anthropic from '@anthropic-ai/sdk';
import { canonicalJson, countInputTokens, type PromptBlock, promptBlocks } from '../test/emulator/cache.ts';
import { type MessagesRequest, startEmulator } from '../test/emulator/server.ts';

// The session bench's cache figures for a list of sent requests (hit ratios against what a cache
// could give at most, prefix stability, input cost), and the naive baseline: the same requests
// replayed on a fresh emulator with a system prompt that carries a timestamp.

export interface SideFigures {
  /** cache_read / all input tokens. */
  readonly cache_hit_ratio: number;
  /** cache_read / Σ input tokens before each request's newest message (the most a cache could give). */
  readonly cache_hit_of_limit: number;
  /**
   * cache_read / Σ tokens each request shares with the previous request's prefix (what any cache could
   * hold: the previous reply and the newest results were never sent before).
   */
  readonly cache_hit_of_shared_prefix: number;
  /** Fraction of calls after the first whose tools + system are byte-identical to the previous call's. */
  readonly prefix_stability: number;
  readonly input_tokens_all: number;
  readonly cache_read: number;
  /** Input cost in base-price tokens: input ×1, 5 min writes ×1.25, 1 h writes ×2, reads ×0.1. */
  readonly input_cost_units: number;
}

export interface CallUsage {
  readonly input_tokens: number;
  readonly cache_read_input_tokens: number;
  readonly cache_creation_input_tokens: number;
  readonly cache_creation?: { ephemeral_5m_input_tokens?: number; ephemeral_1h_input_tokens?: number } | null;
}

function costUnits(u: CallUsage): number {
  const long = u.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const short = u.cache_creation_input_tokens - long;
  return u.input_tokens + short * 1.25 + long * 2 + u.cache_read_input_tokens * 0.1;
}

export function sideFigures(requests: readonly { req: MessagesRequest; usage: CallUsage }[]): SideFigures {
  let all = 0;
  let read = 0;
  let limit = 0;
  let shared = 0;
  let stable = 0;
  let cost = 0;
  let previous: string | undefined;
  let previousBlocks: PromptBlock[] = [];
  requests.forEach(({ req, usage }, i) => {
    all += usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
    read += usage.cache_read_input_tokens;
    cost += costUnits(usage);
    const lim = countInputTokens({ ...req, messages: req.messages.slice(0, -1) });
    limit += lim;
    const blocks = promptBlocks(req);
    let sharedHere = 0;
    for (let b = 0; b < blocks.length && b < previousBlocks.length; b++) {
      if (blocks[b]!.canonical !== previousBlocks[b]!.canonical) break;
      sharedHere += blocks[b]!.tokens;
    }
    shared += sharedHere;
    previousBlocks = blocks;
    if (process.env.BENCH_DEBUG) {
      const last = req.messages.at(-1);
      const lastTokens = last ? countInputTokens({ ...req, tools: [], system: [], messages: [last] }) : 0;
      console.error(
        `call ${i}: limit ${lim} read ${usage.cache_read_input_tokens} write ${usage.cache_creation_input_tokens} input ${usage.input_tokens} lost ${lim - usage.cache_read_input_tokens} shared ${sharedHere} newest ${lastTokens} msgs ${req.messages.length}`,
      );
    }
    const prefix = createHash('sha256')
      .update(canonicalJson({ tools: req.tools, system: req.system }))
      .digest('hex');
    if (prefix === previous) stable++;
    previous = prefix;
  });
  const r = (n: number) => Math.round(n * 10_000) / 10_000;
  return {
    cache_hit_ratio: all ? r(read / all) : 0,
    cache_hit_of_limit: limit ? r(read / limit) : 0,
    cache_hit_of_shared_prefix: shared ? r(read / shared) : 0,
    prefix_stability: requests.length > 1 ? r(stable / (requests.length - 1)) : 1,
    input_tokens_all: all,
    cache_read: read,
    input_cost_units: Math.round(cost),
  };
}

function timestamped(system: MessagesRequest['system'], at: number): MessagesRequest['system'] {
  const stamp = `Current date and time: ${new Date(at).toISOString()}\n\n`;
  if (typeof system === 'string') return stamp + system;
  const blocks = [...(system ?? [])] as { type: string; text?: string }[];
  const first = blocks[0];
  return [
    { ...first, type: 'text', text: stamp + (first?.text ?? '') },
    ...blocks.slice(1),
  ] as MessagesRequest['system'];
}

/** The same requests, replayed in order on a fresh emulator, with a timestamped system prompt. */
export async function replayNaive(requests: readonly MessagesRequest[], step: number): Promise<SideFigures> {
  let replayClock = Date.UTC(2025, 0, 6, 9, 0, 0);
  const fresh = await startEmulator({
    now: () => replayClock,
    scenario: { respond: () => ({ content: [{ type: 'text', text: 'ok' }] }) },
  });
  const out: { req: MessagesRequest; usage: CallUsage }[] = [];
  try {
    const client = new Anthropic({ apiKey: 'bench', baseURL: fresh.url, maxRetries: 0 });
    for (const req of requests) {
      replayClock += step;
      // max_tokens is no part of the prompt (nor of the cache): capped so the SDK allows a non-streaming call.
      const naive = {
        ...req,
        max_tokens: Math.min(req.max_tokens, 8192),
        system: timestamped(req.system, replayClock),
        stream: false,
      };
      const reply = await client.messages.create(
        naive as unknown as Anthropic.MessageCreateParamsNonStreaming,
      );
      out.push({ req: naive, usage: reply.usage as unknown as CallUsage });
    }
  } finally {
    await fresh.close();
  }
  return sideFigures(out);
}
