import * as z from 'zod/mini';

// Field types and size bounds shared by every host↔webview schema (agentEventSchema.ts,
// webviewProtocol.ts). Bounds keep a misbehaving peer from making the other side allocate without limit.

export const MAX_TEXT = 200_000;
export const MAX_CODE = 1_000_000;
export const MAX_PATH = 4096;

export const id = z.string().check(z.minLength(1), z.maxLength(512));
export const relPath = z.string().check(z.minLength(1), z.maxLength(MAX_PATH));
export const count = z.int().check(z.nonnegative());
