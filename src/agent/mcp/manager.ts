import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { approveWorkspaceServer } from './approval.ts';
import { ToolFailure } from '../tools/protocol.ts';
import { describeTransport, type McpServerConfig } from './config.ts';
import { McpConfigError, resolveTransport } from './resolve.ts';
import type { McpManager, McpManagerOptions, McpServerState, McpToolListing } from './managerTypes.ts';
import type { McpClientHooks } from './clientFeatures.ts';
import type { McpConnection } from './connection.ts';

export type {
  McpCallOutcome,
  McpManager,
  McpManagerOptions,
  McpServerState,
  McpServerStatus,
  McpToolListing,
} from './managerTypes.ts';

// The session's MCP servers: started lazily (on the first search or call that needs one), stopped with
// the session. Workspace-defined servers start only once the host approves them. A server that
// crashes is restarted once; a second crash pauses it (CIRCUIT_OPEN) until the user restarts it.
// The SDK is imported here only inside `start` (type imports are erased), never at session start.

interface Entry {
  readonly config: McpServerConfig;
  state: McpServerState;
  connection?: McpConnection;
  starting?: Promise<McpConnection>;
  reason?: string;
  /** undefined = not asked yet this session. */
  approved?: boolean;
  crashes: number;
}

const DEFAULT_START_TIMEOUT_MS = 30_000;
const DEFAULT_CALL_TIMEOUT_MS = 60_000;

function envMs(value: string | undefined): number | undefined {
  return value && /^\d+$/.test(value) ? Number(value) : undefined;
}

function tailLines(text: string, lines = 15): string {
  const kept = text.trimEnd().split('\n').slice(-lines).join('\n');
  return kept ? `\nstderr (last lines):\n${kept}` : '';
}

export function createMcpManager(options: McpManagerOptions): McpManager {
  const env = options.env ?? process.env;
  const startTimeoutMs =
    options.startTimeoutMs ?? envMs(env.KEEL_MCP_START_TIMEOUT_MS) ?? DEFAULT_START_TIMEOUT_MS;
  const callTimeoutMs =
    options.callTimeoutMs ?? envMs(env.KEEL_MCP_CALL_TIMEOUT_MS) ?? DEFAULT_CALL_TIMEOUT_MS;
  const load = options.loadConnection ?? (() => import('./connection.ts'));
  const entries = new Map(
    options.servers.map((config) => [config.name, { config, state: 'not_started', crashes: 0 } as Entry]),
  );
  const listeners = new Set<() => void>();
  let loads = 0;
  let shutDown = false;
  const changed = () => {
    for (const l of listeners) {
      try {
        l();
      } catch {
        // a listener's failure is not the server's
      }
    }
  };
  const set = (entry: Entry, state: McpServerState, reason?: string) => {
    entry.state = state;
    if (reason === undefined) delete entry.reason;
    else entry.reason = reason;
    changed();
  };

  const entryOf = (name: string): Entry => {
    const entry = entries.get(name);
    if (entry) return entry;
    const known = [...entries.keys()].join(', ');
    throw new ToolFailure(
      'NOT_FOUND',
      `There is no MCP server named "${name}".`,
      `Use one of the configured servers: ${known}.`,
    );
  };

  async function approve(entry: Entry, signal?: AbortSignal): Promise<void> {
    if (entry.config.scope !== 'workspace') return;
    const { name, file } = entry.config;
    entry.approved ??= await approveWorkspaceServer(entry.config, options.port, options.trust, signal);
    if (!entry.approved) {
      const how = options.port.howToApprove(name, file);
      set(entry, 'denied', `not approved: it is defined by the workspace (${file}). ${how}`);
      throw new ToolFailure(
        'DENIED_BY_USER',
        `MCP server "${name}" is defined by the workspace (${file}) and was not approved to start, so it did not run: ${describeTransport(entry.config.transport)}`,
        `Do not retry. Tell the user: ${how}`,
      );
    }
  }

  /** What this server's client offers it: the workspace as its root, the host's prompts. */
  function clientHooks(name: string, signal: AbortSignal | undefined): McpClientHooks {
    const port = options.port;
    const folder = options.workspaceFolder;
    return {
      server: name,
      roots: [{ uri: pathToFileURL(folder).href, name: path.basename(folder) }],
      ...(port.elicit ? { elicit: (r, s) => port.elicit!(r, s ?? signal) } : {}),
      ...(port.authorize ? { authorize: (r, s) => port.authorize!(r, s ?? signal) } : {}),
      ...(port.openTokenStore ? { tokenStore: (server, url) => port.openTokenStore!(server, url) } : {}),
      ...(options.log ? { log: options.log } : {}),
    };
  }

  async function connect(entry: Entry, signal?: AbortSignal): Promise<McpConnection> {
    const { name } = entry.config;
    await approve(entry, signal);
    set(entry, 'starting');
    let spec: Awaited<ReturnType<typeof resolveTransport>>;
    try {
      spec = await resolveTransport(entry.config, {
        workspaceFolder: options.workspaceFolder,
        env,
        input: (input) => options.port.resolveInput(input, signal),
      });
    } catch (error) {
      const message = error instanceof McpConfigError ? error.message : String(error);
      set(entry, 'failed', message);
      throw new ToolFailure(
        'UNAVAILABLE',
        message,
        'Tell the user what the configuration needs; do not retry.',
      );
    }
    loads += 1;
    const module = await load();
    let connection: McpConnection;
    try {
      connection = await module.connectMcpServer(spec, {
        startTimeoutMs: entry.config.startTimeoutMs ?? startTimeoutMs,
        ...(signal ? { signal } : {}),
        ...(options.sandbox ? { sandbox: options.sandbox } : {}),
        client: clientHooks(name, signal),
      });
    } catch (error) {
      if (signal?.aborted) {
        set(entry, 'not_started');
        throw new ToolFailure('ABORTED', 'The call was aborted.', 'Wait for the user.');
      }
      const start = error instanceof module.McpStartError ? error : undefined;
      const why = start?.message ?? (error as Error).message;
      set(entry, 'failed', why);
      options.log?.('warn', `MCP server ${name} failed to start: ${why}`);
      throw new ToolFailure(
        start?.timedOut ? 'TIMEOUT' : 'UNAVAILABLE',
        `MCP server "${name}" failed to start (${describeTransport(entry.config.transport)}): ${why}.${tailLines(start?.stderrTail ?? '')}`,
        'Use another approach, or tell the user the server does not start (its configuration is in ' +
          `${entry.config.file}).`,
      );
    }
    if (shutDown) {
      await connection.close();
      throw new ToolFailure('ABORTED', 'The session has ended.', 'Wait for the user.');
    }
    connection.onLost((why) => {
      if (entry.connection !== connection) return;
      delete entry.connection;
      entry.crashes += 1;
      const tail = connection.stderrTail();
      options.log?.('warn', `MCP server ${name} stopped unexpectedly: ${why}`);
      set(entry, 'crashed', `${why}${tailLines(tail, 5)}`);
    });
    entry.connection = connection;
    try {
      options.onConnected?.(entry.config, connection);
    } catch (error) {
      options.log?.('warn', `MCP server ${name}: ${String(error)}`);
    }
    set(entry, 'running');
    return connection;
  }

  async function ensure(name: string, signal?: AbortSignal): Promise<McpConnection> {
    const entry = entryOf(name);
    if (shutDown) throw new ToolFailure('ABORTED', 'The session has ended.', 'Wait for the user.');
    if (entry.connection) return entry.connection;
    if (entry.crashes >= 2) {
      throw new ToolFailure(
        'CIRCUIT_OPEN',
        `MCP server "${name}" crashed twice in this session and is paused (last: ${entry.reason ?? 'unknown'}).`,
        `Do not call "${name}" again; use another approach, or ask the user to restart it (Keel: MCP Servers › Restart).`,
      );
    }
    if (entry.state === 'denied') await approve(entry, signal);
    if (!entry.starting) {
      entry.starting = connect(entry, signal).finally(() => {
        delete entry.starting;
      });
    }
    return entry.starting;
  }

  async function stopEntry(entry: Entry, state: McpServerState): Promise<void> {
    const connection = entry.connection;
    delete entry.connection;
    if (connection) await connection.close();
    if (state !== entry.state) set(entry, state);
  }

  return {
    servers: options.servers,
    get loads() {
      return loads;
    },
    status: () =>
      [...entries.values()].map((e) => ({
        name: e.config.name,
        scope: e.config.scope,
        file: e.config.file,
        commandLine: describeTransport(e.config.transport),
        state: e.state,
        ...(e.connection ? { toolCount: e.connection.tools.length } : {}),
        ...(e.reason !== undefined ? { reason: e.reason } : {}),
      })),
    onDidChange(listener) {
      listeners.add(listener);
      return { dispose: () => listeners.delete(listener) };
    },

    async listTools(names, signal) {
      const wanted = names ?? [...entries.keys()];
      for (const name of wanted) entryOf(name);
      return Promise.all(
        wanted.map(async (server): Promise<McpToolListing> => {
          try {
            return { server, tools: (await ensure(server, signal)).tools };
          } catch (error) {
            if (error instanceof ToolFailure) return { server, error };
            throw error;
          }
        }),
      );
    },

    async call(server, toolName, args, signal, beforeCall, onUpdate) {
      const entry = entryOf(server);
      let connection = await ensure(server, signal);
      const tool = connection.tools.find((t) => t.name === toolName);
      if (!tool) {
        const names = connection.tools.map((t) => t.name);
        throw new ToolFailure(
          'NOT_FOUND',
          `MCP server "${server}" has no tool named "${toolName}".`,
          `Find the right tool with McpSearch {"query": "...", "server": "${server}"}. Its tools: ${names.join(', ')}.`,
        );
      }
      const invalid = connection.validate(tool, args);
      if (invalid !== undefined) {
        throw new ToolFailure(
          'INVALID_PARAM',
          `Arguments for ${server} › ${toolName} do not match its input schema: ${invalid}.`,
          `Fix "arguments" to match the schema McpSearch returned for ${toolName}, then call again.`,
        );
      }
      await beforeCall?.(tool);
      // Approval may take a while: the server may have gone meanwhile.
      connection = await ensure(server, signal);
      const timeoutMs = entry.config.timeoutMs ?? callTimeoutMs;
      onUpdate?.(`calling ${server} › ${toolName}\n`);
      try {
        const onProgress = onUpdate ? (text: string) => onUpdate(`progress ${text}\n`) : undefined;
        return {
          tool,
          result: await connection.callTool(toolName, args, {
            timeoutMs,
            signal,
            ...(onProgress ? { onProgress } : {}),
          }),
        };
      } catch (error) {
        if (signal.aborted) throw new ToolFailure('ABORTED', 'The call was aborted.', 'Wait for the user.');
        const kind = connection.classify(error);
        if (kind === 'timeout') {
          throw new ToolFailure(
            'TIMEOUT',
            `${server} › ${toolName} did not answer within ${Math.round(timeoutMs / 1000)} s; the call was cancelled.`,
            'Retry once with smaller input if that makes sense; otherwise use another approach or tell the user.',
          );
        }
        // Give the close event a moment to land: a dying process closes its pipes just after the reply fails.
        await new Promise((r) => setTimeout(r, 50));
        if (kind === 'closed' || entry.connection !== connection) {
          const why = entry.reason ?? 'the connection closed';
          const paused = entry.crashes >= 2;
          throw new ToolFailure(
            paused ? 'CIRCUIT_OPEN' : 'UNAVAILABLE',
            `MCP server "${server}" crashed while running ${toolName}: ${why}${paused ? '\nIt has crashed twice and is paused for this session.' : ''}`,
            paused
              ? `Do not call "${server}" again; use another approach, or ask the user to restart it.`
              : 'Keel restarts it on the next call (once). Check whether the call had an effect before repeating it.',
          );
        }
        const message = error instanceof Error ? error.message : String(error);
        throw new ToolFailure(
          'UNAVAILABLE',
          `${server} › ${toolName} failed: ${message}`,
          'Check the arguments against the schema, or use another approach.',
        );
      }
    },

    async start(name, signal) {
      await ensure(name, signal);
    },
    async stop(name) {
      await stopEntry(entryOf(name), 'stopped');
    },
    async restart(name, signal) {
      const entry = entryOf(name);
      await stopEntry(entry, 'not_started');
      entry.crashes = 0;
      if (entry.approved === false) delete entry.approved;
      await ensure(name, signal);
    },
    async shutdown() {
      shutDown = true;
      await Promise.all(
        [...entries.values()].map(async (e) => {
          await e.starting?.catch(() => undefined);
          await stopEntry(e, e.state === 'running' ? 'stopped' : e.state);
        }),
      );
    },
  };
}
