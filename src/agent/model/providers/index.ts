import { isOpenAIFamily, type OpenAIFamily, parseModelRef } from './modelRef.ts';
import { createOpenAIProvider, type OpenAIApi } from './openai.ts';
import type { ModelProvider } from './types.ts';

// Which provider serves a model (`provider:model`): one provider object per provider for the
// session's life (its SDK client is made on first use). The Anthropic family returns undefined: client.ts
// serves it (the reference implementation).

export interface ProviderSettings {
  /** `--api responses`: OpenAI models through the Responses API instead of Chat Completions. */
  readonly openaiApi?: OpenAIApi;
  /** Keys and addresses given by the host (else the provider's usual environment variables). */
  readonly keys?: Partial<Record<OpenAIFamily, { readonly apiKey?: string; readonly baseURL?: string }>>;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export function createProviderLookup(
  settings: ProviderSettings = {},
): (model: string) => ModelProvider | undefined {
  const made = new Map<OpenAIFamily, ModelProvider>();
  return (model) => {
    const { provider } = parseModelRef(model);
    if (!isOpenAIFamily(provider)) return undefined;
    let p = made.get(provider);
    if (!p) {
      const key = settings.keys?.[provider];
      p = createOpenAIProvider({
        provider,
        // The Responses API is OpenAI's (Azure serves it at another path); others speak Chat Completions.
        ...(provider === 'openai' && settings.openaiApi ? { api: settings.openaiApi } : {}),
        ...(key?.apiKey ? { apiKey: key.apiKey } : {}),
        ...(key?.baseURL ? { baseURL: key.baseURL } : {}),
        ...(settings.env ? { env: settings.env } : {}),
      });
      made.set(provider, p);
    }
    return p;
  };
}

/** The name the Anthropic family's client gets: `anthropic:x` → `x`; bare and other prefixes as given. */
export function anthropicModelName(model: string): string {
  const ref = parseModelRef(model);
  return ref.provider === 'anthropic' ? ref.model : model;
}

export type { ModelProvider, ProviderAttempt } from './types.ts';
export { type ModelRef, ModelRefError, parseModelRef } from './modelRef.ts';
