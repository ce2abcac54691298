import type { ApprovalMessage } from './approvalMessage.ts';
import type { OAuthStore as McpTokenStore } from './mcp/oauthStore.ts';
import type { TrustRoom } from './trust/room.ts';

// The ports the agent core needs from whatever hosts it (the CLI, the VS Code extension, tests).
// The core never imports 'vscode': a host implements these interfaces and passes them in.

export interface FileStat {
  readonly type: 'file' | 'directory' | 'other';
  readonly size: number;
  readonly mtimeMs: number;
  /** POSIX permission bits, when the host knows them. */
  readonly mode?: number;
}

export interface DirEntry {
  readonly name: string;
  readonly type: 'file' | 'directory' | 'symlink' | 'other';
}

/**
 * The user's files. Paths are absolute and have already passed the path guard.
 * A host may serve reads from a richer source than the disk (VS Code: an open, possibly dirty,
 * TextDocument) — whatever the user would call "the file's current content".
 */
export interface WorkspacePort {
  /** Absolute, symlink-resolved workspace folder roots. The first is the primary one. */
  readonly roots: readonly string[];
  readFile(path: string, signal?: AbortSignal): Promise<Uint8Array>;
  stat(path: string): Promise<FileStat | undefined>;
  readDirectory(path: string): Promise<DirEntry[]>;
  /** Atomically replace or create a file (temp + rename on disk). `mode` is kept when given. */
  writeFile(path: string, content: Uint8Array, options?: { mode?: number }): Promise<void>;
  deleteFile(path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** Is the workspace trusted? Untrusted workspaces get read-only tools only. */
  isTrusted(): boolean;
}

export type ApprovalKind =
  | 'command'
  | 'network'
  | 'destructive'
  | 'delete'
  | 'protected_write'
  | 'mcp'
  | 'other';
export type ApprovalRisk = 'low' | 'medium' | 'high';
export type ApprovalDecision = 'allow_once' | 'allow_session' | 'deny';

export interface ApprovalRequest {
  readonly kind: ApprovalKind;
  /** One line: what will happen ("Run command", "Delete file"). */
  readonly title: string;
  /** The exact command or path, and why it needs approval. */
  readonly detail: string;
  readonly risk: ApprovalRisk;
  /** Stable key used for "allow for this session" (e.g. the command class + program). */
  readonly sessionKey?: string;
  /**
   * One occasion only: no "allow for this session" is offered and none applies (running a command
   * outside the OS sandbox). Hosts show just "allow once" and "deny".
   */
  readonly once?: boolean;
  /**
   * The same question in a structured form (approvalMessage.ts), for a host that shows it in the
   * user's language; `title` and `detail` stay the English text (the CLI's, the audit log's).
   */
  readonly message?: ApprovalMessage;
  /** Asked on behalf of this sub-agent (its description); `title` already names it. */
  readonly subagent?: string;
}

export interface ApprovalsPort {
  ask(request: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalDecision>;
  /**
   * Set when nobody can be asked (CLI without a terminal, `--approve never|safe`): every request is
   * refused by policy. Says why and how to allow, so a refusal never reads "the user declined".
   */
  readonly unattended?: string;
  /**
   * `--approve auto`: a command the policy asks about is first decided by its effect class
   * (safety/autoMode.ts): routine ones run, never-class ones are refused, the rest go to the
   * classifier (safety/autoClassifier.ts), whose escalations come to `ask`.
   */
  readonly auto?: boolean;
  /** The auto classifier's model (`--classifier-model`); absent: the session's model. */
  readonly classifierModel?: string;
}

export interface ShellRunOptions {
  readonly command: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Streaming output, for UIs (the chat card). */
  readonly onOutput?: (chunk: string, stream: 'stdout' | 'stderr') => void;
  /**
   * Confinement when the shell has a sandbox: 'on' (default), 'network' (sandboxed, with the
   * network), 'off' (unconfined: only after the user approved exactly that).
   */
  readonly sandbox?: 'on' | 'network' | 'off';
  /** Written to the command's stdin, then closed (a hook's JSON input). Absent: stdin is /dev/null. */
  readonly stdin?: string;
  /** Sandboxed: these folders are writable instead of the workspace roots (a writer sub-agent's tree). */
  readonly writableRoots?: readonly string[];
}

export interface ShellRunResult {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  readonly durationMs: number;
  /** Ran inside the OS sandbox. */
  readonly sandboxed?: boolean;
  /** What the sandbox refused, as far as Keel can tell (its stderr patterns, its deny lists). */
  readonly denials?: readonly SandboxDenial[];
}

/** One thing the OS sandbox refused. */
export interface SandboxDenial {
  readonly kind: 'write' | 'read' | 'network' | 'socket';
  /** The path, host:port or socket that was refused ('' when the output does not say). */
  readonly target: string;
  readonly detail?: string;
}

/** The tier probed at session start, shown to the user (status bar, panel header, CLI stderr). */
export interface SandboxInfo {
  readonly tier: 'bwrap' | 'none';
  readonly summary: string;
  readonly reason?: string;
  readonly fix?: string;
  /** Commands are refused outright when no sandbox is available (keel.sandbox.failIfUnavailable). */
  readonly failIfUnavailable?: boolean;
}

/** An argv rewritten to run inside the session's sandbox; spawn `file` with `args`. */
export interface SandboxedArgv {
  readonly file: string;
  readonly args: readonly string[];
  /** Open descriptors to pass as stdio[3], stdio[4], … (the seccomp program). */
  readonly fds: readonly number[];
  /** Variables to add to the child's environment (TMPDIR → the session temp dir). */
  readonly env: Readonly<Record<string, string>>;
  /** Close the descriptors: call right after spawn. */
  release(): void;
  /**
   * After the process exited: refusals seen on disk — what the command left at paths host tools act
   * on later (a new `.npmrc`, `.vscode/tasks.json`, a hook in a `.git` made meanwhile), now undone.
   */
  settle(outcome?: { readonly failed: boolean }): SandboxDenial[];
  /** The on-disk part of settle(), safe to call while the process still runs (long jobs). */
  sweep?(): SandboxDenial[];
}

export interface SandboxPort {
  readonly info: SandboxInfo;
  /**
   * `argv` confined to the session's sandbox, for anything that spawns a process (background jobs,
   * verify commands, MCP stdio servers); undefined when there is no sandbox (tier none). Spawn it
   * detached (its own session, no terminal), pass `fds` as stdio[3…], call release() after spawn.
   */
  wrap(
    argv: readonly string[],
    options: {
      cwd: string;
      network?: boolean /** Extra writable folders (an MCP server's npm cache). */;
      writable?: readonly string[];
      /** Writable instead of the workspace roots (a writer sub-agent's tree). */
      roots?: readonly string[];
    },
  ): SandboxedArgv | undefined;
  /** Refusals visible in a finished command's output (stderr patterns + the deny lists). */
  explain(output: {
    stdout: string;
    stderr: string;
    command: string;
    cwd: string;
    network?: boolean;
  }): SandboxDenial[];
}

export interface ShellPort {
  /** Runs `command` under a POSIX shell; abort/timeout kill the whole process tree. */
  run(options: ShellRunOptions): Promise<ShellRunResult>;
  /** The session's OS sandbox, when the host has one (see SandboxPort.info for its tier). */
  readonly sandbox?: SandboxPort;
}

export interface ClockPort {
  now(): number;
}

/** Append-only storage for Keel's own state (session logs, traces, audit). Paths are absolute. */
export interface StoragePort {
  /**
   * Appends one line with a synchronous write: once this returns, the line survives the process
   * dying (kill -9). Durability against power loss is `sync`'s job.
   */
  appendLine(path: string, line: string): void;
  /** fsync the file (cheap to call often: a host may rate-limit it). */
  sync?(path: string): void;
  readText(path: string): string | undefined;
  writeText(path: string, text: string): void;
  list(dir: string): string[];
}

export interface Host {
  /**
   * What this workspace may steer (src/agent/trust/): made by the host, which knows VS Code's workspace
   * trust and how its user approves. Absent: the session makes one (repository items unapproved).
   */
  readonly trust?: TrustRoom;
  readonly workspace: WorkspacePort;
  readonly approvals: ApprovalsPort;
  readonly shell: ShellPort;
  readonly clock: ClockPort;
  readonly storage: StoragePort;
  /** `<primary root>/.keel` — Keel's own state directory. */
  readonly stateDir: string;
  /** Where ripgrep lives (the host may prefer a bundled one). Undefined = not available. */
  readonly ripgrepPath?: string;
  readonly log?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
  /** MCP servers (src/agent/mcp/). Absent = the host offers none. */
  readonly mcp?: McpPort;
  /** What the language servers say about files Keel edits. Absent = none (the CLI). */
  readonly diagnostics?: DiagnosticsPort;
}

/** One diagnostic as the core sees it: positions are 1-based, only errors and warnings. */
export interface Problem {
  readonly line: number;
  readonly column: number;
  readonly severity: 'error' | 'warning';
  readonly message: string;
  /** Who reported it ("ts", "eslint"), and its code, when the language server says. */
  readonly source?: string;
  readonly code?: string;
}

/**
 * Diagnostics around one edit: `begin` right before the write (the baseline, and listening starts so
 * the language servers' answer to the write is not missed), `settle` after it. The edit tools turn
 * the difference into "new problems introduced" in their result; the prefix never sees any of it.
 */
export interface DiagnosticsPort {
  begin(path: string): DiagnosticsWatch;
}

export interface DiagnosticsWatch {
  /** The file's problems just before the write. */
  readonly baseline: readonly Problem[];
  /**
   * After the write: waits a short, bounded time for the file's diagnostics to settle and returns
   * them (whatever is known at the deadline, or at once when `signal` aborts). Disposes the watch.
   */
  settle(signal: AbortSignal): Promise<readonly Problem[]>;
  /** The write failed: stop listening. */
  dispose(): void;
}

/** A workspace-defined MCP server asks to start: the exact command line (or URL) it would run. */
export interface McpServerApprovalRequest {
  readonly server: string;
  /** The config file that defines it. */
  readonly file: string;
  readonly commandLine: string;
  /** Everything starting it grants, one line each: the command, the variables and secrets it gets. */
  readonly grants: readonly string[];
  /** sha256 of the definition: a decision is remembered per workspace + this hash. */
  readonly hash: string;
}

export type { McpTokenStore };

export interface McpPort {
  /** Config files the user named (CLI `--mcp-config`): their servers count as approved. */
  readonly namedConfigFiles?: readonly string[];
  /** User-level config (default ~/.keel/mcp.json); null = none (tests). */
  readonly userConfigFile?: string | null;
  /** Calls of tools the server annotates `readOnlyHint: true` run without asking (a user setting). */
  allowReadOnlyCalls(): boolean;
  /**
   * May this workspace-defined server start, when the trust room has no approval of its exact
   * definition? VS Code: a modal naming what it grants (the answer is kept in the trust room); CLI:
   * no (the user approves with `keel trust`). Never called in an untrusted workspace.
   */
  approveServer(request: McpServerApprovalRequest, signal?: AbortSignal): Promise<boolean>;
  /** The value of `${input:id}` (VS Code: prompt once, kept in SecretStorage; CLI: an env variable). */
  resolveInput(
    input: { readonly id: string; readonly description?: string; readonly password?: boolean },
    signal?: AbortSignal,
  ): Promise<string | undefined>;
  /** How to allow a refused workspace server, in this host's words (said to the model and the user). */
  readonly howToApprove: (server: string, file: string) => string;
  /**
   * A server asks the user for input (MCP elicitation, form mode). Absent = declined. The answer
   * goes to the server only: it never approves anything in Keel (a tool call, a command, a server).
   */
  elicit?(request: McpElicitationRequest, signal?: AbortSignal): Promise<McpElicitationAnswer>;
  /**
   * An HTTP server needs the user to sign in (OAuth): may Keel open this authorization URL? The host
   * asks (or not: no terminal, --approve never) and opens it only after consent; false = no human to
   * sign in now, and the connection fails saying so. Absent = the same as false.
   */
  authorize?(request: McpAuthorizationRequest, signal?: AbortSignal): Promise<boolean>;
  /**
   * Where a server's OAuth client registration and tokens are kept (VS Code: SecretStorage). Absent =
   * the CLI's 0600 file under `<keelHome>/mcp-oauth/`. Keyed by the server URL.
   */
  openTokenStore?(server: string, url: string): Promise<McpTokenStore>;
}

/** An `elicitation/create` request, as the user should see it. */
export interface McpElicitationRequest {
  readonly server: string;
  readonly message: string;
  /** A flat JSON object schema (MCP restricts it to primitive properties). */
  readonly requestedSchema: Readonly<Record<string, unknown>>;
}

export type McpElicitationAnswer =
  | { readonly action: 'accept'; readonly content: Record<string, string | number | boolean | string[]> }
  | { readonly action: 'decline' }
  | { readonly action: 'cancel' };

export interface McpAuthorizationRequest {
  readonly server: string;
  /** The MCP server's URL. */
  readonly url: string;
  /** Where the user signs in (the authorization server's page, with PKCE and our loopback redirect). */
  readonly authorizationUrl: string;
}
