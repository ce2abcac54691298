// Model settings as VS Code hands them over, checked without importing `vscode` (unit-tested).

/** `{ "explore": "anthropic:claude-haiku-4-5" }`: kind names as agent names are written; bad pairs dropped. */
export function kindModels(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return out;
  for (const [kind, model] of Object.entries(v))
    if (/^[a-z0-9][a-z0-9_-]{0,63}$/i.test(kind) && typeof model === 'string' && model.trim() !== '')
      out[kind] = model.trim();
  return out;
}

/** The provider prefix of a model name (`openai:gpt-4.1` → openai; a bare name is Anthropic's). */
function providerOf(model: unknown): string {
  if (typeof model !== 'string') return 'anthropic';
  const colon = model.indexOf(':');
  return colon < 0 ? 'anthropic' : model.slice(0, colon).trim().toLowerCase();
}

/**
 * `keel.model` as the user's settings allow it. A workspace (the repository's .vscode/settings.json)
 * may pick another model of the same provider, never another provider: otherwise a cloned repository
 * could send the code to a vendor of its choosing with the user's key for it.
 */
export function modelSetting(inspected: {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}): { model: unknown; refused?: string } {
  const user = inspected.globalValue ?? inspected.defaultValue;
  const workspace = inspected.workspaceFolderValue ?? inspected.workspaceValue;
  if (workspace === undefined) return { model: user };
  if (providerOf(workspace) === providerOf(user ?? 'anthropic')) return { model: workspace };
  return { model: user, refused: String(workspace) };
}
