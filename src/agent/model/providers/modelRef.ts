// `--model provider:model`: which provider serves a model, and the model's own name there. One parse
// function for every host (CLI flag, `/model`, settings, agent files, sub-agent settings).
//
// A bare name means Anthropic (what Keel always did). The Anthropic family (Anthropic itself and the
// clouds that serve Claude through the Anthropic SDK) keeps its prefix for client.ts to route; the
// OpenAI family (Chat Completions / Responses through the `openai` SDK) is served by providers/openai.ts.

/** Prefixes served by the `openai` SDK. */
export const OPENAI_FAMILY = ['openai', 'azure', 'ollama'] as const;
/** Prefixes served by the Anthropic SDK family (client.ts). bedrock/vertex join here (anthropicFamily.ts). */
export const ANTHROPIC_FAMILY = ['anthropic', 'bedrock', 'vertex'] as const;

/** Prefixes a host serves with a provider of its own (VS Code's language models in the extension). */
export const HOST_FAMILY = ['vscode'] as const;

export type OpenAIFamily = (typeof OPENAI_FAMILY)[number];
export type HostFamily = (typeof HOST_FAMILY)[number];
export type ProviderName = OpenAIFamily | HostFamily | (typeof ANTHROPIC_FAMILY)[number];

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

const KNOWN: readonly string[] = [...ANTHROPIC_FAMILY, ...OPENAI_FAMILY, ...HOST_FAMILY];

export function isHostFamily(provider: string): provider is HostFamily {
  return (HOST_FAMILY as readonly string[]).includes(provider);
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

/** The provider of a model name, or undefined when the name is not valid. */
export function providerOf(spec: string): ProviderName | undefined {
  try {
    return parseModelRef(spec).provider;
  } catch {
    return undefined;
  }
}

/**
 * A model named by a repository's agent file is used only on the session's own provider: a checkout
 * must not send the workspace to another vendor (or spend another key) than the one the user chose.
 * Undefined: usable; else why not (said to the user).
 */
export function repoModelRefusal(model: string, sessionModel: string): string | undefined {
  const theirs = providerOf(model);
  const ours = providerOf(sessionModel);
  if (theirs === undefined || theirs === ours) return undefined;
  return `the repository's agent file asks for ${model}, served by ${theirs}, but this session uses ${ours ?? sessionModel}: a workspace file cannot send your code to another provider; its sub-agent runs on the session's model (set a model per agent kind yourself with --subagent-model or KEEL_SUBAGENT_MODELS)`;
}

/** The same model written the way it is stored and shown: `provider:model`, bare for Anthropic. */
export function formatModelRef(ref: ModelRef): string {
  return ref.provider === 'anthropic' ? ref.model : `${ref.provider}:${ref.model}`;
}
