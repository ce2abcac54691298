// Pure helpers for `@file` mentions in the input. A mention stays in the text as `@path`; the chosen
// path also goes into the submit's `mentions`, so the agent gets a reminder to read it (P3).

export interface MentionQuery {
  /** Index of the '@'. */
  readonly start: number;
  /** Text typed after '@' up to the caret. */
  readonly query: string;
}

/** The `@query` being typed at the caret, if any ('@' at start or after whitespace). */
export function mentionAt(text: string, caret: number): MentionQuery | undefined {
  const before = text.slice(0, caret);
  const match = /(^|\s)@([^\s@]*)$/.exec(before);
  if (!match) return undefined;
  const query = match[2] ?? '';
  return { start: caret - query.length - 1, query };
}

/** Replace the `@query` at the caret with `@path ` and return the new text and caret. */
export function insertMention(
  text: string,
  mention: MentionQuery,
  caret: number,
  path: string,
): { text: string; caret: number } {
  const inserted = `@${path} `;
  const after = text.slice(caret).replace(/^\S*/, '');
  const next = text.slice(0, mention.start) + inserted + after.replace(/^ /, '');
  return { text: next, caret: mention.start + inserted.length };
}

/** Mentions chosen from the list that are still present in the text when it is sent. */
export function mentionsInText(text: string, chosen: readonly string[]): string[] {
  const out: string[] = [];
  for (const path of chosen) {
    const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (new RegExp(`(^|\\s)@${escaped}(?=\\s|$|[,.;:!?)])`).test(text) && !out.includes(path)) out.push(path);
  }
  return out;
}

// `/name` at the start of the input: the same list offers slash commands (the host answers a
// completion query that starts with "/" with `/name — description` lines).

/** The `/query` being typed as the input's first word (query includes the slash), if any. */
export function slashAt(text: string, caret: number): MentionQuery | undefined {
  const match = /^\/([A-Za-z0-9_.:-]*)$/.exec(text.slice(0, caret));
  return match ? { start: 0, query: `/${match[1] ?? ''}` } : undefined;
}

/** Replace the typed `/query` with the chosen `/name ` (an item is `/name — description`). */
export function insertSlash(text: string, caret: number, item: string): { text: string; caret: number } {
  const name = `${item.split(/\s/)[0] ?? item} `;
  const after = text.slice(caret).replace(/^\S*/, '').replace(/^ /, '');
  return { text: name + after, caret: name.length };
}
