import { createHmac } from 'node:crypto';

export type Rng = () => number;

/** mulberry32: tiny, fast, and deterministic, so a seed reproduces every chunk split and id. */
export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Integer in [min, max]. */
export function randInt(rng: Rng, min: number, max: number): number {
  return min + Math.floor(rng() * (max - min + 1));
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(rng: Rng, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[Math.floor(rng() * 62)];
  return out;
}

export interface IdSource {
  message(): string;
  toolUse(): string;
  request(): string;
}

/** Ids shaped like the real API's (`msg_01…`, `toolu_01…`, `req_011C…`). */
export function createIds(rng: Rng): IdSource {
  return {
    message: () => `msg_01${base62(rng, 22)}`,
    toolUse: () => `toolu_01${base62(rng, 22)}`,
    request: () => `req_011C${base62(rng, 20)}`,
  };
}

// The real API rejects thinking blocks whose signature it did not issue; an HMAC under the emulator's
// secret lets it do the same, which catches clients that edit or re-create thinking blocks. The secret
// is fixed (not per process) so a resumed session's blocks verify on a fresh emulator too.
const THINKING_SECRET = 'keel-emulator-thinking-secret';

export function signThinking(thinking: string): string {
  return createHmac('sha256', THINKING_SECRET).update(thinking).digest('base64');
}

/** The opaque `data` of a redacted_thinking block: the hidden text's base64 and its HMAC, verifiable later. */
export function redactThinking(hidden: string): string {
  const payload = Buffer.from(hidden).toString('base64');
  return `${payload}.${signThinking(`redacted\0${payload}`)}`;
}

export function verifyRedacted(data: unknown): boolean {
  if (typeof data !== 'string') return false;
  const dot = data.lastIndexOf('.');
  return dot > 0 && data.slice(dot + 1) === signThinking(`redacted\0${data.slice(0, dot)}`);
}
