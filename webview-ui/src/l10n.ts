import type { WebviewString } from '../../src/shared/webviewStrings.ts';

// The panel's words in the user's language: the host puts the translated table (from vscode.l10n)
// into the page as `data-l10n` on #app; a word it lacks stays English.

let table: Record<string, string> | undefined;

function strings(): Record<string, string> {
  if (table) return table;
  table = {};
  try {
    const raw = document.getElementById('app')?.dataset['l10n'];
    const parsed: unknown = raw ? JSON.parse(raw) : {};
    if (parsed && typeof parsed === 'object')
      for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') table[k] = v;
  } catch {
    // A table that does not parse: English.
  }
  return table;
}

/** `english` in the user's language, `{0}`… replaced by `args`. */
export function t(english: WebviewString, ...args: (string | number)[]): string {
  return (strings()[english] ?? english).replace(/\{(\d+)\}/g, (m, i: string) =>
    args[Number(i)] === undefined ? m : String(args[Number(i)]),
  );
}
