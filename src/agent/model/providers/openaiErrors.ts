import type * as OpenAISdk from 'openai';
import { ModelError } from '../errors.ts';

// The `openai` SDK's errors as Keel's kinds (errors.ts), with the error body OpenAI sends
// (`{"error":{"message","type","param","code"}}`) read for its words and code, and the waits it asks
// for (retry-after-ms, retry-after, x-ratelimit-reset-*) honoured.

export interface OpenAIErrorContext {
  /** Which provider, for messages: openai, azure, ollama. */
  readonly provider: string;
  /** Where the key comes from, e.g. "OPENAI_API_KEY". */
  readonly keyHint: string;
  /** Where the address comes from, e.g. "OPENAI_BASE_URL". */
  readonly urlHint: string;
  readonly endpoint: string | undefined;
}

const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused (nothing is listening there)',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved (DNS)',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'the network is unreachable',
};

/** "1s", "6m0s", "250ms", "1.5s" (x-ratelimit-reset-*) in ms. */
function resetMs(text: string | null | undefined): number | undefined {
  if (!text) return undefined;
  let ms = 0;
  let matched = false;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    matched = true;
    const n = Number(m[1]);
    ms += m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : m[2] === 'm' ? n * 60_000 : n * 3_600_000;
  }
  return matched ? Math.ceil(ms) : undefined;
}

export function openaiRetryAfter(headers: Headers | undefined): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Number(ms);
  const s = headers?.get('retry-after');
  if (s) {
    if (Number.isFinite(Number(s))) return Number(s) * 1000;
    const date = Date.parse(s);
    if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  }
  const resets = [headers?.get('x-ratelimit-reset-requests'), headers?.get('x-ratelimit-reset-tokens')]
    .map(resetMs)
    .filter((n): n is number => n !== undefined);
  return resets.length > 0 ? Math.max(...resets) : undefined;
}

interface ErrorBody {
  message?: unknown;
  type?: unknown;
  code?: unknown;
}

function bodyOf(error: { error?: unknown }): ErrorBody {
  const e = error.error as (ErrorBody & { error?: ErrorBody }) | undefined;
  return (e?.error ?? e ?? {}) as ErrorBody;
}

function connection(error: Error, ctx: OpenAIErrorContext): ModelError {
  let reason = error.message;
  let unreachable = false;
  for (let cause: unknown = error.cause, depth = 0; cause instanceof Error && depth < 5; depth++) {
    const code = (cause as { code?: string }).code ?? '';
    if (UNREACHABLE[code]) {
      reason = UNREACHABLE[code];
      unreachable = true;
      break;
    }
    if (cause.message && cause.message !== 'fetch failed') reason = cause.message;
    cause = cause.cause;
  }
  const where = ctx.endpoint ? ` at ${ctx.endpoint}` : '';
  return new ModelError(
    'connection',
    `Could not reach the ${ctx.provider} model service${where}: ${reason}. Check ${ctx.urlHint} and that the server runs.`,
    undefined,
    undefined,
    undefined,
    unreachable,
  );
}

export function classifyOpenAIError(
  sdk: typeof OpenAISdk | undefined,
  error: unknown,
  signal: AbortSignal,
  ctx: OpenAIErrorContext,
): ModelError {
  if (signal.aborted) return new ModelError('aborted', 'Aborted.');
  if (error instanceof ModelError) return error;
  if (sdk && error instanceof sdk.APIUserAbortError) return new ModelError('aborted', 'Aborted.');
  if (sdk && error instanceof sdk.APIConnectionError) return connection(error, ctx);
  if (sdk && error instanceof sdk.APIError) {
    const body = bodyOf(error);
    const message = typeof body.message === 'string' && body.message ? body.message : error.message;
    const code = typeof body.code === 'string' ? body.code : '';
    const type = typeof body.type === 'string' ? body.type : '';
    const status = error.status;
    const requestId = error.requestID ?? undefined;
    if (status === undefined)
      return new ModelError(
        'stream_error',
        `Stream error (${code || type || 'unknown'}): ${message}`,
        undefined,
        undefined,
        requestId,
      );
    if (code === 'context_length_exceeded' || /maximum context length|context (length|window)/i.test(message))
      return new ModelError('prompt_too_long', message, status, undefined, requestId);
    if (status === 401 || status === 403)
      return new ModelError(
        'auth',
        `Authentication failed (${status}): ${message}. Check ${ctx.keyHint}.`,
        status,
      );
    if (status === 404) return new ModelError('model_unavailable', `Model not available: ${message}`, status);
    if (status === 429) {
      // Out of credit is a 429 too, and no wait fixes it.
      if (code === 'insufficient_quota')
        return new ModelError(
          'invalid_request',
          `The ${ctx.provider} account has no quota left (429 insufficient_quota): ${message}`,
          status,
          undefined,
          requestId,
        );
      return new ModelError(
        'rate_limited',
        `Rate limited (429): ${message}`,
        status,
        openaiRetryAfter(error.headers),
        requestId,
      );
    }
    if (status >= 500)
      return new ModelError(
        status === 503 ? 'overloaded' : 'server_error',
        `Server error (${status}): ${message}`,
        status,
        openaiRetryAfter(error.headers),
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
  if (error instanceof Error && /terminated|socket|ECONNRESET|premature/i.test(error.message))
    return new ModelError('connection', `Connection error: ${error.message}`);
  return new ModelError('invalid_request', error instanceof Error ? error.message : String(error));
}
