import type Anthropic from '@anthropic-ai/sdk';
import { loadedSdk } from './sdk.ts';

export type ModelErrorKind =
  | 'aborted'
  | 'prompt_too_long'
  | 'auth'
  | 'invalid_request'
  | 'model_unavailable'
  | 'rate_limited'
  | 'overloaded'
  | 'server_error'
  | 'connection'
  | 'cut_stream'
  | 'stream_error'
  | 'exhausted';

const RETRYABLE: ReadonlySet<ModelErrorKind> = new Set([
  'rate_limited',
  'overloaded',
  'server_error',
  'connection',
  'cut_stream',
  'stream_error',
]);

export class ModelError extends Error {
  readonly retryable: boolean;
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
    readonly requestId?: string,
    /** Nothing answered at the address (refused, unknown host, bad port): rarely fixed by waiting. */
    readonly unreachable = false,
  ) {
    super(message);
    this.name = 'ModelError';
    this.retryable = RETRYABLE.has(kind);
  }
}

const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused (nothing is listening there)',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved (DNS)',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'the network is unreachable',
};
const TRANSIENT: Record<string, string> = {
  ETIMEDOUT: 'the connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
  ECONNRESET: 'the connection was reset',
};

/**
 * The SDK says only "Connection error."; the reason is a few `cause`s down (fetch → socket). Says which
 * address could not be reached and why, once, in words ("connection refused", "does not resolve").
 */
function connectionError(error: Error, endpoint: string | undefined): ModelError {
  let reason = error.message;
  let unreachable = false;
  for (let cause: unknown = error.cause, depth = 0; cause instanceof Error && depth < 5; depth++) {
    const code = (cause as NodeJS.ErrnoException).code ?? '';
    if (UNREACHABLE[code]) {
      reason = UNREACHABLE[code];
      unreachable = true;
      break;
    }
    if (TRANSIENT[code]) {
      reason = TRANSIENT[code];
      break;
    }
    if (/CERT|SSL|TLS/i.test(code)) {
      reason = `TLS certificate problem (${code}): ${cause.message}`;
      unreachable = true;
      break;
    }
    if (cause.message && cause.message !== 'fetch failed') reason = cause.message;
    cause = cause.cause;
  }
  const where = endpoint ? ` at ${endpoint}` : '';
  return new ModelError(
    'connection',
    `Could not reach the model service${where}: ${reason}. Check ANTHROPIC_BASE_URL (or keel.baseUrl) and that the server runs.`,
    undefined,
    undefined,
    undefined,
    unreachable,
  );
}

function retryAfter(headers: Headers | undefined): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Number(ms);
  const s = headers?.get('retry-after');
  if (!s) return undefined;
  if (Number.isFinite(Number(s))) return Number(s) * 1000;
  const date = Date.parse(s);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

function apiMessage(error: InstanceType<typeof Anthropic.APIError>): string {
  // Anthropic and Vertex: {error: {message}}; Bedrock: {message}.
  const body = error.error as { error?: { message?: string }; message?: string } | undefined;
  return body?.error?.message ?? body?.message ?? error.message;
}

export function classifyError(error: unknown, signal: AbortSignal, endpoint?: string): ModelError {
  if (signal.aborted) return new ModelError('aborted', 'Aborted.');
  if (error instanceof ModelError) return error;
  const Sdk = loadedSdk();
  if (!Sdk) return classifyOther(error);
  if (error instanceof Sdk.APIUserAbortError || sdkClass(error, 'APIUserAbortError'))
    return new ModelError('aborted', 'Aborted.');
  if (error instanceof Sdk.APIConnectionError || sdkClass(error, 'APIConnectionError'))
    return connectionError(error as Error, endpoint);
  if (error instanceof Sdk.APIError || sdkClass(error, 'APIError'))
    return classifyApiError(error as InstanceType<typeof Sdk.APIError>);
  return classifyOther(error);
}

/**
 * The SDK's error classes by their `_errorName` (kept through minification) along the class chain: the
 * extension loads the Bedrock/Vertex SDKs from a file of their own (dist/platform-sdks.cjs), whose
 * copy of these classes is not the one `instanceof` knows.
 */
function sdkClass(error: unknown, name: string): boolean {
  let c: unknown = error instanceof Error ? error.constructor : undefined;
  for (let depth = 0; typeof c === 'function' && depth < 8; depth++, c = Object.getPrototypeOf(c))
    if (Object.hasOwn(c, '_errorName') && (c as { _errorName?: unknown })._errorName === name) return true;
  return false;
}

function classifyApiError(error: InstanceType<typeof Anthropic.APIError>): ModelError {
  const message = apiMessage(error);
  const requestId = error.requestID ?? undefined;
  const status = error.status;
  const type = (error.error as { error?: { type?: string } } | undefined)?.error?.type ?? error.type ?? '';
  if (status === undefined) {
    // An `event: error` in the middle of a stream.
    return new ModelError(
      'stream_error',
      `Stream error (${type || 'unknown'}): ${message}`,
      undefined,
      undefined,
      requestId,
    );
  }
  if (status === 400 && /prompt is too long/i.test(message)) {
    return new ModelError('prompt_too_long', message, status, undefined, requestId);
  }
  if (status === 401 || status === 403) {
    return new ModelError(
      'auth',
      `Authentication failed (${status}): ${message.replace(/\.$/, '')}. Check ANTHROPIC_API_KEY.`,
      status,
    );
  }
  if (status === 404) return new ModelError('model_unavailable', `Model not available: ${message}`, status);
  if (status === 429)
    return new ModelError(
      'rate_limited',
      `Rate limited (429): ${message}`,
      status,
      retryAfter(error.headers),
      requestId,
    );
  if (status === 529)
    return new ModelError(
      'overloaded',
      `Overloaded (529): ${message}`,
      status,
      retryAfter(error.headers),
      requestId,
    );
  if (status >= 500)
    return new ModelError(
      'server_error',
      `Server error (${status}): ${message}`,
      status,
      undefined,
      requestId,
    );
  return new ModelError(
    'invalid_request',
    `Request rejected (${status}): ${message}`,
    status,
    undefined,
    requestId,
  );
}

function classifyOther(error: unknown): ModelError {
  if (error instanceof Error && /terminated|socket|ECONNRESET|premature/i.test(error.message)) {
    return new ModelError('connection', `Connection error: ${error.message}`);
  }
  // The SDK's own words name its options, not what the user sets.
  if (error instanceof Error && /Could not resolve authentication method/i.test(error.message)) {
    return new ModelError(
      'auth',
      'No API key for the model service: set ANTHROPIC_API_KEY (any value for a local Anthropic-compatible server at ANTHROPIC_BASE_URL). `keel run --demo` tries Keel without one.',
    );
  }
  if ((error as NodeJS.ErrnoException | undefined)?.code === 'ERR_INVALID_URL') {
    const input = (error as { input?: unknown }).input;
    return new ModelError(
      'invalid_request',
      `The model service address is not a valid URL${typeof input === 'string' ? ` (${input})` : ''}: check ANTHROPIC_BASE_URL.`,
    );
  }
  return new ModelError('invalid_request', error instanceof Error ? error.message : String(error));
}

/** Exponential backoff with ±25 % jitter and a cap; `retry-after` wins when the server gives one. */
export function retryDelayMs(attempt: number, retryAfterMs?: number, baseMs = 1000, capMs = 30_000): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, 60_000);
  const exp = Math.min(capMs, baseMs * 2 ** attempt);
  return Math.round(exp * (0.75 + Math.random() * 0.5));
}
