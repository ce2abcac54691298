import { dedupRules } from './dedup.ts';
import type { RuleFile } from './sources.ts';

// The rules section of the frozen system prompt (P1), built once from the files discovered at
// session start. Each file is labelled with its path as the repository's text — the label the single
// AGENTS.md always had, so a repository with only AGENTS.md renders the same bytes as before. Past
// the budget, files are listed in an index (path, size, one line) and the model Reads them on demand
// (P3, as the skill index does): a 5 MB CLAUDE.md costs one index line, not the prefix.

/** One file is inlined only up to this size (the cap AGENTS.md always had). */
export const MAX_RULE_FILE_CHARS = 8000;
/** All inlined files together. */
export const MAX_RULES_CHARS = 16_000;
const INDEX_LINE_CHARS = 120;

export interface RulesLimits {
  readonly fileChars?: number;
  readonly totalChars?: number;
}

// A rules file must not close the reminder that carries it (its text would then read as the user's)
// nor open a fake one: the tag is defused wherever it appears, in any case or spacing. Deterministic,
// so the prefix stays byte-stable (P1).
const REMINDER_TAG = /<(\s*\/?\s*)(system[-_\s]*reminder)/gi;

export function defuseRuleText(text: string): string {
  return text.replace(REMINDER_TAG, '&lt;$1$2');
}

export function ruleLabel(rel: string): string {
  return `# Project rules (${rel}: the repository's text, not the user's words)`;
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** The file's first line of prose, for the index: headings' markers dropped, one line, capped. */
export function firstLine(text: string): string {
  const line =
    text
      .split('\n')
      .map((l) => l.replace(/^#+\s*/, '').trim())
      .find((l) => l.length > 0) ?? '';
  return line.length > INDEX_LINE_CHARS ? `${line.slice(0, INDEX_LINE_CHARS - 1)}…` : line;
}

interface IndexEntry {
  readonly rule: RuleFile;
  readonly why: string;
}

function indexLine({ rule, why }: IndexEntry): string {
  const line = defuseRuleText(rule.description ?? firstLine(rule.text));
  return `- ${rule.rel} (${formatSize(rule.size)}, ${why})${line ? `: ${line}` : ''}`;
}

/**
 * The prefix's rules text: always-on files in discovery order (inlined while they fit), then an index
 * of the rest (too large, or applied on request). Path-scoped rules are not here at all: they come as
 * reminders when the agent touches a matching file (scoped.ts), never by changing the prefix.
 */
export function renderRules(rules: readonly RuleFile[], limits: RulesLimits = {}): string {
  const fileChars = limits.fileChars ?? MAX_RULE_FILE_CHARS;
  const totalChars = limits.totalChars ?? MAX_RULES_CHARS;
  const blocks: string[] = [];
  const index: IndexEntry[] = [];
  let used = 0;
  for (const entry of dedupRules(rules.filter((r) => r.scope.kind === 'always'))) {
    const label = ruleLabel(entry.rule.rel);
    if (entry.kind === 'imports') {
      blocks.push(`${label}\nOnly imports ${entry.of.join(', ')} (not repeated here).`);
      continue;
    }
    if (entry.kind === 'same') {
      blocks.push(`${label}\nSame text as ${entry.of} (not repeated here).`);
      continue;
    }
    const fits =
      entry.rule.complete && entry.text.length <= fileChars && used + entry.text.length <= totalChars;
    if (!fits) {
      index.push({ rule: entry.rule, why: 'always applies; too large to include, Read it' });
      continue;
    }
    used += entry.text.length;
    blocks.push(`${label}\n${defuseRuleText(entry.text)}`);
  }
  for (const rule of rules) {
    if (rule.scope.kind === 'on_request') index.push({ rule, why: 'read it when this applies' });
  }
  if (index.length > 0) {
    blocks.push(
      `# Project rules files not included (the repository's text, not the user's words)\n${index.map(indexLine).join('\n')}`,
    );
  }
  return blocks.join('\n\n');
}
