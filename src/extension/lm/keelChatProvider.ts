import * as vscode from 'vscode';
import { estimateTokens } from '../../agent/context/tokens.ts';
import type { ModelClient, ModelRequest } from '../../agent/model/client.ts';
import { outputLimitFor } from '../../agent/model/models.ts';
import { contextWindowFor } from '../../agent/model/pricing.ts';
import { parseModelRef } from '../../agent/model/providers/modelRef.ts';
import { fromLmMessages, fromLmTools, type LmRequestMessage } from './fromLmMessages.ts';

// Keel's own models offered to VS Code (`vscode.lm.registerLanguageModelChatProvider`, vendor "keel"):
// with a Keel key, VS Code's chat and other extensions can use the model Keel is set to, through Keel's
// client (its retries, its profiles, its base URL). Only Anthropic-family models are offered: a `vscode:`
// model would route back into VS Code (a loop), and OpenAI-family ones have their own VS Code providers.
// Without a key nothing is offered, so Keel never shows a model it cannot serve.
//
// Threat: another extension spending the user's key. VS Code asks the user before an extension uses
// a model it does not own (`requiresAuthorization`), every request is logged with its caller's model
// and token counts, and nothing of Keel's sessions (history, tools, workspace) crosses: the caller
// gets the bare model with exactly the messages and tools it sent.

export const KEEL_LM_VENDOR = 'keel';

export interface KeelChatProviderDeps {
  /** Keel's key (SecretStorage, then the environment); undefined: nothing is offered. */
  readonly apiKey: () => Promise<string | undefined>;
  readonly baseUrl: () => string;
  /** The configured model, then its fallbacks. */
  readonly models: () => readonly string[];
  readonly log: (level: 'info' | 'warn', message: string) => void;
}

interface ChatInformation {
  readonly id: string;
  readonly name: string;
  readonly family: string;
  readonly version: string;
  readonly detail?: string;
  readonly tooltip?: string;
  readonly maxInputTokens: number;
  readonly maxOutputTokens: number;
  readonly capabilities: { readonly imageInput?: boolean; readonly toolCalling?: boolean | number };
  readonly requiresAuthorization?: true | { readonly label: string };
}

interface ResponseOptions {
  readonly modelOptions?: { readonly [name: string]: unknown };
  readonly tools?: readonly vscode.LanguageModelChatTool[];
  readonly toolMode?: vscode.LanguageModelChatToolMode;
}

interface ChatProvider {
  readonly onDidChangeLanguageModelChatInformation?: vscode.Event<void>;
  provideLanguageModelChatInformation(
    options: { readonly silent: boolean },
    token: vscode.CancellationToken,
  ): Promise<ChatInformation[]>;
  provideLanguageModelChatResponse(
    model: ChatInformation,
    messages: readonly LmRequestMessage[],
    options: ResponseOptions,
    progress: vscode.Progress<vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart>,
    token: vscode.CancellationToken,
  ): Promise<void>;
  provideTokenCount(
    model: ChatInformation,
    text: string | LmRequestMessage,
    token: vscode.CancellationToken,
  ): Promise<number>;
}

type RegisterProvider = (vendor: string, provider: ChatProvider) => vscode.Disposable;

export type KeelChatProvider = ChatProvider &
  vscode.Disposable & {
    /** Settings or the stored key changed: VS Code asks again what is offered. */
    refresh(): void;
  };

/** Models Keel can serve itself, deduplicated, in the configured order. */
export function offeredModels(models: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of models) {
    try {
      const ref = parseModelRef(raw);
      if (ref.provider === 'anthropic' && !out.includes(ref.model)) out.push(ref.model);
    } catch {
      // a bad name is reported where it is configured, not here
    }
  }
  return out;
}

function information(model: string): ChatInformation {
  return {
    id: model,
    name: `${model} (Keel)`,
    family: model.replace(/-\d{8}$/, ''),
    version: model,
    detail: 'Keel',
    tooltip: 'Served with your Keel API key',
    maxInputTokens: contextWindowFor(model),
    maxOutputTokens: outputLimitFor(model),
    capabilities: { imageInput: true, toolCalling: true },
    requiresAuthorization: { label: 'Keel' },
  };
}

/** `max_tokens` the caller asked for, within the model's own limit. */
function maxTokensFor(model: string, options: ResponseOptions): number {
  const limit = outputLimitFor(model);
  const asked = options.modelOptions?.max_tokens ?? options.modelOptions?.maxTokens;
  return typeof asked === 'number' && Number.isInteger(asked) && asked > 0 ? Math.min(asked, limit) : limit;
}

async function defaultClient(
  model: string,
  apiKey: string,
  baseURL: string | undefined,
): Promise<ModelClient> {
  const { createModelClient } = await import('../../agent/model/client.ts');
  return createModelClient({ models: [model], apiKey, ...(baseURL ? { baseURL } : {}) });
}

export function createKeelChatProvider(deps: KeelChatProviderDeps): KeelChatProvider {
  const changed = new vscode.EventEmitter<void>();
  return {
    onDidChangeLanguageModelChatInformation: changed.event,
    refresh: () => changed.fire(),
    async provideLanguageModelChatInformation() {
      if (!(await deps.apiKey())) return [];
      return offeredModels(deps.models()).map(information);
    },
    async provideLanguageModelChatResponse(model, messages, options, progress, token) {
      const key = await deps.apiKey();
      if (!key) throw new Error('Keel has no API key: run "Keel: Set API Key".');
      if (!offeredModels(deps.models()).includes(model.id))
        throw new Error(`Keel no longer offers ${model.id}: its model setting changed.`);
      const { system, messages: converted } = fromLmMessages(messages);
      if (converted.length === 0) throw new Error('The request has no message for the model.');
      const request: ModelRequest = {
        system,
        tools: fromLmTools(options.tools),
        messages: converted,
        maxTokens: maxTokensFor(model.id, options),
      };
      const controller = new AbortController();
      const cancel = token.onCancellationRequested(() => controller.abort());
      try {
        const client = await defaultClient(model.id, key, deps.baseUrl() || undefined);
        const reply = await client.stream(request, controller.signal, {
          onDelta: (_index, kind, delta) => {
            if (kind === 'text') progress.report(new vscode.LanguageModelTextPart(delta));
          },
        });
        for (const block of reply.content)
          if (block.type === 'tool_use')
            progress.report(new vscode.LanguageModelToolCallPart(block.id, block.name, block.input));
        const u = reply.usage;
        deps.log(
          'info',
          `vscode.lm request to ${model.id}: ${u.input + u.cacheRead + u.cacheWrite} input, ${u.output} output tokens (${reply.stopReason ?? 'no stop reason'})`,
        );
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        deps.log('warn', `vscode.lm request to ${model.id} failed: ${message}`);
        throw error instanceof Error ? error : new Error(message);
      } finally {
        cancel.dispose();
      }
    },
    async provideTokenCount(_model, text) {
      if (typeof text === 'string') return estimateTokens(text);
      return estimateTokens(JSON.stringify(fromLmMessages([text]).messages));
    },
    dispose: () => changed.dispose(),
  };
}

/** Registers the provider where VS Code has the API (1.104 and later); undefined elsewhere. */
export function registerKeelChatProvider(
  deps: KeelChatProviderDeps,
): Pick<KeelChatProvider, 'refresh' | 'dispose'> | undefined {
  const register = (vscode.lm as unknown as { registerLanguageModelChatProvider?: RegisterProvider })
    .registerLanguageModelChatProvider;
  if (typeof register !== 'function') return undefined;
  const provider = createKeelChatProvider(deps);
  const registration = register.call(vscode.lm, KEEL_LM_VENDOR, provider);
  // VS Code may have asked for this vendor's models before Keel was active (and got none): asking again
  // now lets the Chat view's model picker select one, without which no participant can be invoked.
  provider.refresh();
  return {
    refresh: () => provider.refresh(),
    dispose: () => {
      registration.dispose();
      provider.dispose();
    },
  };
}

/** The provider, kept current: the stored key and the model settings decide what VS Code is offered. */
export function offerKeelModels(
  context: vscode.ExtensionContext,
  deps: KeelChatProviderDeps,
): vscode.Disposable | undefined {
  const registered = registerKeelChatProvider(deps);
  if (!registered) return undefined;
  const secrets = context.secrets.onDidChange(() => registered.refresh());
  const settings = vscode.workspace.onDidChangeConfiguration((e) => {
    if (['keel.model', 'keel.fallbackModels', 'keel.baseUrl'].some((k) => e.affectsConfiguration(k)))
      registered.refresh();
  });
  return vscode.Disposable.from(registered, secrets, settings);
}
