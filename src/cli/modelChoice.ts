import { ModelError } from '../agent/model/errors.ts';
import {
  isHostFamily,
  isOpenAIFamily,
  ModelRefError,
  parseModelRef,
} from '../agent/model/providers/modelRef.ts';
import { resolveOpenAISettings } from '../agent/model/providers/openai.ts';
import type { ProviderSettings } from '../agent/model/providers/index.ts';
import { UsageError } from './args.ts';

// `--model provider:model`, `--fallback-model`, `--api`, `--subagent-model KIND=MODEL`: checked before
// anything starts (a usage error, exit 2), so a typo in a provider or a missing key is said at once,
// never after a workspace scan or a first request.

export interface ModelFlags {
  readonly fallbackModels: readonly string[];
  readonly api?: 'chat' | 'responses' | undefined;
  readonly subagentModels: readonly string[];
}

export interface ModelChoice {
  readonly providers: ProviderSettings;
  readonly subagentModels?: Readonly<Record<string, string>>;
}

function checked(spec: string, flag: string) {
  try {
    return parseModelRef(spec);
  } catch (error) {
    if (error instanceof ModelRefError) throw new UsageError(`${flag}: ${error.message}`);
    throw error;
  }
}

/** `explore=anthropic:claude-haiku-4-5` pairs, from the flags, then KEEL_SUBAGENT_MODELS (comma-separated). */
function kindModels(flags: readonly string[], env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  const fromEnv = (env.KEEL_SUBAGENT_MODELS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const [source, pairs] of [
    ['KEEL_SUBAGENT_MODELS', fromEnv],
    ['--subagent-model', flags],
  ] as const) {
    for (const pair of pairs) {
      const at = pair.indexOf('=');
      const kind = pair.slice(0, at).trim();
      const model = pair.slice(at + 1).trim();
      if (at <= 0 || !/^[a-z0-9][a-z0-9_-]{0,63}$/i.test(kind) || model === '')
        throw new UsageError(
          `${source} takes KIND=MODEL (KIND: explore, general or an agent's name), e.g. explore=anthropic:claude-haiku-4-5; got "${pair}"`,
        );
      checked(model, source);
      out[kind] = model;
    }
  }
  return out;
}

/** The model's provider can serve it from the CLI: not a host-only one, and an OpenAI-family key is set. */
function providerReady(spec: string, env: NodeJS.ProcessEnv): void {
  const { provider } = parseModelRef(spec);
  if (isHostFamily(provider))
    throw new UsageError(
      `${spec}: ${provider}: models are VS Code's language models, served inside the extension only; the CLI takes anthropic:, openai:, azure: or ollama:`,
    );
  if (!isOpenAIFamily(provider)) return;
  try {
    resolveOpenAISettings({ provider, env });
  } catch (error) {
    if (error instanceof ModelError) throw new UsageError(`${spec}: ${error.message}`);
    throw error;
  }
}

/**
 * One more model the session calls, checked as --model is (`--classifier-model`, named by `source`
 * so an error says where the value came from).
 */
export function checkModelSpec(spec: string, source: string, env: NodeJS.ProcessEnv = process.env): void {
  checked(spec, source);
  providerReady(spec, env);
}

export function modelChoice(
  model: string,
  flags: ModelFlags,
  env: NodeJS.ProcessEnv = process.env,
): ModelChoice {
  const main = checked(model, '--model');
  for (const fallback of flags.fallbackModels) checked(fallback, '--fallback-model');
  if (flags.api === 'responses' && main.provider !== 'openai')
    throw new UsageError(
      `--api responses is for an openai: model (the Responses API); ${model} is served by ${main.provider}`,
    );
  const subagentModels = kindModels(flags.subagentModels, env);
  // Every OpenAI-family model the session may call needs its key (and Azure its endpoint and version).
  for (const spec of [model, ...flags.fallbackModels, ...Object.values(subagentModels)])
    providerReady(spec, env);
  return {
    providers: { ...(flags.api ? { openaiApi: flags.api } : {}) },
    ...(Object.keys(subagentModels).length > 0 ? { subagentModels } : {}),
  };
}
