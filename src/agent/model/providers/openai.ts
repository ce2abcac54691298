import type * as OpenAISdk from 'openai';
import type OpenAI from 'openai';
import { ModelError } from '../errors.ts';
import { outputLimitFor } from '../models.ts';
import { type ModelRef, type OpenAIFamily, parseModelRef } from './modelRef.ts';
import { classifyOpenAIError, type OpenAIErrorContext } from './openaiErrors.ts';
import { readChatStream, readResponseStream } from './openaiStream.ts';
import type { ModelProvider } from './types.ts';
import { chatMessages, chatTools, responseInput, responseTools, systemText } from './openaiWire.ts';

// OpenAI-compatible models through the maintained `openai` SDK: `openai:` (OpenAI, or any compatible
// server at OPENAI_BASE_URL: Gemini's OpenAI endpoint, DeepSeek, Mistral, Groq, OpenRouter, LM Studio,
// vLLM), `azure:DEPLOYMENT` (Azure OpenAI) and `ollama:` (a local Ollama, no key). Chat Completions by
// default; `api: 'responses'` uses the Responses API (models served only there). The SDK's own
// retries are off: client.ts's policy covers every provider the same way.

export type OpenAIApi = 'chat' | 'responses';

export interface OpenAIProviderSettings {
  readonly provider: OpenAIFamily;
  /** Chat Completions (default) or the Responses API. */
  readonly api?: OpenAIApi;
  /** Overrides the environment's key (OPENAI_API_KEY / AZURE_OPENAI_API_KEY). */
  readonly apiKey?: string;
  /** Overrides the environment's address (OPENAI_BASE_URL, AZURE_OPENAI_ENDPOINT, OLLAMA_HOST). */
  readonly baseURL?: string;
  /** Where OPENAI_API_KEY & co. are read (default: the process environment). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export const OLLAMA_DEFAULT_URL = 'http://localhost:11434/v1';

interface Resolved {
  readonly apiKey: string;
  readonly baseURL: string | undefined;
  readonly apiVersion?: string;
  readonly keyHint: string;
  readonly urlHint: string;
}

function hostEnv(): Readonly<Record<string, string | undefined>> {
  return typeof process === 'undefined' ? {} : process.env;
}

function withScheme(host: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(host) ? host : `http://${host}`;
}

/** The key, address and version a provider needs, or why it cannot run (said before any request). */
export function resolveOpenAISettings(settings: OpenAIProviderSettings): Resolved {
  const env = settings.env ?? hostEnv();
  const nonEmpty = (v: string | undefined) => (v && v.trim() !== '' ? v.trim() : undefined);
  switch (settings.provider) {
    case 'openai': {
      const apiKey = nonEmpty(settings.apiKey) ?? nonEmpty(env.OPENAI_API_KEY);
      if (!apiKey)
        throw new ModelError(
          'auth',
          'No API key for openai: models: set OPENAI_API_KEY (any value for a local OpenAI-compatible server at OPENAI_BASE_URL).',
        );
      return {
        apiKey,
        baseURL: nonEmpty(settings.baseURL) ?? nonEmpty(env.OPENAI_BASE_URL),
        keyHint: 'OPENAI_API_KEY',
        urlHint: 'OPENAI_BASE_URL',
      };
    }
    case 'azure': {
      const apiKey = nonEmpty(settings.apiKey) ?? nonEmpty(env.AZURE_OPENAI_API_KEY);
      const endpoint = nonEmpty(settings.baseURL) ?? nonEmpty(env.AZURE_OPENAI_ENDPOINT);
      const apiVersion = nonEmpty(env.OPENAI_API_VERSION);
      const missing = [
        apiKey ? '' : 'AZURE_OPENAI_API_KEY',
        endpoint ? '' : 'AZURE_OPENAI_ENDPOINT',
        apiVersion ? '' : 'OPENAI_API_VERSION',
      ].filter(Boolean);
      if (!apiKey || !endpoint || !apiVersion)
        throw new ModelError(
          'auth',
          `azure: models need ${missing.join(', ')} (the key, https://RESOURCE.openai.azure.com and an API version such as 2024-10-21).`,
        );
      return {
        apiKey,
        // The deployment goes in the path (…/openai/deployments/NAME/…), which the SDK adds.
        baseURL: `${endpoint.replace(/\/+$/, '')}/openai`,
        apiVersion,
        keyHint: 'AZURE_OPENAI_API_KEY',
        urlHint: 'AZURE_OPENAI_ENDPOINT',
      };
    }
    case 'ollama': {
      const host = nonEmpty(settings.baseURL) ?? nonEmpty(env.OLLAMA_HOST);
      return {
        // Ollama wants no key; the SDK wants a non-empty one.
        apiKey: nonEmpty(settings.apiKey) ?? 'ollama',
        baseURL: host
          ? `${withScheme(host).replace(/\/+$/, '').replace(/\/v1$/, '')}/v1`
          : OLLAMA_DEFAULT_URL,
        keyHint: 'the Ollama server (it takes no key)',
        urlHint: 'OLLAMA_HOST',
      };
    }
  }
}

let sdkModule: typeof OpenAISdk | undefined;

async function loadOpenAI(): Promise<typeof OpenAISdk> {
  sdkModule ??= await import('openai');
  return sdkModule;
}

export function createOpenAIProvider(settings: OpenAIProviderSettings): ModelProvider {
  const api = settings.api ?? 'chat';
  let client: Promise<OpenAI> | undefined;
  let context: OpenAIErrorContext = {
    provider: settings.provider,
    keyHint: settings.provider === 'azure' ? 'AZURE_OPENAI_API_KEY' : 'OPENAI_API_KEY',
    urlHint: settings.provider === 'azure' ? 'AZURE_OPENAI_ENDPOINT' : 'OPENAI_BASE_URL',
    endpoint: undefined,
  };
  const sdkClient = () =>
    (client ??= (async () => {
      const resolved = resolveOpenAISettings(settings);
      if (resolved.baseURL && !/^https?:\/\//i.test(resolved.baseURL))
        throw new ModelError(
          'invalid_request',
          `The model service address must be an http(s) URL, not ${resolved.baseURL}: check ${resolved.urlHint}.`,
        );
      const sdk = await loadOpenAI();
      const common = { apiKey: resolved.apiKey, maxRetries: 0, timeout: 10 * 60 * 1000 };
      const made =
        settings.provider === 'azure'
          ? new sdk.AzureOpenAI({ ...common, baseURL: resolved.baseURL, apiVersion: resolved.apiVersion })
          : new sdk.OpenAI({ ...common, ...(resolved.baseURL ? { baseURL: resolved.baseURL } : {}) });
      context = { ...context, keyHint: resolved.keyHint, urlHint: resolved.urlHint, endpoint: made.baseURL };
      return made;
    })().catch((error: unknown) => {
      client = undefined;
      throw error;
    }));

  return {
    name: settings.provider,
    async stream({ model, request, signal, callbacks, partial }) {
      const ref: ModelRef = parseModelRef(model);
      const wireModel = ref.model;
      const openai = await sdkClient();
      const maxTokens = Math.min(request.maxTokens, outputLimitFor(model));
      const qualify = (served: string) => `${settings.provider}:${served}`;
      const read = { qualify, wireModel, maxTokens, callbacks, partial, signal, started: performance.now() };
      if (api === 'responses') {
        const instructions = systemText(request.system);
        const stream = await openai.responses.create(
          {
            model: wireModel,
            ...(instructions ? { instructions } : {}),
            ...(request.tools.length > 0 ? { tools: responseTools(request.tools) } : {}),
            input: responseInput(request),
            max_output_tokens: maxTokens,
            // Keel sends the whole conversation every time: nothing needs keeping on the server.
            store: false,
            stream: true,
          },
          { signal },
        );
        return await readResponseStream(stream, read);
      }
      // OpenAI's own models take max_completion_tokens (o-series and later refuse max_tokens);
      // compatible servers (Ollama, vLLM, llama.cpp) know max_tokens.
      const limit =
        settings.provider === 'ollama' ? { max_tokens: maxTokens } : { max_completion_tokens: maxTokens };
      const stream = await openai.chat.completions.create(
        {
          model: wireModel,
          messages: chatMessages(request),
          ...(request.tools.length > 0 ? { tools: chatTools(request.tools) } : {}),
          stream: true,
          stream_options: { include_usage: true },
          ...limit,
        },
        { signal },
      );
      return await readChatStream(stream, read);
    },
    classify(error, signal) {
      return classifyOpenAIError(sdkModule, error, signal, context);
    },
  };
}
