import { createHash } from 'node:crypto';
import { canonicalJson, estimateTokens } from '../cache.ts';

// OpenAI's automatic prompt caching: no markers; a request whose prompt starts with a prefix an
// earlier request (same model, within the TTL) already sent reads it from cache. Only prompts of 1024
// tokens or more are cached, and hits come in 128-token increments beyond the first 1024. The prompt is
// tools first, then the instructions / messages in order; a unit (a tool, a message, an input item)
// matches only byte for byte (its canonical JSON), so a prefix that changed anywhere stops there.

export const MIN_CACHED_TOKENS = 1024;
export const CACHE_INCREMENT = 128;

export interface OpenAIPromptCache {
  /** The request's prompt tokens, and how many of them were read from cache. */
  account(model: string, units: readonly unknown[]): { prompt: number; cached: number };
}

export function cachedTokens(matched: number): number {
  if (matched < MIN_CACHED_TOKENS) return 0;
  return MIN_CACHED_TOKENS + Math.floor((matched - MIN_CACHED_TOKENS) / CACHE_INCREMENT) * CACHE_INCREMENT;
}

export function createOpenAIPromptCache(options: { now: () => number; ttlMs: number }): OpenAIPromptCache {
  const entries = new Map<string, number>();
  return {
    account(model, units) {
      const now = options.now();
      let hash = createHash('sha256').update(`openai-model:${model}`).digest('hex');
      let total = 0;
      let matched = 0;
      let missed = false;
      const seen: [string, number][] = [];
      for (const unit of units) {
        const canonical = canonicalJson(unit);
        hash = createHash('sha256').update(hash).update('\0').update(canonical).digest('hex');
        total += estimateTokens(canonical);
        const expires = entries.get(hash);
        if (!missed && expires !== undefined && expires > now) matched = total;
        else missed = true;
        seen.push([hash, total]);
      }
      // A prompt of 1024 tokens or more is cached whole for the next request (every prefix of it:
      // a later prompt may share only its start; what counts is decided by cachedTokens).
      if (total >= MIN_CACHED_TOKENS) for (const [key] of seen) entries.set(key, now + options.ttlMs);
      return { prompt: total, cached: Math.min(cachedTokens(matched), total) };
    },
  };
}

/** The units of a Chat Completions prompt: each tool, then each message. */
export function chatUnits(body: Record<string, unknown>): unknown[] {
  return [...((body.tools as unknown[]) ?? []), ...((body.messages as unknown[]) ?? [])];
}

/** The units of a Responses prompt: each tool, the instructions, then each input item. */
export function responsesUnits(body: Record<string, unknown>): unknown[] {
  const input =
    typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input as unknown[]);
  return [
    ...((body.tools as unknown[]) ?? []),
    ...(body.instructions ? [{ instructions: body.instructions }] : []),
    ...(input ?? []),
  ];
}
