import { parseModelRef } from '../../agent/model/providers/modelRef.ts';
import type { ModelProvider } from '../../agent/model/providers/types.ts';

// Which model a new chat answers with when Keel has no key of its own: one of VS Code's language
// models (`vscode:vendor/id`: the user's Copilot plan's, a key added to VS Code, another extension's
// provider). Decided per new session; the provider module loads only when first needed.

export type LmDecision =
  | { readonly ok: true; readonly model?: string; readonly notice?: string }
  | { readonly ok: false; readonly error: string; readonly suggestion: string };

/** Only a bare or `anthropic:` model needs Keel's key; others have their own (or VS Code's). */
function needsAnthropicKey(model: string): boolean {
  try {
    return parseModelRef(model).provider === 'anthropic';
  } catch {
    return false; // a bad name is reported when the session starts
  }
}

export function createLmChoice() {
  let chosen: string | undefined;
  let provider: ModelProvider | undefined;
  return {
    /** The `vscode:` model new sessions use; undefined: the configured model. */
    get model(): string | undefined {
      return chosen;
    },
    async provider(): Promise<ModelProvider> {
      provider ??= (await import('./vscodeLmProvider.ts')).createVscodeLmProvider();
      return provider;
    },
    /** Before a new session: with a key, a base URL or a non-Anthropic model, nothing changes. */
    async decide(hasKey: boolean, configuredModel: string): Promise<LmDecision> {
      if (hasKey || !needsAnthropicKey(configuredModel)) {
        chosen = undefined;
        return { ok: true };
      }
      const { defaultLmModel } = await import('./vscodeLmProvider.ts');
      const found = await defaultLmModel();
      if (!found)
        return {
          ok: false,
          error: 'No Anthropic API key is set, and VS Code offers no language model.',
          suggestion:
            'Run "Keel: Set API Key" (the key is kept in VS Code\'s secret storage), or add a model to VS Code (GitHub Copilot, or "Chat: Manage Language Models").',
        };
      const changed = found !== chosen;
      chosen = found;
      return changed
        ? {
            ok: true,
            model: found,
            notice: `No Anthropic API key is set: ${found} (one of VS Code's language models) answers this chat. "Keel: Set API Key" or the keel.model setting changes that; /model switches this chat.`,
          }
        : { ok: true, model: found };
    },
  };
}
