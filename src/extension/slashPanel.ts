import { discoverAgents } from '../agent/agents/discover.ts';
import { discoverCommands } from '../agent/commands/discover.ts';
import type { HostMessage } from '../shared/webviewProtocol.ts';

// What the panel's input offers besides text: `/` completion and the mode picker's choices. Both are
// read from disk when asked, so a prompt file or agent file added meanwhile shows up.

/** `/query` → `/name — description` lines: the built-ins and the workspace's and user's prompt files. */
export function commandCompletions(query: string, root: string): string[] {
  const typed = query.slice(1).toLowerCase();
  const builtins: [string, string][] = [
    ['model', 'switch the model (NAME) or show it'],
    ['compact', 'summarise the history now'],
    ['clear', 'start a new chat'],
    ['memory', 'show the MEMORY.md files'],
    ['init', 'write an AGENTS.md for this repository'],
    ['review', 'review the working-tree changes'],
    ['cost', "this session's cost and tokens"],
  ];
  const found = root ? discoverCommands({ workspaceRoot: root }).commands : [];
  const all: [string, string][] = [
    ...builtins,
    ...found.map((c): [string, string] => [c.name, `${c.description} (${c.shown})`]),
  ];
  return all
    .filter(([name]) => name.toLowerCase().includes(typed))
    .sort(([a], [b]) => Number(!a.startsWith(typed)) - Number(!b.startsWith(typed)) || (a < b ? -1 : 1))
    .slice(0, 50)
    .map(([name, description]) => `/${name} — ${description}`.slice(0, 300));
}

/** The mode picker: Keel's own agent (null), the built-in plan mode, the workspace's and user's agent files. */
export function modesMessage(
  root: string | undefined,
  current: string | undefined,
): Extract<HostMessage, { type: 'modes' }> {
  const agents = root ? discoverAgents({ workspaceRoot: root }).agents : [];
  const modes = agents.map((a) => ({ name: a.name, description: a.description.slice(0, 300) }));
  return { type: 'modes', modes, current: current ?? null };
}
