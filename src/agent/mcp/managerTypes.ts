import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpPort, SandboxPort } from '../host.ts';
import type { ToolFailure } from '../tools/protocol.ts';
import type { TrustRoom } from '../trust/room.ts';
import type { McpServerConfig } from './config.ts';
import type { McpConnection, McpToolInfo } from './connection.ts';

// The MCP manager's public shape (its implementation is manager.ts).

export type McpServerState =
  | 'not_started'
  | 'starting'
  | 'running'
  | 'failed'
  | 'crashed'
  | 'denied'
  | 'stopped';

export interface McpServerStatus {
  readonly name: string;
  readonly scope: McpServerConfig['scope'];
  readonly file: string;
  readonly commandLine: string;
  readonly state: McpServerState;
  readonly toolCount?: number;
  /** Why it failed / was refused / crashed. */
  readonly reason?: string;
}

export interface McpManagerOptions {
  readonly servers: readonly McpServerConfig[];
  readonly port: McpPort;
  readonly workspaceFolder: string;
  /** The session's OS sandbox: stdio servers run inside it. */
  readonly sandbox?: SandboxPort;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly startTimeoutMs?: number;
  readonly callTimeoutMs?: number;
  /** Loads the connection module; tests may count loads. Default: a dynamic import. */
  readonly loadConnection?: () => Promise<typeof import('./connection.ts')>;
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** A server connected (e.g. to remember its `instructions` for the next session's prompt line). */
  readonly onConnected?: (config: McpServerConfig, connection: McpConnection) => void;
  /**
   * The workspace's trust room: a workspace-defined server whose exact definition the user approved
   * (`keel trust`, or an earlier dialog) starts without asking; an approval given now is kept there.
   */
  readonly trust?: TrustRoom;
}

export interface McpToolListing {
  readonly server: string;
  readonly tools?: readonly McpToolInfo[];
  /** The server could not list its tools (not approved, failed to start, …). */
  readonly error?: ToolFailure;
}

export interface McpCallOutcome {
  readonly tool: McpToolInfo;
  readonly result: CallToolResult;
}

export interface McpManager {
  readonly servers: readonly McpServerConfig[];
  status(): McpServerStatus[];
  onDidChange(listener: () => void): { dispose(): void };
  /** Tools of the named servers (all when omitted), starting them as needed. */
  listTools(servers: readonly string[] | undefined, signal: AbortSignal): Promise<McpToolListing[]>;
  /** Looks the tool up, validates `args` against its schema, calls it. Throws ToolFailure. */
  call(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    beforeCall?: (tool: McpToolInfo) => Promise<void>,
    /** Progress for UIs: "calling", then the server's progress notifications. */
    onUpdate?: (text: string) => void,
  ): Promise<McpCallOutcome>;
  start(server: string, signal?: AbortSignal): Promise<void>;
  stop(server: string): Promise<void>;
  restart(server: string, signal?: AbortSignal): Promise<void>;
  /** Stops every server (the session ends). */
  shutdown(): Promise<void>;
  /** How many times the connection module was loaded (0 until a server first starts). */
  readonly loads: number;
}
