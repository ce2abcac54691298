import type { AssistantBlock, Usage } from '../../messages.ts';
import type { ModelReply, StreamCallbacks } from '../client.ts';
import { ModelError } from '../errors.ts';

// The OpenAI streams (Chat Completions chunks, Responses events) read into Keel's reply: text and
// tool-call blocks in the order they began, tool arguments joined from their fragments (parallel calls
// keyed by their index or item id), usage with the cached share mapped to Keel's cache-read tokens,
// the finish reason in Keel's (Messages API) words. A stream that ends before it says it is done is a
// cut stream (retried), never a short answer.

export interface ReadOptions {
  /** How the reply's model is named: `openai:gpt-4.1-2025-04-14`. */
  readonly qualify: (serverModel: string) => string;
  readonly wireModel: string;
  readonly maxTokens: number;
  readonly callbacks: StreamCallbacks;
  readonly partial: AssistantBlock[];
  readonly signal: AbortSignal;
  readonly started: number;
}

interface BlockState {
  block: AssistantBlock;
  json: string;
}

let idCounter = 0;
function fallbackCallId(): string {
  idCounter++;
  return `call_keel${Date.now().toString(36)}${idCounter.toString(36)}`;
}

/** The blocks of a reply as it streams; shared by both APIs. */
function createAssembler(options: ReadOptions) {
  const blocks: BlockState[] = [];
  let ttft = -1;
  const snapshot = () => {
    options.partial.length = 0;
    for (const b of blocks) options.partial.push(b.block);
  };
  const firstOutput = () => {
    if (ttft < 0) ttft = performance.now() - options.started;
  };
  return {
    blocks,
    /** A new text block (index returned). */
    openText(): number {
      firstOutput();
      blocks.push({ block: { type: 'text', text: '' }, json: '' });
      return blocks.length - 1;
    },
    text(index: number, delta: string) {
      const state = blocks[index]!;
      if (state.block.type !== 'text') return;
      state.block = { ...state.block, text: state.block.text + delta };
      options.callbacks.onDelta?.(index, 'text', delta);
      snapshot();
    },
    openTool(id: string | undefined, name: string): number {
      firstOutput();
      blocks.push({ block: { type: 'tool_use', id: id || fallbackCallId(), name, input: {} }, json: '' });
      snapshot();
      return blocks.length - 1;
    },
    toolName(index: number, name: string) {
      const state = blocks[index]!;
      if (state.block.type === 'tool_use' && !state.block.name) state.block = { ...state.block, name };
    },
    args(index: number, delta: string) {
      const state = blocks[index]!;
      state.json += delta;
      options.callbacks.onDelta?.(index, 'tool_input', delta);
    },
    setArgs(index: number, full: string) {
      blocks[index]!.json = full;
    },
    finish(stopReason: string, usage: Usage, serverModel: string): ModelReply {
      for (const state of blocks) {
        if (state.block.type !== 'tool_use') continue;
        const raw = state.json.trim();
        try {
          const parsed: unknown = raw === '' ? {} : JSON.parse(raw);
          if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
            throw new Error('not an object');
          state.block = { ...state.block, input: parsed as Record<string, unknown> };
        } catch {
          // Invalid JSON from the model becomes an INVALID_PARAM result it can correct.
          state.block = { ...state.block, input: {}, invalidJson: state.json };
        }
      }
      const content = blocks.map((b) => b.block).filter((b) => b.type !== 'text' || b.text.length > 0);
      const last = content.at(-1);
      // The call the output limit stopped in the middle of is never run, even when it happens to parse.
      if (stopReason === 'max_tokens' && last?.type === 'tool_use')
        content[content.length - 1] = {
          ...last,
          input: {},
          invalidJson: blocks.at(-1)?.json ?? '',
          truncated: true,
        };
      const now = performance.now();
      return {
        content,
        model: options.qualify(serverModel || options.wireModel),
        stopReason,
        usage,
        maxTokens: options.maxTokens,
        latencyMs: Math.round(now - options.started),
        ttftMs: Math.round(ttft < 0 ? now - options.started : ttft),
      };
    },
  };
}

interface WireUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  input_tokens?: number | null;
  output_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  input_tokens_details?: { cached_tokens?: number | null } | null;
  /** DeepSeek's name for the cached part. */
  prompt_cache_hit_tokens?: number | null;
}

/** The prompt tokens include the cached ones: Keel counts them apart (input + cache read = prompt). */
export function usageFrom(wire: WireUsage | null | undefined): Usage {
  const prompt = wire?.prompt_tokens ?? wire?.input_tokens ?? 0;
  const cached =
    wire?.prompt_tokens_details?.cached_tokens ??
    wire?.input_tokens_details?.cached_tokens ??
    wire?.prompt_cache_hit_tokens ??
    0;
  const cacheRead = Math.min(cached, prompt);
  return {
    input: prompt - cacheRead,
    output: wire?.completion_tokens ?? wire?.output_tokens ?? 0,
    cacheRead,
    cacheWrite: 0,
  };
}

const FINISH: Record<string, string> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  length: 'max_tokens',
  content_filter: 'refusal',
};

interface ChatChunk {
  id?: string;
  model?: string;
  choices?: {
    delta?: {
      content?: string | null;
      tool_calls?: {
        index?: number;
        id?: string | null;
        function?: { name?: string | null; arguments?: string | null } | null;
      }[];
    } | null;
    finish_reason?: string | null;
  }[];
  usage?: WireUsage | null;
}

export async function readChatStream(
  stream: AsyncIterable<unknown>,
  options: ReadOptions,
): Promise<ModelReply> {
  const a = createAssembler(options);
  let started = false;
  let serverModel = '';
  let finish: string | undefined;
  let usage: Usage = usageFrom(undefined);
  let textIndex = -1;
  const calls = new Map<number, number>();
  for await (const raw of stream) {
    const chunk = raw as ChatChunk;
    if (!started) {
      started = true;
      serverModel = chunk.model ?? '';
      options.callbacks.onStart?.(chunk.id ?? '', options.qualify(serverModel || options.wireModel));
    }
    if (chunk.usage) usage = usageFrom(chunk.usage);
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const delta = choice.delta;
    if (delta?.content) {
      // Text after a tool call starts a new block, so the blocks keep the order the model wrote them.
      if (textIndex < 0 || textIndex !== a.blocks.length - 1) textIndex = a.openText();
      a.text(textIndex, delta.content);
    }
    for (const [position, call] of (delta?.tool_calls ?? []).entries()) {
      const key = call.index ?? position;
      let index = calls.get(key);
      if (index === undefined) {
        index = a.openTool(call.id ?? undefined, call.function?.name ?? '');
        calls.set(key, index);
      } else if (call.function?.name) a.toolName(index, call.function.name);
      if (call.function?.arguments) a.args(index, call.function.arguments);
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  if (options.signal.aborted) throw new ModelError('aborted', 'Aborted.');
  if (finish === undefined)
    throw new ModelError('cut_stream', 'The response stream ended before its finish_reason.');
  return a.finish(FINISH[finish] ?? finish, usage, serverModel);
}

interface ResponseEvent {
  type?: string;
  item_id?: string;
  output_index?: number;
  delta?: string;
  arguments?: string;
  item?: { type?: string; id?: string; call_id?: string; name?: string; arguments?: string };
  response?: {
    id?: string;
    model?: string;
    status?: string;
    usage?: WireUsage | null;
    incomplete_details?: { reason?: string } | null;
    error?: { code?: string; message?: string } | null;
  };
  code?: string;
  message?: string;
}

export async function readResponseStream(
  stream: AsyncIterable<unknown>,
  options: ReadOptions,
): Promise<ModelReply> {
  const a = createAssembler(options);
  let serverModel = '';
  let stop: string | undefined;
  let usage: Usage = usageFrom(undefined);
  const texts = new Map<string, number>();
  const tools = new Map<string, number>();
  const toolFor = (e: ResponseEvent) => tools.get(e.item_id ?? `#${e.output_index}`);
  for await (const raw of stream) {
    const e = raw as ResponseEvent;
    switch (e.type) {
      case 'response.created':
        serverModel = e.response?.model ?? '';
        options.callbacks.onStart?.(e.response?.id ?? '', options.qualify(serverModel || options.wireModel));
        break;
      case 'response.output_item.added':
        if (e.item?.type === 'function_call') {
          const index = a.openTool(e.item.call_id, e.item.name ?? '');
          tools.set(e.item.id ?? `#${e.output_index}`, index);
          if (e.item.arguments) a.args(index, e.item.arguments);
        }
        break;
      case 'response.output_text.delta': {
        if (!e.delta) break;
        const key = `${e.item_id}`;
        let index = texts.get(key);
        if (index === undefined) {
          index = a.openText();
          texts.set(key, index);
        }
        a.text(index, e.delta);
        break;
      }
      case 'response.function_call_arguments.delta': {
        const index = toolFor(e);
        if (index !== undefined && e.delta) a.args(index, e.delta);
        break;
      }
      case 'response.function_call_arguments.done': {
        const index = toolFor(e);
        if (index !== undefined && typeof e.arguments === 'string') a.setArgs(index, e.arguments);
        break;
      }
      case 'response.completed':
      case 'response.incomplete': {
        usage = usageFrom(e.response?.usage);
        const reason = e.response?.incomplete_details?.reason;
        const hasCalls = tools.size > 0;
        stop =
          e.type === 'response.incomplete'
            ? reason === 'max_output_tokens'
              ? 'max_tokens'
              : reason === 'content_filter'
                ? 'refusal'
                : (reason ?? 'incomplete')
            : hasCalls
              ? 'tool_use'
              : 'end_turn';
        break;
      }
      case 'response.failed': {
        const err = e.response?.error;
        const kind = err?.code === 'rate_limit_exceeded' ? 'rate_limited' : 'stream_error';
        throw new ModelError(kind, `The response failed (${err?.code ?? 'unknown'}): ${err?.message ?? ''}`);
      }
      default:
        break;
    }
  }
  if (options.signal.aborted) throw new ModelError('aborted', 'Aborted.');
  if (stop === undefined)
    throw new ModelError('cut_stream', 'The response stream ended before response.completed.');
  return a.finish(stop, usage, serverModel);
}
