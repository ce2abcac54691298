import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Host, McpPort } from '../host.ts';
import { defaultMcpSources, loadMcpConfig, type McpServerConfig } from './config.ts';
import { createMcpManager, type McpManager } from './manager.ts';
import type { TrustRoom } from '../trust/room.ts';
import { workspaceStateHome } from '../trust/paths.ts';

// What a session gets from MCP at start: the servers' one-line entries for the frozen prefix and a
// manager that starts nothing until a tool needs it. No servers configured = nothing at all (no tools,
// no prompt lines, no SDK).

export interface SessionMcp {
  readonly manager: McpManager;
  readonly port: McpPort;
  readonly servers: readonly McpServerConfig[];
}

export interface McpSetup {
  readonly mcp?: SessionMcp;
  /** Warnings for the user (bad config, servers skipped and why). */
  readonly notices: readonly string[];
}

export function setupSessionMcp(
  host: Host,
  options: { readonly readOnly: boolean; readonly trust?: TrustRoom },
): McpSetup {
  const port = host.mcp;
  if (!port) return { notices: [] };
  const root = host.workspace.roots[0] ?? '';
  const sources = defaultMcpSources({
    workspaceRoot: root,
    ...(port.userConfigFile !== undefined ? { userConfig: port.userConfigFile } : {}),
    ...(port.namedConfigFiles ? { named: port.namedConfigFiles } : {}),
  });
  const notices: string[] = [];
  const loaded = loadMcpConfig(sources, (file) => {
    try {
      return host.storage.readText(file);
    } catch (error) {
      notices.push(`${file}: ${(error as Error).message}`);
      return undefined;
    }
  });
  notices.push(...loaded.problems);
  let servers = loaded.servers;
  if (!host.workspace.isTrusted()) {
    const skipped = servers.filter((s) => s.scope === 'workspace');
    if (skipped.length > 0)
      notices.push(
        `MCP servers defined by this untrusted workspace are never started: ${skipped.map((s) => s.name).join(', ')}.`,
      );
    servers = servers.filter((s) => s.scope !== 'workspace');
  }
  // A workspace-defined server is in the prompt and may start only once the user approved its exact
  // definition (the trust room's notice names the rest): an unapproved one changes nothing.
  const trust = options.trust;
  if (trust)
    servers = servers.filter((s) => {
      const item = s.scope === 'workspace' ? trust.mcpItem(s) : undefined;
      return s.scope !== 'workspace' || (item !== undefined && trust.isApproved(item));
    });
  if (servers.length > 0 && options.readOnly) {
    notices.push('MCP servers are not offered in a read-only session.');
    servers = [];
  }
  if (servers.length === 0) return { notices };
  // A server without a description in its config gets the gist of the `instructions` it sent when it
  // last started (remembered per definition): known at session start, so the prefix stays frozen (P1).
  const known = readInstructions(host);
  servers = servers.map((s) => {
    const gist = known[instructionsKey(s)];
    return s.description || !gist ? s : { ...s, description: gist };
  });
  const manager = createMcpManager({
    servers,
    port,
    workspaceFolder: root,
    ...(options.trust ? { trust: options.trust } : {}),
    ...(host.shell.sandbox ? { sandbox: host.shell.sandbox } : {}),
    ...(host.log ? { log: host.log } : {}),
    onConnected: (config, connection) => {
      const gist = connection.instructions ? instructionsGist(connection.instructions) : undefined;
      const all = readInstructions(host);
      const key = instructionsKey(config);
      if (all[key] === gist) return;
      if (gist) all[key] = gist;
      else delete all[key];
      try {
        fs.mkdirSync(path.dirname(instructionsFile(host)), { recursive: true, mode: 0o700 });
        host.storage.writeText(instructionsFile(host), `${JSON.stringify(all, null, 2)}\n`);
      } catch (error) {
        host.log?.(
          'warn',
          `could not remember the instructions of MCP server "${config.name}": ${String(error)}`,
        );
      }
    },
  });
  return { mcp: { manager, port, servers }, notices };
}

// Kept outside the workspace: it becomes prompt text, so a repository must not be able to ship one.
const instructionsFile = (host: Host) =>
  path.join(
    workspaceStateHome(host.workspace.roots[0] ?? path.dirname(host.stateDir)),
    'mcp-instructions.json',
  );
const instructionsKey = (s: McpServerConfig) => `${s.name} ${s.hash.slice(0, 16)}`;

function readInstructions(host: Host): Record<string, string> {
  try {
    const parsed = JSON.parse(host.storage.readText(instructionsFile(host)) ?? '{}') as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed as Record<string, unknown>).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    );
  } catch {
    return {};
  }
}

/**
 * The first sentence of the first prose line of a server's instructions: plain words only (no markup,
 * no angle brackets), one line, at most 120 characters. Server-written text, so kept this small.
 */
export function instructionsGist(instructions: string): string | undefined {
  for (const raw of instructions.split('\n')) {
    const line = raw
      .replace(/^\s*(#+|[-*>]|\d+\.)\s*/, '')
      .replace(/[`*_<>[\]{}]/g, '')
      .replace(/\s+/g, ' ')
      .trim();
    if (raw.trim().startsWith('#') || !/[A-Za-z]{3}/.test(line)) continue;
    const sentence = /^(.+?[.!?])(\s|$)/.exec(line)?.[1] ?? line;
    return sentence.length > 120 ? `${sentence.slice(0, 119)}…` : sentence;
  }
  return undefined;
}

/** Calls `notify` once each time a server is refused, fails or crashes (the user hears it, not only the model). */
export function watchMcpProblems(manager: McpManager, notify: (text: string) => void): { dispose(): void } {
  const last = new Map<string, string>();
  return manager.onDidChange(() => {
    for (const s of manager.status()) {
      const key = `${s.state}:${s.reason ?? ''}`;
      if (last.get(s.name) === key) continue;
      last.set(s.name, key);
      if (s.state === 'denied' || s.state === 'failed' || s.state === 'crashed') {
        const verb = s.state === 'denied' ? 'was not started' : s.state === 'failed' ? 'failed' : 'crashed';
        notify(`MCP server "${s.name}" ${verb}: ${(s.reason ?? '').split('\n')[0]}`);
      }
    }
  });
}
