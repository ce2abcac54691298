import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Rng } from '../ids.ts';
import { checkExpectation, type ReplyCursor } from '../scenario.ts';
import type { IdSource } from '../ids.ts';
import { buildContent, cutToMaxTokens, estimateOutputTokens } from '../sse.ts';
import type { MessagesRequest, RecordedRequest } from '../types.ts';
import { chatUnits, type OpenAIPromptCache, responsesUnits } from './cache.ts';
import { chatChunks, openaiId, responseEvents, type Visible } from './stream.ts';
import { chatView, type OpenAIApi, OpenAIRequestError, responsesView } from './view.ts';

// `/v1/chat/completions`, `/v1/responses` and Azure's `/openai/deployments/NAME/chat/completions`
// on the same emulator server, with the same scenarios: the reply cursor and expectations see the
// request as a Messages request (view.ts); the reply goes out in OpenAI's wire format (stream.ts),
// usage with `cached_tokens` from the automatic prefix cache (cache.ts), errors as OpenAI sends them.

export interface OpenAIRoute {
  readonly api: OpenAIApi;
  /** The deployment of an Azure path (its model). */
  readonly deployment?: string;
}

export function openaiRoute(path: string): OpenAIRoute | undefined {
  if (path === '/v1/chat/completions') return { api: 'chat' };
  if (path === '/v1/responses') return { api: 'responses' };
  const azure = /^\/openai\/deployments\/([^/]+)\/chat\/completions$/.exec(path);
  if (azure) return { api: 'chat', deployment: decodeURIComponent(azure[1]!) };
  return undefined;
}

export interface OpenAIHandlerDeps {
  readonly requests: RecordedRequest[];
  readonly cursor: () => ReplyCursor;
  readonly scenarioName: () => string | undefined;
  readonly ids: IdSource;
  readonly rng: Rng;
  /** A fresh, seeded PRNG for one response's chunk splits. */
  readonly streamRng: () => Rng;
  readonly cache: OpenAIPromptCache;
  readonly contextWindow: number;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const OVERLOADED = 'That model is currently overloaded with other requests. You can retry your request.';
const SERVER_ERROR = 'The server had an error while processing your request. Sorry about that!';

export async function handleOpenAI(
  deps: OpenAIHandlerDeps,
  req: IncomingMessage,
  res: ServerResponse,
  route: OpenAIRoute,
  requestId: string,
): Promise<void> {
  res.setHeader('x-request-id', requestId);
  const raw = await readBody(req);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  let body: unknown = raw;
  try {
    body = JSON.parse(raw);
  } catch {
    // answered below
  }
  const record: RecordedRequest = { body, raw, headers, status: 0, requestId, api: route.api };
  deps.requests.push(record);
  const send = (status: number, payload: unknown, extra: Record<string, string> = {}) => {
    record.status = status;
    res.writeHead(status, { 'content-type': 'application/json', ...extra });
    res.end(JSON.stringify(payload));
  };
  const fail = (
    status: number,
    message: string,
    type: string,
    param: string | null = null,
    code: string | null = null,
    extra: Record<string, string> = {},
  ) => {
    record.error = { type, message };
    send(status, { error: { message, type, param, code } }, extra);
  };

  if (route.deployment !== undefined) {
    if (!headers['api-key'])
      return fail(
        401,
        'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
        'invalid_request_error',
        null,
        '401',
      );
    if (!new URL(req.url ?? '/', 'http://x').searchParams.get('api-version'))
      return fail(404, 'Resource not found', 'invalid_request_error', null, '404');
  } else {
    const auth = headers.authorization ?? '';
    const key = /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim();
    if (!key)
      return fail(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        'invalid_request_error',
      );
    if (key === 'invalid-key')
      return fail(
        401,
        'Incorrect API key provided: inval***-key.',
        'invalid_request_error',
        null,
        'invalid_api_key',
      );
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return fail(
      400,
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
      'invalid_request_error',
    );
  const obj = body as Record<string, unknown>;
  let view: MessagesRequest;
  try {
    view = route.api === 'chat' ? chatView(obj) : responsesView(obj);
  } catch (e) {
    if (e instanceof OpenAIRequestError)
      return fail(400, e.message, 'invalid_request_error', e.param, e.code);
    throw e;
  }
  if (route.deployment !== undefined) view = { ...view, model: route.deployment };
  record.request = view;
  record.stream = obj.stream === true;
  const usage0 = deps.cache.account(view.model, route.api === 'chat' ? chatUnits(obj) : responsesUnits(obj));
  const tooLong = (n: number) =>
    fail(
      400,
      `This model's maximum context length is ${deps.contextWindow} tokens. However, your messages resulted in ${n} tokens. Please reduce the length of the messages.`,
      'invalid_request_error',
      'messages',
      'context_length_exceeded',
    );
  if (usage0.prompt > deps.contextWindow) return tooLong(usage0.prompt);

  const pick = deps.cursor().peek(view);
  if (pick.kind === 'exhausted')
    return fail(
      400,
      `scenario exhausted: all ${pick.consumed} scripted replies of ${deps.scenarioName() ?? 'the scenario'} were used`,
      'invalid_request_error',
    );
  const reply = pick.reply;
  if (reply.model !== undefined && reply.model !== view.model) return fail(503, OVERLOADED, 'server_error');
  const unmet = checkExpectation(reply.expect, view);
  if (unmet)
    return fail(400, `scenario expectation failed: reply #${pick.index}: ${unmet}`, 'invalid_request_error');
  pick.consume();
  const fault = reply.fault;
  record.fault = fault?.type;
  switch (fault?.type) {
    case 'overloaded':
      return fail(503, OVERLOADED, 'server_error');
    case 'rate_limit': {
      const s = fault.retryAfterSeconds ?? 1;
      return fail(
        429,
        `Rate limit reached for ${view.model} in organization org-keelemulator on tokens per min (TPM): Limit 30000, Used 30000, Requested ${usage0.prompt}. Please try again in ${s}s.`,
        'tokens',
        null,
        'rate_limit_exceeded',
        {
          'retry-after': String(s),
          'x-ratelimit-limit-tokens': '30000',
          'x-ratelimit-remaining-tokens': '0',
          'x-ratelimit-reset-tokens': `${s}s`,
        },
      );
    }
    case 'server_error':
      return fail(fault.status ?? 500, SERVER_ERROR, 'server_error');
    case 'prompt_too_long':
      return tooLong(Math.max(usage0.prompt, deps.contextWindow + 1));
    default:
      break;
  }

  // OpenAI's models return no thinking blocks here: what a scripted reply thinks is left out.
  const built = buildContent(reply, deps.ids).filter(
    (b): b is Visible => b.type === 'text' || b.type === 'tool_use',
  );
  const { content, cut } = cutToMaxTokens(built, view.max_tokens);
  const blocks = content as Visible[];
  const callIds = blocks.filter((b) => b.type === 'tool_use').map(() => openaiId(deps.rng, 'call_'));
  const usage = { ...usage0, output: estimateOutputTokens(blocks) };
  record.openaiUsage = usage;
  const created = Math.floor(Date.now() / 1000);
  const rng = deps.streamRng();
  const corruptToolJson = fault?.type === 'invalid_tool_json';
  const hasCalls = blocks.some((b) => b.type === 'tool_use');
  const parts =
    route.api === 'chat'
      ? chatChunks({
          id: openaiId(deps.rng, 'chatcmpl-', 29),
          model: view.model,
          created,
          blocks,
          callIds,
          finish: cut ? 'length' : hasCalls ? 'tool_calls' : 'stop',
          usage,
          includeUsage:
            (obj.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true,
          corruptToolJson,
          rng,
        })
      : responseEvents({
          id: openaiId(deps.rng, 'resp_', 40),
          model: view.model,
          created,
          blocks,
          callIds,
          incomplete: cut,
          usage,
          corruptToolJson,
          rng,
        });
  if (!record.stream) {
    // Keel always streams; a plain request gets the assembled message without the stream's framing.
    return fail(
      400,
      'The emulator serves streamed requests only (set stream: true).',
      'invalid_request_error',
      'stream',
    );
  }
  await writeStream(res, record, parts, route.api, fault);
}

async function writeStream(
  res: ServerResponse,
  record: RecordedRequest,
  parts: string[],
  api: OpenAIApi,
  fault: { type: string; afterEvents?: number; delayMs?: number; perChunkDelayMs?: number } | undefined,
): Promise<void> {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) record.clientDisconnected = true;
    controller.abort();
  });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.flushHeaders();
  record.status = 200;
  record.eventsWritten = 0;
  const breakAt =
    fault?.type === 'mid_stream_error' || fault?.type === 'cut_stream'
      ? Math.min(fault.afterEvents ?? 4, parts.length - 1)
      : -1;
  for (const [i, part] of parts.entries()) {
    if (controller.signal.aborted) return;
    if (i === breakAt) {
      if (fault?.type === 'cut_stream') {
        res.destroy();
        return;
      }
      const error = { message: SERVER_ERROR, type: 'server_error', param: null, code: 'server_error' };
      record.error = { type: error.type, message: error.message };
      res.end(
        api === 'chat'
          ? `data: ${JSON.stringify({ error })}\n\n`
          : `event: error\ndata: ${JSON.stringify({ type: 'error', code: 'server_error', message: SERVER_ERROR, param: null, sequence_number: i })}\n\n`,
      );
      record.finished = true;
      return;
    }
    if (fault?.type === 'slow' && i > 0) {
      const ms = i === 1 ? (fault.delayMs ?? 0) : (fault.perChunkDelayMs ?? fault.delayMs ?? 0);
      try {
        await sleep(ms, undefined, { signal: controller.signal });
      } catch {
        return;
      }
    }
    await new Promise<void>((resolve) => res.write(part, () => resolve()));
    record.eventsWritten++;
  }
  res.end();
  record.finished = true;
}
