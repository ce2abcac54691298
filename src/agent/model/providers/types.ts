import type { AssistantBlock } from '../../messages.ts';
import type { ModelReply, ModelRequest, StreamCallbacks } from '../client.ts';
import type { ModelError } from '../errors.ts';

// A model provider: one streamed attempt against one model, in Keel's terms on both sides. It takes
// Keel's request (tools + system + messages in the Messages API shape Keel's transcript converts to,
// messages.ts) and maps it to its own wire format; it maps the wire's stream back to Keel's callbacks
// and reply (text, tool calls, usage with cached tokens) and its errors to Keel's kinds (errors.ts), so
// the retry, fallback and cool-down policy (client.ts), the loop, the context engine and the trace stay
// the same for every provider. Nothing here needs Node: a host-supplied model (VS Code's language
// models) can implement it with what its host gives.
//
// Anthropic is the reference implementation: client.ts itself (its streamOnce + classifyError).

export interface ProviderAttempt {
  /** The model as the session names it (`openai:gpt-4.1`); the provider strips its prefix. */
  readonly model: string;
  readonly request: ModelRequest;
  readonly signal: AbortSignal;
  readonly callbacks: StreamCallbacks;
  /** Filled as the reply streams: what to report as discarded when the attempt fails midway. */
  readonly partial: AssistantBlock[];
}

export interface ModelProvider {
  /** For messages: "openai", "azure", "ollama", … */
  readonly name: string;
  /** One streamed call. Rejects with a ModelError, or anything `classify` turns into one. */
  stream(attempt: ProviderAttempt): Promise<ModelReply>;
  /** Any error of `stream` as one of Keel's kinds (retryable or not, retry-after, auth, …). */
  classify(error: unknown, signal: AbortSignal): ModelError;
}
