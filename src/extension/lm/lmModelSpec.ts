// `vscode:` model names as users write them: `vscode:` or `vscode:auto` (the first model VS Code
// offers), `vscode:copilot/gpt-4.1` (vendor/id, what Keel stores and shows), `vscode:gpt-4.1` (an id,
// else a family). Plain code: no `vscode` import, so the CLI can name the error too.

export interface LmModelSpec {
  readonly raw: string;
  readonly vendor?: string;
  /** An id or a family; undefined: any model. */
  readonly name?: string;
}

export interface LmSelector {
  readonly vendor?: string;
  readonly id?: string;
  readonly family?: string;
}

export function parseLmModel(model: string): LmModelSpec {
  const raw = model.trim();
  const rest = raw.replace(/^vscode:/i, '').trim();
  if (rest === '' || rest.toLowerCase() === 'auto') return { raw };
  const slash = rest.indexOf('/');
  if (slash > 0 && slash < rest.length - 1)
    return { raw, vendor: rest.slice(0, slash), name: rest.slice(slash + 1) };
  return { raw, name: rest };
}

/** The selectors to try in order: by id first, then by family (`gpt-4.1` may name either). */
export function lmSelector(spec: LmModelSpec): LmSelector[] {
  const vendor = spec.vendor ? { vendor: spec.vendor } : {};
  if (!spec.name) return [vendor];
  return [
    { ...vendor, id: spec.name },
    { ...vendor, family: spec.name },
  ];
}
