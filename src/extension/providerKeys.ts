import * as vscode from 'vscode';

// Keys for the OpenAI-compatible providers (`openai:`, `azure:` models), kept in VS Code's secret
// storage, never in settings.json (a settings file can be shared or committed; a workspace's
// settings are the repository's). The environment (OPENAI_API_KEY, AZURE_OPENAI_API_KEY) still works.

export type KeyedProvider = 'openai' | 'azure';

const LABELS: Record<KeyedProvider, string> = {
  openai: 'OpenAI (or an OpenAI-compatible server at OPENAI_BASE_URL)',
  azure: 'Azure OpenAI',
};

const secretName = (provider: KeyedProvider) => `keel.providerKey.${provider}`;

export async function providerKeys(
  secrets: vscode.SecretStorage,
): Promise<Partial<Record<KeyedProvider, { apiKey: string }>>> {
  const out: Partial<Record<KeyedProvider, { apiKey: string }>> = {};
  for (const provider of Object.keys(LABELS) as KeyedProvider[]) {
    const key = await secrets.get(secretName(provider));
    if (key) out[provider] = { apiKey: key };
  }
  return out;
}

export function registerProviderKeyCommand(secrets: vscode.SecretStorage): vscode.Disposable {
  return vscode.commands.registerCommand('keel.setProviderKey', async (given?: KeyedProvider) => {
    const provider =
      given && given in LABELS
        ? given
        : (
            await vscode.window.showQuickPick(
              (Object.keys(LABELS) as KeyedProvider[]).map((p) => ({ label: LABELS[p], provider: p })),
              { title: vscode.l10n.t('Keel: Set Provider API Key'), ignoreFocusOut: true },
            )
          )?.provider;
    if (!provider) return;
    const key = await vscode.window.showInputBox({
      title: vscode.l10n.t('Keel: Set Provider API Key'),
      prompt: vscode.l10n.t(
        "Your {0} API key. It is stored in VS Code's secret storage, never in settings. Leave empty to remove it.",
        LABELS[provider],
      ),
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return;
    if (key.trim()) await secrets.store(secretName(provider), key.trim());
    else await secrets.delete(secretName(provider));
    void vscode.window.showInformationMessage(
      key.trim()
        ? vscode.l10n.t('Keel: {0} key saved.', provider)
        : vscode.l10n.t('Keel: {0} key removed.', provider),
    );
  });
}
