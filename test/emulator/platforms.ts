// The same Messages API served as Amazon Bedrock and Google Vertex AI serve it, for the official
// `@anthropic-ai/bedrock-sdk` / `@anthropic-ai/vertex-sdk` clients:
// - Bedrock: POST /model/{modelId}/invoke[-with-response-stream]; the body carries
//   `anthropic_version: "bedrock-2023-05-31"` and no `model`/`stream` (both are refused, as Bedrock
//   refuses extraneous keys); a SigV4 `Authorization` (or a Bedrock API key as a Bearer token) is
//   required; a stream is AWS event-stream binary framing, one `chunk` message per Anthropic event,
//   its payload `{"bytes": base64(event JSON)}`, prelude and message CRC32s as the SDK checks them;
//   errors are `{"message"}` with an `x-amzn-ErrorType` header.
// - Vertex: POST /v1/projects/{p}/locations/{r}/publishers/anthropic/models/{model}:streamRawPredict
//   (or :rawPredict); the body carries `anthropic_version: "vertex-2023-10-16"` and no `model`;
//   a Bearer token is required (Google's error shape when it is missing); the response is the
//   Anthropic SSE stream.

export type Platform = 'anthropic' | 'bedrock' | 'vertex';

export interface PlatformRoute {
  readonly platform: Platform;
  /** From the path (Bedrock, Vertex). */
  readonly model?: string;
  readonly stream?: boolean;
  readonly count?: boolean;
  readonly region?: string;
  readonly project?: string;
}

const BEDROCK = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream)$/;
const VERTEX =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/anthropic\/models\/([^/:]+):(streamRawPredict|rawPredict)$/;

export function routeOf(path: string): PlatformRoute | undefined {
  if (path === '/v1/messages') return { platform: 'anthropic' };
  if (path === '/v1/messages/count_tokens') return { platform: 'anthropic', count: true };
  const b = BEDROCK.exec(path);
  if (b)
    return {
      platform: 'bedrock',
      model: decodeURIComponent(b[1]!),
      stream: b[2] === 'invoke-with-response-stream',
    };
  const v = VERTEX.exec(path);
  if (v)
    return {
      platform: 'vertex',
      project: decodeURIComponent(v[1]!),
      region: decodeURIComponent(v[2]!),
      model: decodeURIComponent(v[3]!),
      stream: v[4] === 'streamRawPredict',
    };
  return undefined;
}

export const BEDROCK_VERSION = 'bedrock-2023-05-31';
export const VERTEX_VERSION = 'vertex-2023-10-16';

export interface Rejection {
  readonly status: number;
  /** The platform's own error body and headers. */
  readonly body: unknown;
  readonly headers?: Record<string, string>;
}

const SIGV4 =
  /^AWS4-HMAC-SHA256 Credential=([^/\s]+)\/(\d{8})\/([a-z0-9-]+)\/bedrock\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=[0-9a-f]{64}$/;

export function bedrockError(status: number, errorType: string, message: string): Rejection {
  return {
    status,
    body: { message },
    headers: { 'x-amzn-errortype': `${errorType}:http://internal.amazon.com/coral/com.amazon.bedrock/` },
  };
}

/** Bedrock's checks before the model sees anything: the credential, then the body's shape. */
export function checkBedrock(
  headers: Record<string, string>,
  body: unknown,
  keys: ReadonlySet<string> | undefined,
): Rejection | undefined {
  const auth = headers.authorization ?? '';
  if (!auth) return bedrockError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  if (auth.startsWith('Bearer ')) {
    if (keys && !keys.has(auth.slice(7)))
      return bedrockError(
        403,
        'UnrecognizedClientException',
        'Invalid API Key format: Must start with pre-defined prefix',
      );
  } else {
    const sig = SIGV4.exec(auth);
    if (!sig || !headers['x-amz-date'])
      return bedrockError(
        403,
        'InvalidSignatureException',
        'The request signature we calculated does not match the signature you provided.',
      );
    const signed = sig[4]!.split(';');
    if (!signed.includes('host') || !signed.includes('x-amz-date'))
      return bedrockError(
        403,
        'InvalidSignatureException',
        'Signed headers must include host and x-amz-date.',
      );
    if (keys && !keys.has(sig[1]!))
      return bedrockError(
        403,
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      );
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return bedrockError(
      400,
      'ValidationException',
      'Malformed input request, please reformat your input and try again.',
    );
  const b = body as Record<string, unknown>;
  if (b.anthropic_version !== BEDROCK_VERSION)
    return bedrockError(
      400,
      'ValidationException',
      `Malformed input request: #: required key [anthropic_version] not found or not ${BEDROCK_VERSION}, please reformat your input and try again.`,
    );
  for (const key of ['model', 'stream'])
    if (key in b)
      return bedrockError(
        400,
        'ValidationException',
        `Malformed input request: #: extraneous key [${key}] is not permitted, please reformat your input and try again.`,
      );
  return undefined;
}

/** Vertex's checks: a Bearer token, then the body's shape (model errors are the Anthropic ones). */
export function checkVertex(
  headers: Record<string, string>,
  body: unknown,
  keys: ReadonlySet<string> | undefined,
): Rejection | undefined {
  const auth = headers.authorization ?? '';
  const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
  if (!token || (keys && !keys.has(token)))
    return {
      status: 401,
      body: {
        error: {
          code: 401,
          message:
            'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
          status: 'UNAUTHENTICATED',
        },
      },
    };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const b = body as Record<string, unknown>;
  const anthropicError = (message: string): Rejection => ({
    status: 400,
    body: { type: 'error', error: { type: 'invalid_request_error', message } },
  });
  if (b.anthropic_version !== VERTEX_VERSION)
    return anthropicError(`anthropic_version: Input should be '${VERTEX_VERSION}'`);
  if ('model' in b) return anthropicError('model: Extra inputs are not permitted');
  return undefined;
}

/** The platform body as the Messages API body the rest of the emulator checks and answers. */
export function toMessagesBody(route: PlatformRoute, body: unknown): unknown {
  if (route.platform === 'anthropic' || typeof body !== 'object' || body === null) return body;
  const { anthropic_version: _v, anthropic_beta: _b, ...rest } = body as Record<string, unknown>;
  return { ...rest, model: route.model, stream: route.platform === 'bedrock' ? route.stream : rest.stream };
}

// AWS event-stream framing: [total length][headers length][prelude CRC] headers payload [message CRC].
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function encodeHeaders(headers: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const n = Buffer.from(name, 'utf8');
    const v = Buffer.from(value, 'utf8');
    const h = Buffer.alloc(1 + n.length + 1 + 2 + v.length);
    h.writeUInt8(n.length, 0);
    n.copy(h, 1);
    h.writeUInt8(7, 1 + n.length); // string
    h.writeUInt16BE(v.length, 2 + n.length);
    v.copy(h, 4 + n.length);
    parts.push(h);
  }
  return Buffer.concat(parts);
}

export function encodeEventStreamMessage(headers: Record<string, string>, payload: Uint8Array): Buffer {
  const h = encodeHeaders(headers);
  const total = 12 + h.length + payload.length + 4;
  const out = Buffer.alloc(total);
  out.writeUInt32BE(total, 0);
  out.writeUInt32BE(h.length, 4);
  out.writeUInt32BE(crc32(out.subarray(0, 8)), 8);
  h.copy(out, 12);
  Buffer.from(payload).copy(out, 12 + h.length);
  out.writeUInt32BE(crc32(out.subarray(0, total - 4)), total - 4);
  return out;
}

/** One Anthropic stream event as Bedrock sends it. */
export function bedrockChunk(event: Record<string, unknown>): Buffer {
  const bytes = Buffer.from(JSON.stringify(event), 'utf8').toString('base64');
  return encodeEventStreamMessage(
    { ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' },
    Buffer.from(JSON.stringify({ bytes }), 'utf8'),
  );
}

/** A mid-stream failure as Bedrock sends it (the SDK turns it into an SSE `error` event). */
export function bedrockException(exceptionType: string, message: string): Buffer {
  return encodeEventStreamMessage(
    { ':exception-type': exceptionType, ':content-type': 'application/json', ':message-type': 'exception' },
    Buffer.from(JSON.stringify({ message }), 'utf8'),
  );
}

export interface GateOptions {
  readonly credentials?: readonly string[];
}

/**
 * The platform's own checks (credential, body shape) and the credential the request used: an
 * Anthropic key / token, a Bedrock bearer key or SigV4 access key id, a Vertex token. `credential`
 * is undefined when a credential list is configured and this one is not on it.
 */
export function platformGate(
  route: PlatformRoute,
  headers: Record<string, string>,
  body: unknown,
  options: GateOptions,
): { rejection?: Rejection; credential?: string } {
  const keys = options.credentials ? new Set(options.credentials) : undefined;
  const auth = headers.authorization ?? '';
  if (route.platform === 'bedrock') {
    const rejection = checkBedrock(headers, body, keys);
    const credential = auth.startsWith('Bearer ')
      ? auth.slice(7)
      : (/Credential=([^/\s]+)\//.exec(auth)?.[1] ?? '');
    return rejection ? { rejection } : { credential };
  }
  if (route.platform === 'vertex') {
    const rejection = checkVertex(headers, body, keys);
    return rejection ? { rejection } : { credential: auth.slice(7) };
  }
  const credential = headers['x-api-key'] ?? (auth.startsWith('Bearer ') ? auth.slice(7) : auth);
  return keys && !keys.has(credential) ? {} : { credential };
}

const BEDROCK_TYPES: Record<number, string> = {
  400: 'ValidationException',
  402: 'AccessDeniedException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  413: 'ValidationException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
  529: 'ServiceUnavailableException',
};

/** An API error as the platform sends it; undefined: the Anthropic shape (Anthropic, Vertex). */
export function platformFailure(
  platform: Platform,
  status: number,
  _type: string,
  message: string,
): Rejection | undefined {
  if (platform !== 'bedrock') return undefined;
  // Bedrock has no 529: an overloaded model is a 503 there.
  const code = status === 529 ? 503 : status;
  return bedrockError(code, BEDROCK_TYPES[status] ?? 'InternalServerException', message);
}
