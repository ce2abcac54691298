import type { PathGuard } from '../safety/paths/pathGuard.ts';
import { discoverRules } from './discover.ts';
import { renderRules } from './render.ts';
import { createScopedRules, type NestedRuleName, type ScopedRules } from './scoped.ts';
import type { RuleFile, RuleProblem, RuleSourceName } from './sources.ts';

// The session's one call: discover the rules files once at start, render the frozen prefix's
// section, and hand back the path-scoped offerer. Project text in an untrusted workspace is read as
// AGENTS.md always was (labelled, granting nothing): workspace trust limits what Keel DOES there.

export { discoverRules, MAX_RULE_FOLDER_FILES } from './discover.ts';
export { MAX_RULE_FILE_CHARS, MAX_RULES_CHARS, renderRules } from './render.ts';
export { createScopedRules, SCOPED_RULE_SOURCE_PREFIX, withScopedRules } from './scoped.ts';
export { parseDisabledSources, RULE_SOURCES, type RuleSourceName } from './sources.ts';

export interface ProjectRules {
  /** The system prompt's rules section ('' when the workspace has none). */
  readonly prefixText: string;
  readonly rules: readonly RuleFile[];
  readonly problems: readonly RuleProblem[];
  /** Path-scoped rules (globs, nested AGENTS.md / CLAUDE.md); undefined when there can be none. */
  readonly scoped?: ScopedRules;
}

export function loadProjectRules(options: {
  readonly guard: PathGuard;
  readonly disabled?: readonly RuleSourceName[];
}): ProjectRules {
  const { rules, problems } = discoverRules(options);
  const off = new Set(options.disabled ?? []);
  // In the order of the sources: a folder's AGENTS.md before its CLAUDE.md (which often imports it).
  const nested: NestedRuleName[] = [
    ...(off.has('agents') ? [] : [{ file: 'AGENTS.md', source: 'agents' } as const]),
    ...(off.has('claude') ? [] : [{ file: 'CLAUDE.md', source: 'claude' } as const]),
  ];
  const globbed = rules.filter((r) => r.scope.kind === 'globs');
  return {
    prefixText: renderRules(rules),
    rules,
    problems,
    ...(nested.length > 0 || globbed.length > 0
      ? { scoped: createScopedRules({ rules: globbed, nested, guard: options.guard }) }
      : {}),
  };
}
