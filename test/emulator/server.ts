import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { countInputTokens, createPromptCache, DEFAULT_MIN_CACHEABLE_TOKENS } from './cache.ts';
import { createIds, createRng } from './ids.ts';
import { checkExpectation, createReplyCursor, type ReplyCursor } from './scenario.ts';
import {
  buildContent,
  cutToMaxTokens,
  defaultStopReason,
  estimateOutputTokens,
  type OutMessage,
  streamEvents,
} from './sse.ts';
import { createOpenAIPromptCache } from './openai/cache.ts';
import { handleOpenAI, openaiRoute } from './openai/handler.ts';
import {
  type Platform,
  type PlatformRoute,
  platformFailure,
  platformGate,
  routeOf,
  toMessagesBody,
} from './platforms.ts';
import { createThinkingLedger, replyForRequest } from './thinking.ts';
import type { RecordedRequest, Scenario, UsageOut } from './types.ts';
import { type ErrorType, errorBody, pause, writeStream } from './writeStream.ts';
import { validateRequest } from './validate.ts';

export type {
  Fault,
  MessagesRequest,
  RecordedRequest,
  ReplyExpectation,
  Scenario,
  ScriptedBlock,
  ScriptedReply,
  UsageOut,
} from './types.ts';

export interface EmulatorOptions {
  scenario?: Scenario;
  /** Default 0 (ephemeral); the server binds 127.0.0.1 only. */
  port?: number;
  /** Injectable clock for cache TTL tests. */
  now?: () => number;
  /** Default 300_000 (the API's 5-minute TTL); `ttl: '1h'` breakpoints always live one hour. */
  cacheTtlMs?: number;
  /** Tokens; a larger prompt gets 400 "prompt is too long". Default 200_000. */
  contextWindow?: number;
  /** Seeds the PRNG that splits deltas and makes ids. */
  chunkSeed?: number;
  /** Addition beyond the contract: smallest cacheable prefix (default 1024, as the API for most models). */
  minCacheableTokens?: number;
  /**
   * The credentials accepted (x-api-key or Bearer token; for SigV4 the AWS access key id); any other
   * is refused as the service refuses it (401 authentication_error; Bedrock 403; Vertex 401).
   * Absent: any non-empty credential.
   */
  credentials?: string[];
  /** Valid credentials whose account is out of credit: every request gets this error. */
  exhausted?: { credentials: string[]; status?: 400 | 402 | 429; type?: string; message?: string };
  /** Models that take no `thinking` parameter: a request with one gets the API's 400. */
  noThinkingModels?: string[];
}

export interface Emulator {
  readonly url: string;
  readonly requests: RecordedRequest[];
  setScenario(s: Scenario): void;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 32 * 1024 * 1024;

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) reject(new BodyTooLarge());
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function headerMap(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const seed = options.chunkSeed ?? 0x5eed;
  const contextWindow = options.contextWindow ?? 200_000;
  const ids = createIds(createRng(seed ^ 0x9e3779b9));
  const cache = createPromptCache({
    now: options.now ?? Date.now,
    ttlMs: options.cacheTtlMs ?? 300_000,
    minCacheableTokens: options.minCacheableTokens ?? DEFAULT_MIN_CACHEABLE_TOKENS,
  });
  const requests: RecordedRequest[] = [];
  const active = new Set<AbortController>();
  let scenario = options.scenario;
  let cursor: ReplyCursor = createReplyCursor(scenario);
  let generated = 0;
  const thinkingLedger = createThinkingLedger();
  const openai = {
    requests,
    cursor: () => cursor,
    scenarioName: () => scenario?.name,
    ids,
    rng: createRng(seed ^ 0x0badcafe),
    streamRng: () => createRng(seed * 1_000_003 + generated++),
    cache: createOpenAIPromptCache({ now: options.now ?? Date.now, ttlMs: options.cacheTtlMs ?? 300_000 }),
    contextWindow,
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = ids.request();
    res.setHeader('request-id', requestId);
    const path = (req.url ?? '').split('?')[0] ?? '';
    const route: PlatformRoute | undefined = routeOf(path);
    const isCount = route?.count === true;
    const isMessages = route !== undefined && !isCount;
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(payload));
    };
    // The OpenAI APIs (Chat Completions, Responses, Azure's deployment paths): openai/handler.ts.
    const openaiApi = req.method === 'POST' ? openaiRoute(path ?? '') : undefined;
    if (openaiApi) return handleOpenAI(openai, req, res, openaiApi, requestId);
    if (req.method !== 'POST' || !route) {
      send(404, errorBody('not_found_error', `Not Found: ${req.method} ${path}`, requestId));
      return;
    }

    let raw: string;
    try {
      raw = await readBody(req);
    } catch (e) {
      if (e instanceof BodyTooLarge) {
        send(
          413,
          errorBody('request_too_large', 'Request exceeds the maximum allowed number of bytes.', requestId),
        );
      }
      return;
    }
    let body: unknown = raw;
    let jsonOk = true;
    const platform: Platform = route.platform;
    try {
      body = JSON.parse(raw);
    } catch {
      jsonOk = false;
    }
    const headers = headerMap(req);
    const record: RecordedRequest = { body, raw, headers, path, status: 0, requestId };
    if (isMessages) requests.push(record);
    const fail = (status: number, type: ErrorType, message: string, extra: Record<string, string> = {}) => {
      record.status = status;
      record.error = { type, message };
      // Bedrock answers in its own shape; Vertex passes the API's errors through.
      const own = platformFailure(platform, status, type, message);
      if (own) return send(own.status, own.body, { ...extra, ...own.headers });
      send(status, errorBody(type, message, requestId), extra);
    };

    // Who is asking, as each service checks it: Bedrock and Vertex before anything else.
    const gate = platformGate(route, headers, jsonOk ? body : undefined, options);
    if (gate.rejection) {
      record.status = gate.rejection.status;
      record.error = { type: 'platform', message: JSON.stringify(gate.rejection.body) };
      return send(gate.rejection.status, gate.rejection.body, gate.rejection.headers);
    }
    if (platform === 'anthropic') {
      if (!headers['x-api-key'] && !headers['authorization']) {
        return fail(401, 'authentication_error', 'x-api-key header is required');
      }
      if (gate.credential === undefined) return fail(401, 'authentication_error', 'invalid x-api-key');
      if (!headers['anthropic-version'])
        return fail(400, 'invalid_request_error', 'anthropic-version: header is required');
    }
    if (!jsonOk) return fail(400, 'invalid_request_error', 'There was an error parsing the body as JSON');
    const out = options.exhausted;
    if (out && gate.credential !== undefined && out.credentials.includes(gate.credential))
      return fail(
        out.status ?? 400,
        (out.type ?? (out.status === 429 ? 'rate_limit_error' : 'invalid_request_error')) as ErrorType,
        out.message ??
          'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
      );
    body = toMessagesBody(route, body);

    const countBody =
      isCount && typeof body === 'object' && body !== null ? { max_tokens: 1, ...body } : body;
    const validation = validateRequest(countBody);
    if (!validation.ok) return fail(400, 'invalid_request_error', validation.message);
    const request = validation.request;
    record.request = request;
    record.stream = request.stream === true;
    const total = countInputTokens(request);
    if (isCount) {
      record.status = 200;
      return send(200, { input_tokens: total });
    }
    if (total > contextWindow) {
      return fail(
        400,
        'invalid_request_error',
        `prompt is too long: ${total} tokens > ${contextWindow} maximum`,
      );
    }

    if (request.thinking && options.noThinkingModels?.includes(request.model))
      return fail(400, 'invalid_request_error', `${request.model} does not support thinking.`);
    const lostThinking = thinkingLedger.check(request);
    if (lostThinking) return fail(400, 'invalid_request_error', lostThinking);

    const pick = cursor.peek(request);
    if (pick.kind === 'exhausted') {
      return fail(
        400,
        'invalid_request_error',
        `scenario exhausted: all ${pick.consumed} scripted replies of ${scenario?.name ?? 'the scenario'} were used`,
      );
    }
    const reply = replyForRequest(pick.reply, request);
    // A reply scripted for another model is left for the fallback model; this one looks overloaded.
    if (reply.model !== undefined && reply.model !== request.model)
      return fail(529, 'overloaded_error', 'Overloaded');
    const unmet = checkExpectation(reply.expect, request);
    if (unmet)
      return fail(
        400,
        'invalid_request_error',
        `scenario expectation failed: reply #${pick.index}: ${unmet}`,
      );
    pick.consume();

    const fault = reply.fault;
    record.fault = fault?.type;
    switch (fault?.type) {
      case 'overloaded':
        return fail(529, 'overloaded_error', 'Overloaded');
      case 'rate_limit':
        return fail(
          429,
          'rate_limit_error',
          'This request would exceed the rate limit for your organization. Please retry after the time in the retry-after header.',
          { 'retry-after': String(fault.retryAfterSeconds ?? 1) },
        );
      case 'server_error':
        return fail(fault.status ?? 500, 'api_error', 'Internal server error');
      case 'prompt_too_long':
        return fail(
          400,
          'invalid_request_error',
          `prompt is too long: ${Math.max(total, contextWindow + 1)} tokens > ${contextWindow} maximum`,
        );
      case 'invalid_tool_json':
        if (!reply.content?.some((b) => b.type === 'tool_use')) {
          return fail(
            400,
            'invalid_request_error',
            'scenario error: invalid_tool_json needs a tool_use block',
          );
        }
        break;
      default:
        break;
    }

    const { content, cut: cutAtLimit } = cutToMaxTokens(buildContent(reply, ids), request.max_tokens);
    thinkingLedger.record(content);
    const usage: UsageOut = {
      ...cache.account(request),
      output_tokens: estimateOutputTokens(content),
      service_tier: 'standard',
    };
    record.usage = usage;
    const stopReason = cutAtLimit ? 'max_tokens' : defaultStopReason(reply);
    const message: OutMessage = {
      id: ids.message(),
      type: 'message',
      role: 'assistant',
      model: request.model,
      content,
      stop_reason: stopReason,
      stop_sequence: stopReason === 'stop_sequence' ? (request.stop_sequences?.[0] ?? null) : null,
      usage,
    };

    const abort = new AbortController();
    active.add(abort);
    let cutByUs = false;
    const cut = () => {
      cutByUs = true;
      res.destroy();
    };
    res.on('close', () => {
      // A scripted cut closes the socket itself; only a client that leaves early counts as a disconnect.
      if (!res.writableFinished && !cutByUs) record.clientDisconnected = true;
      abort.abort();
      active.delete(abort);
    });
    const slow = fault?.type === 'slow' ? fault : undefined;

    if (!record.stream) {
      if (fault?.type === 'cut_stream') return cut();
      if (fault?.type === 'mid_stream_error') return fail(529, 'overloaded_error', 'Overloaded');
      if (slow && !(await pause(slow.delayMs, abort.signal))) return;
      // A tool call cut at max_tokens has no complete input: the API gives what it has, here `{}`.
      const plain = {
        ...message,
        content: message.content.map((b) => (b.type === 'tool_use' ? { ...b, partialJson: undefined } : b)),
      };
      const payload =
        fault?.type === 'invalid_tool_json'
          ? { ...plain, content: corruptNonStreaming(message.content) }
          : plain;
      record.status = 200;
      send(200, payload);
      record.finished = true;
      return;
    }

    const events = streamEvents(message, createRng(seed * 1_000_003 + generated++), {
      corruptToolJson: fault?.type === 'invalid_tool_json',
    });
    await writeStream(res, record, events, fault, abort.signal, requestId, cut, platform);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      const message = e instanceof Error ? e.message : String(e);
      process.stderr.write(`emulator: internal error: ${message}\n`);
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(errorBody('api_error', `emulator internal error: ${message}`, 'req_internal')),
        );
      } else {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setScenario(s) {
      scenario = s;
      cursor = createReplyCursor(s);
    },
    close() {
      for (const a of active) a.abort();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

// Non-streaming has no partial JSON to break, so the tool input arrives as the unparseable raw string.
function corruptNonStreaming(content: OutMessage['content']): unknown[] {
  let done = false;
  return content.map((b) => {
    if (b.type !== 'tool_use' || done) return b;
    done = true;
    return { ...b, input: `${JSON.stringify(b.input).slice(0, -1)}, "oops": ]]` };
  });
}
