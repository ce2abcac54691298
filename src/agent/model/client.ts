import type Anthropic from '@anthropic-ai/sdk';
import type { AssistantBlock, Usage } from '../messages.ts';
import { classifyError, ModelError, retryDelayMs } from './errors.ts';
import { createLimiter, type Limiter } from './limiter.ts';
import { type Effort, outputLimitFor, thinkingPlan } from './models.ts';
import { type BodyEncoder, createBodyEncoder } from './requestBody.ts';
import type { ModelProvider } from './providers/types.ts';
import { createRoutes, type MessagesClient } from './routes.ts';
import {
  allRefused,
  isProfileFailure,
  providerHint,
  isThinkingRejection,
  lowerEffort,
  shortReason,
} from './ladder.ts';
import type { AuthProfile } from './profiles.ts';
import { platformModelId } from './anthropicFamily.ts';

// Streaming model client over the real SDK. The SDK's own retries are off: it cannot retry a stream
// that has already started, so one policy (ours) covers HTTP errors, mid-stream errors and cut streams.

export interface ModelRequest {
  readonly system: Anthropic.TextBlockParam[];
  readonly tools: Anthropic.Tool[];
  readonly messages: Anthropic.MessageParam[];
  /** Capped at each model's own output limit (models.ts). */
  readonly maxTokens: number;
  /** Thinking at this level where the model thinks; absent = no thinking (summaries, warm-up). */
  readonly effort?: Effort;
}

export interface StreamCallbacks {
  onStart?(messageId: string, model: string): void;
  onDelta?(blockIndex: number, kind: 'text' | 'thinking' | 'tool_input', delta: string): void;
  onRetry?(info: { attempt: number; delayMs: number; reason: string; model: string }): void;
  /** A partial reply that will not reach the model (the stream failed and is being retried). */
  onDiscard?(partial: { model: string; content: AssistantBlock[]; reason: string }): void;
  /** A rung of the failover ladder was taken: another auth profile, or a lower thinking level. */
  onSwitch?(info: { rung: 'profile' | 'thinking'; from: string; to: string; text: string }): void;
}

export interface ModelReply {
  readonly content: AssistantBlock[];
  readonly model: string;
  readonly stopReason: string | null;
  readonly usage: Usage;
  /** The `max_tokens` this reply was asked with (a reply cut there may be retried with more). */
  readonly maxTokens: number;
  readonly latencyMs: number;
  readonly ttftMs: number;
}

export interface ModelClientOptions {
  /** With `baseURL`: this one credential only (the demo, tests, the extension's stored key). */
  readonly apiKey?: string;
  readonly baseURL?: string;
  /** Credentials tried in order; default: the environment's, then `<keelHome>/auth.json` (profiles.ts). */
  readonly profiles?: readonly AuthProfile[];
  /** Primary model first, then fallbacks in order. */
  readonly models: readonly string[];
  readonly maxRetries?: number;
  readonly retryBaseMs?: number;
  readonly retryCapMs?: number;
  /** How long a model that exhausted its retries is skipped. */
  readonly cooldownMs?: number;
  readonly now?: () => number;
  readonly limiter?: Limiter;
  /** The provider of a model not served by Anthropic (providers/); undefined: this file's own path. */
  readonly providerFor?: (model: string) => ModelProvider | undefined;
}

export interface ModelClient {
  readonly models: readonly string[];
  stream(request: ModelRequest, signal: AbortSignal, callbacks?: StreamCallbacks): Promise<ModelReply>;
}

// Concurrent model calls across every session in this process (sub-agents share it).
const globalLimiter = createLimiter(4);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new ModelError('aborted', 'Aborted.'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new ModelError('aborted', 'Aborted.'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface MutableUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cacheWrite1h: number;
}

interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_creation?: { ephemeral_1h_input_tokens?: number | null } | null;
}

/** Later usage reports (message_delta) override earlier ones field by field; absent fields keep theirs. */
function readUsage(into: MutableUsage, wire: WireUsage | null | undefined): void {
  if (!wire) return;
  if (wire.input_tokens != null) into.input = wire.input_tokens;
  if (wire.output_tokens != null) into.output = wire.output_tokens;
  if (wire.cache_read_input_tokens != null) into.cacheRead = wire.cache_read_input_tokens;
  if (wire.cache_creation_input_tokens != null) into.cacheWrite = wire.cache_creation_input_tokens;
  const oneHour = wire.cache_creation?.ephemeral_1h_input_tokens;
  if (oneHour != null) into.cacheWrite1h = oneHour;
}

interface BlockState {
  block: AssistantBlock;
  json: string;
}

const JSON_CONTENT = { 'content-type': 'application/json' } as const;

async function streamOnce(
  client: MessagesClient,
  /** Absent for Bedrock/Vertex: their SDKs rewrite the body from its text, so it goes as the SDK makes it. */
  encoder: BodyEncoder | undefined,
  model: string,
  request: ModelRequest,
  signal: AbortSignal,
  callbacks: StreamCallbacks,
  partialOut: AssistantBlock[],
): Promise<ModelReply> {
  const started = performance.now();
  let ttft = -1;
  const blocks: BlockState[] = [];
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheWrite1h: 0 };
  let stopReason: string | null = null;
  let sawStop = false;
  let actualModel = model;
  const maxTokens = Math.min(request.maxTokens, outputLimitFor(model));
  // Per model, not per session: a fallback model may think differently or not at all.
  const plan = thinkingPlan(model, request.effort, maxTokens);
  // thinking/output_config sit before system/tools/messages in the body; the prompt (and its cache
  // prefix) is tools → system → messages whatever the body's key order, so P1 holds.
  const params = {
    model,
    max_tokens: maxTokens,
    ...(plan.thinking ? { thinking: plan.thinking } : {}),
    ...(plan.outputConfig ? { output_config: plan.outputConfig } : {}),
    system: request.system,
    tools: request.tools,
    messages: request.messages,
    stream: true,
  } as const;
  // The SDK's own messages.create (headers, timeout, warnings, error classes, SSE parsing) with the
  // body pre-serialised: a request option's `body` is sent as given, and only what is new since the
  // previous call was stringified (requestBody.ts; byte-identical to the SDK's JSON.stringify).
  const stream = await client.messages.create(params, {
    signal,
    ...(encoder ? { body: encoder.encode(params) } : {}),
    headers: plan.beta ? { ...JSON_CONTENT, 'anthropic-beta': plan.beta } : JSON_CONTENT,
  });
  const snapshot = () => {
    partialOut.length = 0;
    for (const b of blocks) partialOut.push(b.block);
  };
  for await (const event of stream) {
    switch (event.type) {
      case 'message_start': {
        actualModel = event.message.model || model;
        // Compatible servers (local model servers, proxies) may omit usage or its fields entirely.
        readUsage(usage, event.message.usage);
        callbacks.onStart?.(event.message.id, actualModel);
        break;
      }
      case 'content_block_start': {
        if (ttft < 0) ttft = performance.now() - started;
        const cb = event.content_block;
        let block: AssistantBlock;
        if (cb.type === 'text') block = { type: 'text', text: cb.text ?? '' };
        else if (cb.type === 'thinking')
          block = { type: 'thinking', thinking: cb.thinking ?? '', signature: cb.signature ?? '' };
        else if (cb.type === 'redacted_thinking') block = { type: 'redacted_thinking', data: cb.data };
        else if (cb.type === 'tool_use') block = { type: 'tool_use', id: cb.id, name: cb.name, input: {} };
        else continue;
        blocks[event.index] = { block, json: '' };
        break;
      }
      case 'content_block_delta': {
        const state = blocks[event.index];
        if (!state) break;
        const d = event.delta;
        if (d.type === 'text_delta' && state.block.type === 'text') {
          state.block = { ...state.block, text: state.block.text + d.text };
          callbacks.onDelta?.(event.index, 'text', d.text);
        } else if (d.type === 'thinking_delta' && state.block.type === 'thinking') {
          state.block = { ...state.block, thinking: state.block.thinking + d.thinking };
          callbacks.onDelta?.(event.index, 'thinking', d.thinking);
        } else if (d.type === 'signature_delta' && state.block.type === 'thinking') {
          state.block = { ...state.block, signature: state.block.signature + d.signature };
        } else if (d.type === 'input_json_delta') {
          state.json += d.partial_json;
          callbacks.onDelta?.(event.index, 'tool_input', d.partial_json);
        }
        snapshot();
        break;
      }
      case 'content_block_stop': {
        const state = blocks[event.index];
        if (state?.block.type === 'tool_use') {
          const raw = state.json.trim();
          try {
            const parsed: unknown = raw === '' ? {} : JSON.parse(raw);
            if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
              throw new Error('not an object');
            state.block = { ...state.block, input: parsed as Record<string, unknown> };
          } catch {
            // Invalid JSON from the model becomes an INVALID_PARAM result it can correct (not a crash).
            state.block = { ...state.block, input: {}, invalidJson: state.json };
          }
        }
        snapshot();
        break;
      }
      case 'message_delta':
        stopReason = event.delta.stop_reason ?? stopReason;
        readUsage(usage, event.usage);
        break;
      case 'message_stop':
        sawStop = true;
        break;
    }
  }
  if (signal.aborted) throw new ModelError('aborted', 'Aborted.');
  if (!sawStop) throw new ModelError('cut_stream', 'The response stream ended before message_stop.');
  const content = blocks.filter(Boolean).map((b) => b.block);
  // The call max_tokens stopped in the middle of: its input is partial even when it happens to parse.
  const last = content.at(-1);
  if (stopReason === 'max_tokens' && last?.type === 'tool_use')
    content[content.length - 1] = {
      ...last,
      input: {},
      invalidJson: blocks.at(-1)?.json ?? '',
      truncated: true,
    };
  return {
    content,
    model: actualModel,
    stopReason,
    usage,
    maxTokens,
    latencyMs: Math.round(performance.now() - started),
    ttftMs: Math.round(ttft < 0 ? performance.now() - started : ttft),
  };
}

export function createModelClient(options: ModelClientOptions): ModelClient {
  if (options.models.length === 0) throw new Error('createModelClient: at least one model is required');
  const encoder = createBodyEncoder();
  const maxRetries = options.maxRetries ?? 4;
  const now = options.now ?? Date.now;
  const limiter = options.limiter ?? globalLimiter;
  const coolingUntil = new Map<string, number>();
  const routes = createRoutes(options, now);
  // Lowered when a model rejects the thinking parameters (ladder.ts), for the rest of this client.
  const effortCap = new Map<string, Effort | 'off'>();

  return {
    models: options.models,
    async stream(originalRequest, signal, callbacks = {}) {
      let request = originalRequest;
      const available = options.models.filter((m) => (coolingUntil.get(m) ?? 0) <= now());
      const order = available.length > 0 ? available : [...options.models];
      let lastError: ModelError | undefined;
      for (const model of order) {
        const provider = options.providerFor?.(model);
        const route = provider ? undefined : routes.forModel(model);
        const refused = new Set<AuthProfile>();
        for (let attempt = 0; attempt <= maxRetries; attempt++) {
          const partial: AssistantBlock[] = [];
          // A model another provider serves (providers/) has no profile ring: its provider holds its key.
          const profile = route?.ring.current();
          if (route && (!profile || refused.has(profile))) throw allRefused(route.ring);
          const wireModel = route && profile ? platformModelId(profile.provider, route.model) : model;
          const cap = effortCap.get(wireModel);
          const effort = cap === 'off' ? undefined : (cap ?? request.effort);
          let sdk: MessagesClient | undefined;
          try {
            const { effort: _asked, ...rest } = request;
            const sent: ModelRequest = effort ? { ...rest, effort } : rest;
            if (provider)
              return await limiter.run(
                () => provider.stream({ model, request: sent, signal, callbacks, partial }),
                signal,
              );
            sdk = await route!.sdkFor(profile!);
            const client = sdk;
            const bodyEncoder = profile!.provider === 'anthropic' ? encoder : undefined;
            return await limiter.run(
              () => streamOnce(client, bodyEncoder, wireModel, sent, signal, callbacks, partial),
              signal,
            );
          } catch (error) {
            const base =
              error instanceof ModelError
                ? error
                : provider
                  ? provider.classify(error, signal)
                  : classifyError(error, signal, sdk?.baseURL);
            const classified = profile ? providerHint(base, profile) : base;
            if (partial.length > 0)
              callbacks.onDiscard?.({ model, content: [...partial], reason: classified.message });
            // Some models/endpoints allow fewer output tokens than we ask for: adopt their limit.
            const limit = Number(/max_tokens: \d+ > (\d+)/.exec(classified.message)?.[1] ?? 0);
            if (classified.kind === 'invalid_request' && limit > 0 && limit < request.maxTokens) {
              request = { ...request, maxTokens: limit };
              attempt--;
              continue;
            }
            // The ladder: another profile, then less thinking, then (below) the next model.
            const failure = route && profile ? isProfileFailure(classified) : undefined;
            if (failure && route && profile) {
              // One profile: the error as it always was (a fixed key is a new profile, not a cooled one).
              if (route.ring.size === 1) throw classified;
              refused.add(profile);
              route.ring.fail(profile, failure, shortReason(classified));
              const next = route.ring.current();
              if (!next || refused.has(next)) throw allRefused(route.ring);
              const why = failure === 'auth' ? 'rejected' : 'is out of credit/quota';
              const text = `profile '${profile.name}' ${why} (${classified.status}): switched to '${next.name}'`;
              callbacks.onSwitch?.({ rung: 'profile', from: profile.name, to: next.name, text });
              attempt--;
              continue;
            }
            if (effort && isThinkingRejection(classified)) {
              // A model that takes no thinking at all gets none; a budget or level problem, one level less.
              const lower = /not support/i.test(classified.message) ? undefined : lowerEffort(effort);
              effortCap.set(wireModel, lower ?? 'off');
              const to = lower ?? 'off';
              const text = `${wireModel} rejected thinking at '${effort}' (${shortReason(classified)}): thinking ${lower ? `lowered to '${lower}'` : 'turned off'}`;
              callbacks.onSwitch?.({ rung: 'thinking', from: effort, to, text });
              attempt--;
              continue;
            }
            if (!classified.retryable) {
              if (classified.kind === 'model_unavailable') {
                lastError = classified;
                break;
              }
              throw classified;
            }
            lastError = classified;
            // Nothing listens at the address: a server still starting gets two short retries, not a
            // minute of backoff (four retries took 17 s before saying "Connection error.").
            if (attempt >= (classified.unreachable ? Math.min(maxRetries, 2) : maxRetries)) break;
            const delayMs = retryDelayMs(
              attempt,
              classified.retryAfterMs,
              options.retryBaseMs,
              options.retryCapMs,
            );
            callbacks.onRetry?.({ attempt: attempt + 1, delayMs, reason: classified.message, model });
            await sleep(delayMs, signal);
          }
        }
        coolingUntil.set(model, now() + (options.cooldownMs ?? 60_000));
        const next = order[order.indexOf(model) + 1];
        if (next)
          callbacks.onRetry?.({
            attempt: 0,
            delayMs: 0,
            reason: `falling back to ${next}: ${lastError?.message}`,
            model: next,
          });
      }
      throw new ModelError(
        'exhausted',
        `The model service kept failing (${order.join(', ')}): ${lastError?.message ?? 'unknown error'}`,
      );
    },
  };
}
