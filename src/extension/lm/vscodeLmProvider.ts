import * as vscode from 'vscode';
import type { AssistantBlock, Usage } from '../../agent/messages.ts';
import type { ModelReply } from '../../agent/model/client.ts';
import { ModelError } from '../../agent/model/errors.ts';
import type { ModelProvider, ProviderAttempt } from '../../agent/model/providers/types.ts';
import { type LmModelSpec, lmSelector, parseLmModel } from './lmModelSpec.ts';
import { KEEL_LM_VENDOR } from './keelChatProvider.ts';
import { toLmMessages, toLmTools } from './lmMessages.ts';

// `vscode:` models: any language model the user has in VS Code (their Copilot plan's models, keys
// they added to VS Code, another extension's provider) through the stable `vscode.lm` API, with no
// key of Keel's own. What that API cannot carry degrades as the README's "Models" section says:
// no system role (the system text opens the first user message, byte-stable, so a provider that
// caches prefixes still can), no cache breakpoints, no thinking, no usage (estimated with
// `countTokens`), no cache accounting (reported as 0).

const JUSTIFICATION = 'Keel, the coding agent, sends your request and its tool results to this model.';

/** `vendor/id` as Keel stores and shows it (`vscode:copilot/gpt-4.1`). */
export function lmModelName(chat: vscode.LanguageModelChat): string {
  return `vscode:${chat.vendor}/${chat.id}`;
}

/**
 * The model Keel answers with when no API key is set: a Claude model if VS Code offers one (Keel's
 * prompts are tuned for it), else the first model offered; undefined when VS Code offers none.
 */
export async function defaultLmModel(): Promise<string | undefined> {
  const models = (await vscode.lm.selectChatModels()).filter((m) => m.vendor !== KEEL_LM_VENDOR);
  const chosen = models.find((m) => /claude/i.test(`${m.family} ${m.id}`)) ?? models[0];
  return chosen ? lmModelName(chosen) : undefined;
}

async function pick(spec: LmModelSpec): Promise<vscode.LanguageModelChat> {
  for (const selector of lmSelector(spec)) {
    // Keel's own models (keelChatProvider.ts) would route back into Keel: never picked here.
    const chat = (await vscode.lm.selectChatModels(selector)).find((m) => m.vendor !== KEEL_LM_VENDOR);
    if (chat) return chat;
  }
  const available = (await vscode.lm.selectChatModels()).map((m) => `${m.vendor}/${m.id}`);
  throw new ModelError(
    'model_unavailable',
    `No VS Code language model matches "${spec.raw}". ${
      available.length
        ? `Available: ${available.map((a) => `vscode:${a}`).join(', ')}.`
        : 'VS Code offers none: sign in to GitHub Copilot, add a model under "Chat: Manage Language Models", or set an API key ("Keel: Set API Key").'
    }`,
  );
}

async function estimateUsage(
  chat: vscode.LanguageModelChat,
  messages: readonly vscode.LanguageModelChatMessage[],
  output: string,
  token: vscode.CancellationToken,
): Promise<Usage> {
  // The API reports no usage; the model's own tokenizer is the best estimate there is.
  const count = async (v: string | vscode.LanguageModelChatMessage) => {
    try {
      return await chat.countTokens(v, token);
    } catch {
      return 0;
    }
  };
  const input = (await Promise.all(messages.map(count))).reduce((a, b) => a + b, 0);
  return { input, output: output ? await count(output) : 0, cacheRead: 0, cacheWrite: 0 };
}

export function createVscodeLmProvider(): ModelProvider {
  return {
    name: 'vscode',
    async stream(attempt: ProviderAttempt): Promise<ModelReply> {
      const { request, signal, callbacks, partial } = attempt;
      const chat = await pick(parseLmModel(attempt.model));
      const source = new vscode.CancellationTokenSource();
      const cancel = () => source.cancel();
      signal.addEventListener('abort', cancel, { once: true });
      const started = Date.now();
      let ttft = 0;
      try {
        const messages = toLmMessages(request);
        const response = await chat.sendRequest(
          messages,
          {
            justification: JUSTIFICATION,
            tools: toLmTools(request.tools),
            toolMode: vscode.LanguageModelChatToolMode.Auto,
          },
          source.token,
        );
        const name = lmModelName(chat);
        callbacks.onStart?.(`lm_${started.toString(36)}`, name);
        let text = '';
        for await (const part of response.stream) {
          if (signal.aborted) break;
          if (!ttft) ttft = Date.now() - started;
          if (part instanceof vscode.LanguageModelTextPart) {
            const last = partial.at(-1);
            if (last?.type === 'text')
              partial[partial.length - 1] = { type: 'text', text: last.text + part.value };
            else partial.push({ type: 'text', text: part.value });
            text += part.value;
            callbacks.onDelta?.(partial.length - 1, 'text', part.value);
          } else if (part instanceof vscode.LanguageModelToolCallPart) {
            const input = (part.input ?? {}) as Record<string, unknown>;
            partial.push({ type: 'tool_use', id: part.callId, name: part.name, input });
            callbacks.onDelta?.(partial.length - 1, 'tool_input', JSON.stringify(input));
          }
        }
        if (signal.aborted) throw new ModelError('aborted', 'The request was cancelled.');
        const content: AssistantBlock[] = [...partial];
        const usage = await estimateUsage(chat, messages, text, source.token);
        return {
          content,
          model: name,
          stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn',
          usage,
          maxTokens: request.maxTokens,
          latencyMs: Date.now() - started,
          ttftMs: ttft,
        };
      } finally {
        signal.removeEventListener('abort', cancel);
        source.dispose();
      }
    },
    classify(error: unknown, signal: AbortSignal): ModelError {
      if (error instanceof ModelError) return error;
      if (signal.aborted || error instanceof vscode.CancellationError)
        return new ModelError('aborted', 'The request was cancelled.');
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof vscode.LanguageModelError) {
        switch (error.code) {
          case vscode.LanguageModelError.NoPermissions.name:
            return new ModelError(
              'auth',
              `VS Code did not allow Keel to use this model (${message}). Allow it when VS Code asks, or pick another model with /model.`,
            );
          case vscode.LanguageModelError.Blocked.name:
            return new ModelError('rate_limited', `The model's provider refused the request: ${message}`);
          case vscode.LanguageModelError.NotFound.name:
            return new ModelError('model_unavailable', `The VS Code language model is gone: ${message}`);
        }
      }
      // A provider's own failure: the provider knows more than we do; one more try may help.
      return new ModelError('server_error', `The VS Code language model failed: ${message}`);
    },
  };
}
