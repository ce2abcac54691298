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
