import { ModelError } from '../errors.ts';
import {
  type HostServed,
  isHostServed,
  isOpenAIFamily,
  type OpenAIFamily,
  parseModelRef,
} from './modelRef.ts';
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
  /** Providers the host itself serves (`vscode:` in the extension: VS Code's language models). */
  readonly host?: Partial<Record<HostServed, ModelProvider>>;
}

/** A `vscode:` model named where no host serves it (the CLI): every call fails, saying why. */
function unservedProvider(name: HostServed): ModelProvider {
  const error = () =>
    new ModelError(
      'model_unavailable',
      `${name}: models are VS Code's own language models and are served only inside VS Code; here use anthropic:, openai:, azure: or ollama:.`,
    );
  return {
    name,
    stream: async () => {
      throw error();
    },
    classify: (e) => (e instanceof ModelError ? e : error()),
  };
}

export function createProviderLookup(
  settings: ProviderSettings = {},
): (model: string) => ModelProvider | undefined {
  const made = new Map<OpenAIFamily, ModelProvider>();
  return (model) => {
    const { provider } = parseModelRef(model);
    if (isHostServed(provider)) return settings.host?.[provider] ?? unservedProvider(provider);
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
