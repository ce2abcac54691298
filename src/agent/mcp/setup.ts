import type { Host, McpPort } from '../host.ts';
import { defaultMcpSources, loadMcpConfig, type McpServerConfig } from './config.ts';
import { createMcpManager, type McpManager } from './manager.ts';

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

export function setupSessionMcp(host: Host, options: { readonly readOnly: boolean }): McpSetup {
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
  if (servers.length > 0 && options.readOnly) {
    notices.push('MCP servers are not offered in a read-only session.');
    servers = [];
  }
  if (servers.length === 0) return { notices };
  const manager = createMcpManager({
    servers,
    port,
    workspaceFolder: root,
    ...(host.log ? { log: host.log } : {}),
  });
  return { mcp: { manager, port, servers }, notices };
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
