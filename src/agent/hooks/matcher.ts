import type { HookEvent } from './config.ts';

// Claude Code's matcher rules: '' / '*' / absent match everything; a plain name matches exactly
// (case-sensitive: `Write` is not `MultiEdit`); anything else is a regular expression that must match
// the whole name (`Edit|Write`, `mcp__github__.*`), so `Edit` never catches `MultiEdit` by accident.

export function matcherMatches(matcher: string, subject: string): boolean {
  if (matcher === '' || matcher === '*') return true;
  if (/^[\w-]+$/.test(matcher)) return matcher === subject;
  try {
    return new RegExp(`^(?:${matcher})$`).test(subject);
  } catch {
    return false; // reported when the file was read
  }
}

/** Events whose matcher applies (to a tool name, a session-start source, a compaction trigger). */
const MATCHED: ReadonlySet<HookEvent> = new Set(['PreToolUse', 'PostToolUse', 'SessionStart', 'PreCompact']);

/** Does a group with `matcher` apply to this event's `subject`? Other events ignore the matcher. */
export function groupApplies(event: HookEvent, matcher: string, subject: string | undefined): boolean {
  if (!MATCHED.has(event) || subject === undefined) return true;
  return matcherMatches(matcher, subject);
}

/**
 * The name a tool call is matched under: Keel's names are Claude Code's (Bash, Read, Edit, Write,
 * MultiEdit, Grep, Glob, LS, Task, TodoWrite…); an MCP call is `mcp__<server>__<tool>`, as there.
 */
export function hookToolName(name: string, input: unknown): string {
  if (name !== 'McpCall' || typeof input !== 'object' || input === null) return name;
  const { server, tool } = input as { server?: unknown; tool?: unknown };
  return typeof server === 'string' && typeof tool === 'string' ? `mcp__${server}__${tool}` : name;
}
