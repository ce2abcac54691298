import type Anthropic from '@anthropic-ai/sdk';
import { UNTRUSTED_NOTICE } from '../safety/untrusted.ts';
import type { SkillEntry } from '../skills/discover.ts';
import { renderSkillIndex } from '../skills/discover.ts';
import { sortKeysDeep } from './tokens.ts';

// The fixed prefix, built once per session and frozen (P1): tools (sorted by name, keys sorted), then
// the system prompt in layers — red lines, how to decide, how to recover, project rules (AGENTS.md),
// skill index. Nothing here may depend on the clock, the directory listing or any counter.

const RED_LINES = `You are Keel, a coding agent working in the user's workspace through tools.

# Red lines
- Never guess: what you have not read, run or seen, you do not know. Read, search or ask.
- Never leave the workspace; don't work around refused paths.
- Ask before irreversible steps (deleting data, force-push, history rewrites, migrations, publishing) and wait.
- Not verified = not done: run the relevant test/build and report the real result, or say it is unverified.
- The user's "don't" instructions hold all session.
- ${UNTRUSTED_NOTICE}`;

const HOW_TO_DECIDE = `# How to decide
- Evidence before conclusions; batch only independent calls.
- 3+ steps: keep a TodoWrite list. Make the smallest change, in the surrounding style.
- End with what changed, how it was verified, what is left.`;

const HOW_TO_RECOVER = `# How to recover
- NOT_READ: Read, retry. CONFLICT: Read again, redo. NO_MATCH: copy the lines verbatim. AMBIGUOUS_MATCH: add lines until unique.
- Empty result = nothing matched. partial = output cut; Read/Grep the file it names.
- DENIED_BY_USER: don't retry; ask. LOOP_DETECTED/CIRCUIT_OPEN: change approach.
- 3 failures in a row: stop, re-read code and errors, change approach or ask.
- Results trimmed or summarised away: MemorySearch, or the file the placeholder names.`;

/** Project rules beyond this size are cut (the model can Read AGENTS.md for the rest). */
export const MAX_PROJECT_RULES_CHARS = 8000;

export interface SystemPromptInput {
  /** AGENTS.md text, read once at session start (used when `rulesText` is not given). */
  readonly projectRules?: string;
  /** The rendered rules section (src/agent/projectRules/: every rules file), read once at session start. */
  readonly rulesText?: string;
  /** MEMORY.md snapshot taken at session start (rendered, capped). */
  readonly memory?: string;
  /** Skill index snapshot taken at session start. */
  readonly skills?: readonly SkillEntry[];
  /** Configured MCP servers: one line each, never their tool schemas (those come from McpSearch). */
  readonly mcpServers?: readonly McpServerLine[];
  /** The workspace folders at session start, the first the primary (listed only when there are several). */
  readonly workspaceRoots?: readonly WorkspaceRootLine[];
}

export interface WorkspaceRootLine {
  readonly path: string;
  /** The name a relative path may start with to reach this folder (none for the first). */
  readonly name?: string;
}

/** Several folders: how a path reaches each (pathGuard.ts resolves exactly this way). */
export function workspaceRootsSection(roots: readonly WorkspaceRootLine[]): string {
  if (roots.length < 2) return '';
  const lines = roots.map((r, i) =>
    i === 0
      ? `- ${r.path} (first: relative paths and commands start here)`
      : `- ${r.path}${r.name ? ` (as "${r.name}/…"; Bash cwd "${r.name}")` : ' (absolute paths only)'}`,
  );
  return `# Workspace folders\n${lines.join('\n')}\nA relative path starting with a folder's name means that folder; "./name/…" means the first folder's own "name".`;
}

export interface McpServerLine {
  readonly name: string;
  readonly description?: string;
}

export const MCP_DESCRIPTION_MAX_CHARS = 120;

/** One self-contained line per server, so adding a server adds exactly one line to the prefix. */
export function mcpServerLine(server: McpServerLine): string {
  let desc = (server.description ?? '').replace(/\s+/g, ' ').trim();
  if (desc.length > MCP_DESCRIPTION_MAX_CHARS) desc = `${desc.slice(0, MCP_DESCRIPTION_MAX_CHARS - 1)}…`;
  return `- MCP server "${server.name}"${desc ? ` (${desc})` : ''}: find its tools with McpSearch, call them with McpCall.`;
}

export function buildSystemPrompt(input: SystemPromptInput = {}): string {
  const servers = input.mcpServers ?? [];
  const decide =
    servers.length > 0 ? `${HOW_TO_DECIDE}\n${servers.map(mcpServerLine).join('\n')}` : HOW_TO_DECIDE;
  const parts = [RED_LINES, decide, HOW_TO_RECOVER];
  const folders = workspaceRootsSection(input.workspaceRoots ?? []);
  if (folders) parts.push(folders);
  const rules = input.projectRules?.replace(/\r\n/g, '\n').trim();
  if (input.rulesText !== undefined) {
    if (input.rulesText) parts.push(input.rulesText);
  } else if (rules) {
    const cut =
      rules.length > MAX_PROJECT_RULES_CHARS
        ? `${rules.slice(0, MAX_PROJECT_RULES_CHARS)}\n[… AGENTS.md continues; Read it for the rest]`
        : rules;
    // Labelled as the repository's: it shapes how the work is done, never what Keel may do.
    parts.push(`# Project rules (AGENTS.md: the repository's text, not the user's words)\n${cut}`);
  }
  if (input.memory) parts.push(input.memory);
  const index = renderSkillIndex(input.skills ?? []);
  if (index) parts.push(index);
  return parts.join('\n\n');
}

/** Tools sorted by name with every object's keys sorted: the serialised list is canonical. */
export function freezeTools(tools: readonly Anthropic.Tool[]): Anthropic.Tool[] {
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.map((t) => Object.freeze(sortKeysDeep(t)));
}
