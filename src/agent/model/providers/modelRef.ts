// `--model provider:model`: which provider serves a model, and the model's own name there. One parse
// function for every host (CLI flag, `/model`, settings, agent files, sub-agent settings).
//
// A bare name means Anthropic (what Keel always did). The Anthropic family (Anthropic itself and the
// clouds that serve Claude through the Anthropic SDK) keeps its prefix for client.ts to route; the
// OpenAI family (Chat Completions / Responses through the `openai` SDK) is served by providers/openai.ts.

/** Prefixes served by the `openai` SDK. */
export const OPENAI_FAMILY = ['openai', 'azure', 'ollama'] as const;
/** Prefixes served by the Anthropic SDK family (client.ts). bedrock/vertex join here (anthropicFamily.ts). */
export const ANTHROPIC_FAMILY = ['anthropic'] as const;

/** Prefixes a host serves itself (VS Code's language models); no other host knows them. */
export const HOST_SERVED = ['vscode'] as const;

export type OpenAIFamily = (typeof OPENAI_FAMILY)[number];
export type HostServed = (typeof HOST_SERVED)[number];
export type ProviderName = OpenAIFamily | HostServed | (typeof ANTHROPIC_FAMILY)[number];

export interface ModelRef {
  readonly provider: ProviderName;
  /** The name the provider knows (for azure: the deployment name). */
  readonly model: string;
  /** Written with a prefix (`anthropic:x`), as opposed to a bare name. */
  readonly prefixed: boolean;
}

export class ModelRefError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelRefError';
  }
}

const KNOWN: readonly string[] = [...ANTHROPIC_FAMILY, ...OPENAI_FAMILY, ...HOST_SERVED];

export function isHostServed(provider: string): provider is HostServed {
  return (HOST_SERVED as readonly string[]).includes(provider);
}

export function isOpenAIFamily(provider: string): provider is OpenAIFamily {
  return (OPENAI_FAMILY as readonly string[]).includes(provider);
}

/**
 * `openai:gpt-4.1` → {openai, gpt-4.1}; `claude-sonnet-4-6` → {anthropic, …}; `ollama:qwen3:8b` →
 * {ollama, qwen3:8b} (only the first colon separates). An unknown prefix is an error naming the
 * known ones: a typo must not become a request for a model called "opneai:gpt-4o".
 */
export function parseModelRef(spec: string): ModelRef {
  const text = spec.trim();
  if (text === '') throw new ModelRefError('The model name is empty.');
  const colon = text.indexOf(':');
  if (colon < 0) return { provider: 'anthropic', model: text, prefixed: false };
  const prefix = text.slice(0, colon).toLowerCase();
  const model = text.slice(colon + 1).trim();
  if (!KNOWN.includes(prefix))
    throw new ModelRefError(
      `Unknown model provider "${text.slice(0, colon)}" in "${text}": use one of ${KNOWN.map((k) => `${k}:`).join(', ')} or a bare Claude model name (a model whose own name has a colon, e.g. an Ollama tag on an Anthropic-compatible server, is written anthropic:NAME).`,
    );
  if (model === '') throw new ModelRefError(`"${text}" names no model after "${prefix}:".`);
  return { provider: prefix as ProviderName, model, prefixed: true };
}

/** The same model written the way it is stored and shown: `provider:model`, bare for Anthropic. */
export function formatModelRef(ref: ModelRef): string {
  return ref.provider === 'anthropic' ? ref.model : `${ref.provider}:${ref.model}`;
}
