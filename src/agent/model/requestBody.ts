import type Anthropic from '@anthropic-ai/sdk';

// The request body of a streamed Messages call, as the exact bytes JSON.stringify would give (what the
// SDK sends for a plain `messages.create`), built without re-serialising the whole conversation.
//
// The conversation is append-only (P2) and the context engine hands over the same message objects
// call after call for everything it did not touch (toLlm and placeBreakpoints reuse them), so:
//  - each message's encoded JSON is kept per message object (a WeakMap: it goes with the message);
//  - the bytes of the previous body up to the first message that differs are reused as they are;
//  - only the new messages (and the few a cache marker moved onto, which are copies) are serialised.
// JSON.stringify is compositional ("[" + items joined by "," + "]", keys in insertion order), so the
// result is byte-identical to stringifying the whole body; test/unit/requestBody.test.ts checks it.

export interface StreamBodyParams {
  readonly model: string;
  readonly max_tokens: number;
  readonly thinking?:
    | { readonly type: 'adaptive' }
    | { readonly type: 'enabled'; readonly budget_tokens: number };
  readonly output_config?: { readonly effort: string };
  readonly system: readonly Anthropic.TextBlockParam[];
  readonly tools: readonly Anthropic.Tool[];
  readonly messages: readonly Anthropic.MessageParam[];
  readonly stream: true;
}

export interface BodyEncoder {
  /** The UTF-8 bytes of JSON.stringify(params) (keys in the order of StreamBodyParams). */
  encode(params: StreamBodyParams): Uint8Array;
}

const COMMA = Buffer.from(',');
const MESSAGES_KEY = ',"messages":[]';

interface Head {
  readonly model: string;
  readonly maxTokens: number;
  /** The JSON of `thinking` and `output_config` (absent: ''). */
  readonly thinking: string;
  readonly tools: readonly Anthropic.Tool[];
  readonly system: readonly Anthropic.TextBlockParam[];
  /** Everything up to and including `"messages":[`. */
  readonly bytes: Buffer;
  /** `],"stream":true}` */
  readonly tail: Buffer;
}

interface Previous {
  readonly head: Head;
  readonly messages: readonly Anthropic.MessageParam[];
  /** Byte offset in `body` where each message's JSON ends (before the separator or the tail). */
  readonly ends: readonly number[];
  readonly body: Buffer;
}

// Shallow: the system blocks are rebuilt per call (cache marker) from the same frozen strings.
function sameSystem(a: readonly Anthropic.TextBlockParam[], b: readonly Anthropic.TextBlockParam[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as unknown as Record<string, unknown>;
    const y = b[i] as unknown as Record<string, unknown>;
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    for (const key of keys) {
      const u = x[key];
      const v = y[key];
      if (u === v) continue;
      // cache_control objects: compare their (flat) members.
      if (!u || !v || typeof u !== 'object' || typeof v !== 'object') return false;
      if (JSON.stringify(u) !== JSON.stringify(v)) return false;
    }
  }
  return true;
}

function headOf(params: StreamBodyParams): Head {
  const keys = Object.keys(params);
  const expected = [
    'model',
    'max_tokens',
    'thinking',
    'output_config',
    'system',
    'tools',
    'messages',
    'stream',
  ].filter((k) => k in params);
  if (keys.length !== expected.length || keys.some((k, i) => k !== expected[i]))
    throw new Error(`requestBody: unexpected request keys ${keys.join(',')}`);
  const shell = JSON.stringify({ ...params, messages: [] });
  // `"messages":[]` cannot occur inside a JSON string (its quotes would be escaped), and the top-level
  // key is the last one before "stream", so the last occurrence is it.
  const at = shell.lastIndexOf(MESSAGES_KEY);
  if (at < 0) throw new Error('requestBody: messages key not found');
  const split = at + MESSAGES_KEY.length - 1;
  return {
    model: params.model,
    maxTokens: params.max_tokens,
    thinking: thinkingKey(params),
    tools: params.tools,
    system: params.system,
    bytes: Buffer.from(shell.slice(0, split)),
    tail: Buffer.from(shell.slice(split)),
  };
}

function thinkingKey(params: StreamBodyParams): string {
  return params.thinking || params.output_config
    ? JSON.stringify([params.thinking ?? null, params.output_config ?? null])
    : '';
}

export function createBodyEncoder(): BodyEncoder {
  const encoded = new WeakMap<object, Buffer>();
  let previous: Previous | undefined;
  const bytesOf = (message: Anthropic.MessageParam): Buffer => {
    let bytes = encoded.get(message);
    if (!bytes) {
      bytes = Buffer.from(JSON.stringify(message));
      encoded.set(message, bytes);
    }
    return bytes;
  };

  return {
    encode(params) {
      const last = previous;
      const head =
        last &&
        last.head.model === params.model &&
        last.head.maxTokens === params.max_tokens &&
        last.head.thinking === thinkingKey(params) &&
        last.head.tools === params.tools &&
        sameSystem(last.head.system, params.system)
          ? last.head
          : headOf(params);
      const messages = params.messages;
      // How many leading messages are the very objects the previous body was made of.
      let kept = 0;
      if (last && last.head === head) {
        const limit = Math.min(last.messages.length, messages.length);
        while (kept < limit && last.messages[kept] === messages[kept]) kept++;
      }
      const parts: Buffer[] = [];
      const ends: number[] = [];
      let size: number;
      if (kept > 0 && last) {
        size = last.ends[kept - 1]!;
        parts.push(last.body.subarray(0, size));
        for (let i = 0; i < kept; i++) ends.push(last.ends[i]!);
      } else {
        size = head.bytes.length;
        parts.push(head.bytes);
      }
      for (let i = kept; i < messages.length; i++) {
        if (i > 0) {
          parts.push(COMMA);
          size += 1;
        }
        const bytes = bytesOf(messages[i]!);
        parts.push(bytes);
        size += bytes.length;
        ends.push(size);
      }
      parts.push(head.tail);
      size += head.tail.length;
      const body = Buffer.concat(parts, size);
      previous = { head, messages: [...messages], ends, body };
      return body;
    },
  };
}
