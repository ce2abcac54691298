import { createHash } from 'node:crypto';
import type { ContentBlockIn, MessagesRequest, UsageOut } from './types.ts';
import { blocksOf } from './validate.ts';

/**
 * Prompt-cache accounting modelled on the real API.
 *
 * The prompt is the sequence of blocks tools → system → messages. Each block's canonical form is the JSON
 * (keys sorted, its own `cache_control` removed) of `{ role?, block }`, with `role` only for message blocks,
 * so consecutive same-role messages count the same as one merged message, as the API treats them.
 * Token estimate of a block: ceil(UTF-8 bytes of its canonical form / 4). A prefix's key is a hash chain
 * over the model name and the canonical blocks, so a cache entry matches only a byte-identical prefix.
 *
 * For a request: the longest prefix that ends at a breakpoint, or up to LOOKBACK_BLOCKS block boundaries
 * before one, and is cached and unexpired is read (its TTL refreshed); every breakpoint after the read
 * point whose prefix reaches the minimum cacheable length is written. cache_read = tokens up to the read
 * point, cache_creation = tokens from there to the last written breakpoint, input = the rest.
 */
export const LOOKBACK_BLOCKS = 20;
export const DEFAULT_MIN_CACHEABLE_TOKENS = 1024;
export const ONE_HOUR_MS = 3_600_000;

export interface PromptBlock {
  canonical: string;
  tokens: number;
  cacheControl?: { ttl?: string };
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / 4);
}

function toPromptBlock(block: Record<string, unknown>, role?: string): PromptBlock {
  const { cache_control, ...rest } = block;
  const canonical = canonicalJson(role === undefined ? { block: rest } : { role, block: rest });
  const cc = cache_control as { ttl?: unknown } | null | undefined;
  return {
    canonical,
    tokens: estimateTokens(canonical),
    ...(cc ? { cacheControl: typeof cc.ttl === 'string' ? { ttl: cc.ttl } : {} } : {}),
  };
}

export function promptBlocks(req: MessagesRequest): PromptBlock[] {
  const out: PromptBlock[] = [];
  for (const tool of req.tools ?? []) out.push(toPromptBlock(tool));
  if (req.system !== undefined) {
    for (const block of blocksOf(req.system)) out.push(toPromptBlock(block, 'system'));
  }
  for (const msg of req.messages) {
    for (const block of blocksOf(msg.content) as ContentBlockIn[]) out.push(toPromptBlock(block, msg.role));
  }
  return out;
}

export function countInputTokens(req: MessagesRequest): number {
  return promptBlocks(req).reduce((sum, b) => sum + b.tokens, 0);
}

export interface PromptCacheOptions {
  now: () => number;
  ttlMs: number;
  minCacheableTokens: number;
}

export interface PromptCache {
  /** Accounts one request against the cache (reads refresh, writes insert) and returns the usage split. */
  account(req: MessagesRequest): Omit<UsageOut, 'output_tokens' | 'service_tier'>;
  /** Number of unexpired entries (for tests and debugging). */
  size(): number;
}

export function createPromptCache(options: PromptCacheOptions): PromptCache {
  const entries = new Map<string, { expiresAt: number; ttlMs: number }>();

  const live = (key: string, now: number) => {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= now) entries.delete(key);
    return entry && entry.expiresAt > now ? entry : undefined;
  };

  return {
    size: () => [...entries.keys()].filter((k) => live(k, options.now())).length,
    account(req) {
      const now = options.now();
      const blocks = promptBlocks(req);
      const keys: string[] = [];
      const cumulative: number[] = [];
      let hash = createHash('sha256').update(`model:${req.model}`).digest('hex');
      let total = 0;
      // As the API documents: changing the thinking parameters (on/off, budget) invalidates the cached
      // message blocks; tools and system stay cached. So the thinking setting is part of every message
      // block's key (requests without thinking keep the keys they always had).
      const messagesFrom = blocks.length - req.messages.reduce((n, m) => n + blocksOf(m.content).length, 0);
      const thinking = thinkingKey(req);
      for (const [i, block] of blocks.entries()) {
        if (i === messagesFrom && thinking)
          hash = createHash('sha256').update(hash).update(thinking).digest('hex');
        hash = createHash('sha256').update(hash).update('\0').update(block.canonical).digest('hex');
        total += block.tokens;
        keys.push(hash);
        cumulative.push(total);
      }
      const tokensTo = (i: number) => (i < 0 ? 0 : cumulative[i]!);
      const breakpoints = blocks.flatMap((b, i) => (b.cacheControl ? [i] : []));

      let readAt = -1;
      for (const bp of breakpoints) {
        for (let j = bp; j >= Math.max(0, bp - LOOKBACK_BLOCKS) && j > readAt; j--) {
          if (live(keys[j]!, now)) {
            readAt = j;
            break;
          }
        }
      }
      if (readAt >= 0) {
        const hit = entries.get(keys[readAt]!)!;
        hit.expiresAt = now + hit.ttlMs;
      }

      let written = readAt;
      let creation5m = 0;
      let creation1h = 0;
      for (const bp of breakpoints) {
        if (bp <= readAt || tokensTo(bp) < options.minCacheableTokens) continue;
        const ttlMs = blocks[bp]!.cacheControl?.ttl === '1h' ? ONE_HOUR_MS : options.ttlMs;
        entries.set(keys[bp]!, { expiresAt: now + ttlMs, ttlMs });
        const segment = tokensTo(bp) - tokensTo(written);
        if (ttlMs === ONE_HOUR_MS) creation1h += segment;
        else creation5m += segment;
        written = bp;
      }
      const cacheRead = tokensTo(readAt);
      const creation = creation5m + creation1h;
      return {
        input_tokens: total - cacheRead - creation,
        cache_read_input_tokens: cacheRead,
        cache_creation_input_tokens: creation,
        cache_creation: { ephemeral_5m_input_tokens: creation5m, ephemeral_1h_input_tokens: creation1h },
      };
    },
  };
}

/** The part of a request's thinking setting that keys its cached message blocks ('' when it does not think). */
function thinkingKey(req: MessagesRequest): string {
  const t = req.thinking;
  if (t?.type !== 'enabled' && t?.type !== 'adaptive') return '';
  return `\0thinking:${canonicalJson(t)}`;
}
