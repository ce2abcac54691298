import * as path from 'node:path';
import type { RuleFile } from './sources.ts';

// Repositories that serve several tools often keep one text and point the others at it: CLAUDE.md
// holding only `@AGENTS.md` (Claude Code's import syntax), GEMINI.md a copy or a symlink of AGENTS.md.
// Sending it twice costs prefix bytes and nothing else, so the later file says where its text is.

export type DedupedRule =
  | { readonly kind: 'text'; readonly rule: RuleFile; readonly text: string }
  /** Nothing but import lines of other rules files that are in the prefix already. */
  | { readonly kind: 'imports'; readonly rule: RuleFile; readonly of: readonly string[] }
  /** The same text as an earlier file. */
  | { readonly kind: 'same'; readonly rule: RuleFile; readonly of: string };

/** `@AGENTS.md`, `@./docs/rules.md`, `- @CLAUDE.md`: a line that is only an import. */
const IMPORT_LINE = /^\s*(?:[-*]\s+)?@(\S+)\s*$/;

function importTarget(line: string, from: string): string | undefined {
  const m = IMPORT_LINE.exec(line);
  if (!m) return undefined;
  const target = m[1]!;
  if (target.startsWith('~') || path.posix.isAbsolute(target)) return undefined;
  return path.posix.normalize(path.posix.join(path.posix.dirname(from), target));
}

function normalized(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trim();
}

/** The always-on rules, in order, each either its own text or a pointer to the file that has it. */
export function dedupRules(rules: readonly RuleFile[]): DedupedRule[] {
  const inPrefix = new Set(rules.map((r) => r.rel));
  const seen = new Map<string, string>();
  const out: DedupedRule[] = [];
  for (const rule of rules) {
    const imports: string[] = [];
    const kept: string[] = [];
    for (const line of rule.text.split('\n')) {
      const target = importTarget(line, rule.rel);
      if (target && target !== rule.rel && inPrefix.has(target)) imports.push(target);
      else kept.push(line);
    }
    const text = kept.join('\n').trim();
    if (imports.length > 0 && text === '') {
      out.push({ kind: 'imports', rule, of: imports });
      continue;
    }
    const key = normalized(text);
    const earlier = rule.complete ? seen.get(key) : undefined;
    if (earlier !== undefined) {
      out.push({ kind: 'same', rule, of: earlier });
      continue;
    }
    if (rule.complete) seen.set(key, rule.rel);
    out.push({ kind: 'text', rule, text });
  }
  return out;
}
