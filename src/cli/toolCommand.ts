import type { Host } from '../agent/host.ts';
import { withSessionMemory } from '../agent/safety/approvals.ts';
import { defaultBundledSkillsDir, discoverSkills } from '../agent/skills/discover.ts';
import { createToolset } from '../agent/tools/index.ts';
import { fail, type ToolResult } from '../agent/tools/protocol.ts';
import { createToolRegistry } from '../agent/tools/registry.ts';
import { standaloneToolContext } from '../agent/tools/standalone.ts';
import { onSignals, STOP_SIGNALS } from './signals.ts';

function toolsetFor(host: Host, bundledSkillsDir: string | undefined, withSkills = true) {
  let todos: readonly import('../agent/events.ts').TodoItem[] = [];
  return createToolset({
    host,
    readOnly: !host.workspace.isTrusted(),
    ...(withSkills
      ? {
          skills: discoverSkills({
            bundledDir: bundledSkillsDir ?? defaultBundledSkillsDir(),
            workspaceRoot: host.workspace.roots[0] ?? '',
          }),
        }
      : {}),
    todos: {
      current: () => todos,
      onChange: (next) => {
        todos = next;
      },
    },
  });
}

/** `keel tool` alone: the tools a session offers here, one per line with the first line of its description. */
export function listTools(host: Host, options: { bundledSkillsDir?: string } = {}): string {
  const tools = createToolRegistry(toolsetFor(host, options.bundledSkillsDir)).apiTools;
  const width = Math.max(...tools.map((t) => t.name.length));
  return tools
    .map((t) => `${t.name.padEnd(width)}  ${(t.description ?? '').split('\n')[0]!.split(/(?<=\.)\s/)[0]}`)
    .join('\n');
}

/** `keel tool NAME JSON`: one call through the same registry, guards and policies as a session. */
export async function runToolOnce(
  baseHost: Host,
  name: string,
  inputJson: string,
  options: { bundledSkillsDir?: string } = {},
): Promise<ToolResult> {
  let input: unknown;
  try {
    input = JSON.parse(inputJson);
  } catch (error) {
    return fail(
      'INVALID_PARAM',
      `The tool input is not valid JSON: ${(error as Error).message}`,
      `Pass one JSON object, e.g. '{"path":"README.md"}'.`,
    );
  }
  const host: Host = { ...baseHost, approvals: withSessionMemory(baseHost.approvals) };
  // Scanning the skill folders is only for the Skill tool (or to name every tool when NAME is unknown).
  let registry = createToolRegistry(toolsetFor(host, options.bundledSkillsDir, false));
  if (!registry.get(name)) registry = createToolRegistry(toolsetFor(host, options.bundledSkillsDir));
  const controller = new AbortController();
  // Ctrl-C, SIGTERM or SIGHUP stop the call (a command's whole process tree) and keel then exits
  // through its clean-up; the default action would leave an unsandboxed command running.
  // Once: a second signal has its default effect (keel exits at once).
  const stopListening = onSignals(STOP_SIGNALS, (signal) => {
    stopListening();
    controller.abort(signal === 'SIGINT' ? 'interrupted' : 'terminated');
  });
  try {
    const executed = await registry.execute(
      name,
      input,
      standaloneToolContext(host, 'cli-tool', controller.signal),
    );
    return executed.result;
  } finally {
    stopListening();
  }
}
