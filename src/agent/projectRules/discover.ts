import * as fs from 'node:fs';
import type { PathGuard } from '../safety/paths/pathGuard.ts';
import { type RuleRead, readRuleFile, ruleDir } from './readRuleFile.ts';
import { matchesEverything, splitRuleFrontmatter } from './ruleFrontmatter.ts';
import {
  RULE_SOURCES,
  type RuleFile,
  type RuleProblem,
  type RuleScope,
  type RuleSourceName,
} from './sources.ts';

// Discovery, once per session at start (P1: never re-read mid-session; the next session sees
// edits). The order below IS the documented order (docs/rules.md): by source as listed, then the
// files of a folder by name (code-unit order, not the locale's). Nested AGENTS.md files are not
// looked for here: they apply to their subtree only and are found when the agent touches a file
// there (scoped.ts), so no session start walks a large repository.

/** A folder of rules (`.clinerules/`, `.cursor/rules/`, `.github/instructions/`) is read up to this many files. */
export const MAX_RULE_FOLDER_FILES = 50;

export interface DiscoverRulesOptions {
  readonly guard: PathGuard;
  readonly disabled?: readonly RuleSourceName[];
}

export interface DiscoveredRules {
  readonly rules: readonly RuleFile[];
  readonly problems: readonly RuleProblem[];
}

const WHY: Record<Exclude<RuleRead, { ok: true }>['reason'], string> = {
  missing: 'missing',
  outside: 'not read: it leads outside the workspace (symlink)',
  not_a_file: 'not read: not a regular file',
  binary: 'not read: binary content',
  unreadable: 'not read: unreadable',
};

/** The files of one folder with this suffix, sorted, at most MAX_RULE_FOLDER_FILES. */
function folderFiles(guard: PathGuard, dirRel: string, suffix: string, problems: RuleProblem[]): string[] {
  const dir = ruleDir(guard, dirRel);
  if (dir === 'outside') problems.push({ rel: dirRel, message: WHY.outside });
  if (dir === undefined || dir === 'outside') return [];
  let names: string[];
  try {
    // A name is a label in the prompt: one with control characters (a newline) could forge a line.
    names = fs
      .readdirSync(dir)
      .filter((n) => n.endsWith(suffix) && !n.startsWith('.') && !/[\u0000-\u001f\u007f]/.test(n));
  } catch {
    return [];
  }
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (names.length > MAX_RULE_FOLDER_FILES) {
    problems.push({
      rel: dirRel,
      message: `${names.length} files; only the first ${MAX_RULE_FOLDER_FILES} (by name) are read`,
    });
    names = names.slice(0, MAX_RULE_FOLDER_FILES);
  }
  return names.map((n) => `${dirRel}/${n}`);
}

type Scoper = (frontmatter: ReturnType<typeof splitRuleFrontmatter>['frontmatter']) => RuleScope;

const always: Scoper = () => ({ kind: 'always' });

/** Copilot: `applyTo` everything = always; some globs = scoped; none = attached by hand, so on request. */
const copilotScope: Scoper = (fm) =>
  matchesEverything(fm.globs)
    ? { kind: 'always' }
    : fm.globs.length > 0
      ? { kind: 'globs', globs: fm.globs }
      : { kind: 'on_request' };

/** Cursor: alwaysApply = always; globs = auto-attached (scoped); else agent-requested or manual. */
const cursorScope: Scoper = (fm) =>
  fm.alwaysApply || matchesEverything(fm.globs)
    ? { kind: 'always' }
    : fm.globs.length > 0
      ? { kind: 'globs', globs: fm.globs }
      : { kind: 'on_request' };

export function discoverRules(options: DiscoverRulesOptions): DiscoveredRules {
  const { guard } = options;
  const off = new Set(options.disabled ?? []);
  const rules: RuleFile[] = [];
  const problems: RuleProblem[] = [];
  const add = (source: RuleSourceName, rel: string, scoper: Scoper, frontmatter = false) => {
    const read = readRuleFile(guard, rel);
    if (!read.ok) {
      if (read.reason !== 'missing') problems.push({ rel, message: WHY[read.reason] });
      return;
    }
    const split = frontmatter
      ? splitRuleFrontmatter(read.text)
      : { frontmatter: splitRuleFrontmatter('').frontmatter, body: read.text };
    rules.push({
      source,
      rel,
      size: read.size,
      text: split.body.replace(/\r\n/g, '\n').trim(),
      complete: read.complete,
      scope: scoper(split.frontmatter),
      ...(split.frontmatter.description ? { description: split.frontmatter.description } : {}),
    });
  };
  const sources: Record<RuleSourceName, () => void> = {
    agents: () => add('agents', 'AGENTS.md', always),
    claude: () => {
      add('claude', 'CLAUDE.md', always);
      add('claude', '.claude/CLAUDE.md', always);
      add('claude', 'CLAUDE.local.md', always);
    },
    copilot: () => {
      add('copilot', '.github/copilot-instructions.md', always);
      for (const rel of folderFiles(guard, '.github/instructions', '.instructions.md', problems)) {
        add('copilot', rel, copilotScope, true);
      }
    },
    cursor: () => {
      for (const rel of folderFiles(guard, '.cursor/rules', '.mdc', problems))
        add('cursor', rel, cursorScope, true);
      add('cursor', '.cursorrules', always);
    },
    cline: () => {
      const dir = ruleDir(guard, '.clinerules');
      if (dir === 'outside') problems.push({ rel: '.clinerules', message: WHY.outside });
      else if (dir) {
        for (const rel of folderFiles(guard, '.clinerules', '.md', problems)) add('cline', rel, always);
      } else add('cline', '.clinerules', always);
    },
    gemini: () => add('gemini', 'GEMINI.md', always),
  };
  for (const source of RULE_SOURCES) {
    if (!off.has(source)) sources[source]();
  }
  // An empty file says nothing; listing it would only cost prefix bytes.
  return { rules: rules.filter((r) => r.text.length > 0 || !r.complete), problems };
}
