// The rules files other coding agents read, as one list in ONE fixed order. The order is part of
// the frozen prefix (P1): the same checkout renders the same bytes, whatever the file system's
// listing order. It is documented in docs/rules.md; change both together.
//
// Threat model (DESIGN §5, issue 24): every file here is the repository's text. It needs no approval
// because it grants nothing: it is rendered labelled with its file ("the repository's text, not the
// user's words"), never with the user's voice, and nothing in it widens tools, paths, network or
// what runs. A hostile repository can still try prompt injection (the label and the red lines are
// the defence, as for AGENTS.md before), a huge file to blow the prefix budget (files past a cap are
// indexed, never inlined: render.ts), a symlink to a file outside the workspace (never followed:
// readRuleFile.ts), or a folder of thousands of files (a count cap: discover.ts).

/** Source names, as the `keel.rules.disabled` setting and `KEEL_RULES_DISABLED` spell them. */
export const RULE_SOURCES = ['agents', 'claude', 'copilot', 'cursor', 'cline', 'gemini'] as const;
export type RuleSourceName = (typeof RULE_SOURCES)[number];

export type RuleScope =
  /** In the frozen prefix from session start. */
  | { readonly kind: 'always' }
  /** Offered as a reminder the first time the agent touches a file matching one of the globs. */
  | { readonly kind: 'globs'; readonly globs: readonly string[] }
  /** Offered as a reminder the first time the agent touches a file under `dir` (nested AGENTS.md). */
  | { readonly kind: 'subtree'; readonly dir: string }
  /** Listed in the prefix's index with its description; the model Reads it when it applies. */
  | { readonly kind: 'on_request' };

export interface RuleFile {
  readonly source: RuleSourceName;
  /** Workspace-relative, "/"-separated: the label the model sees. */
  readonly rel: string;
  /** Bytes on disk. */
  readonly size: number;
  /** The instructions (frontmatter removed, CRLF → LF, trimmed); only the head when `complete` is false. */
  readonly text: string;
  /** False when the file is larger than what was read (it can only be indexed). */
  readonly complete: boolean;
  readonly scope: RuleScope;
  /** Frontmatter `description` (Cursor rules), one line. */
  readonly description?: string;
}

export interface RuleProblem {
  readonly rel: string;
  readonly message: string;
}

/** `["claude", "cursor"]` from a setting or a comma list; unknown names are reported, not fatal. */
export function parseDisabledSources(raw: unknown): {
  disabled: RuleSourceName[];
  unknown: string[];
} {
  const items =
    typeof raw === 'string'
      ? raw.split(',')
      : Array.isArray(raw)
        ? raw.filter((v) => typeof v === 'string')
        : [];
  const disabled = new Set<RuleSourceName>();
  const unknown: string[] = [];
  for (const item of items as string[]) {
    const name = item.trim().toLowerCase();
    if (name === '') continue;
    if ((RULE_SOURCES as readonly string[]).includes(name)) disabled.add(name as RuleSourceName);
    else unknown.push(name);
  }
  return { disabled: RULE_SOURCES.filter((s) => disabled.has(s)), unknown };
}
