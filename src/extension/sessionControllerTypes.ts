import type * as vscode from 'vscode';
import type { AgentEvent } from '../agent/events.ts';
import type { Host } from '../agent/host.ts';
import type { AgentSession, RunOutcome } from '../agent/session/types.ts';
import type { KeelSettings } from './settings.ts';
import type { ExtensionTelemetry } from './telemetry.ts';
import type { Usage } from './usage.ts';

// The session controller's contract (sessionController.ts implements it): what the chat view,
// the status bar and the commands may ask of the current session, and what the controller needs.

export interface SessionListItem {
  readonly id: string;
  readonly title: string;
  readonly updatedAt: number;
  readonly messageCount: number;
}

export type ControllerEvent =
  | { readonly type: 'event'; readonly event: AgentEvent }
  | { readonly type: 'switched' }
  | { readonly type: 'usage'; readonly usage: Usage };

export interface SubmitResult {
  readonly ok: boolean;
  readonly error?: string;
  readonly code?: string;
  readonly suggestion?: string;
  readonly outcome?: Promise<RunOutcome>;
  /** A built-in slash command's answer (`/cost`, `/model`…), shown to the user; nothing was sent. */
  readonly info?: string;
  /** Something the user should know about a message that was sent (e.g. which model answers it). */
  readonly notice?: string;
}

export interface SessionController extends vscode.Disposable {
  readonly onDidChange: vscode.Event<ControllerEvent>;
  /** The session if one exists (never creates one). */
  readonly current: AgentSession | undefined;
  readonly usage: Usage;
  readonly model: string;
  readonly contextWindow: number;
  /** Creates the session on first use. */
  ensure(): Promise<AgentSession>;
  submit(
    text: string,
    options?: { mentions?: readonly string[]; idempotencyKey?: string },
  ): Promise<SubmitResult>;
  /** Aborts the current run: the session's own signal, and `runSignal` (pending proposals). */
  stop(): void;
  /** Stops one background job of the current session (the panel's job list). */
  stopJob(id: string): void;
  /**
   * Aborted when the current run is stopped or cut (Stop, new chat, another session, shutdown). Host
   * operations the core cannot cancel itself (a proposal waiting for the user) listen to it.
   */
  readonly runSignal: AbortSignal;
  newChat(): void;
  /** The mode picker: the main agent of the next chat (`plan`, a custom agent; undefined = Keel's own). */
  readonly mode: string | undefined;
  setMode(mode: string | undefined): void;
  /** A plan card's Start: a new chat with the default agent, the plan's steps as its first todo list. */
  startPlan(text: string): Promise<SubmitResult>;
  open(id: string): Promise<void>;
  /**
   * After a window reload: reopen `preferred` (the webview's session) or the last session of this
   * workspace from its log. Resolves true when a session was reopened.
   */
  restore(preferred?: string): Promise<boolean>;
  list(): Promise<SessionListItem[]>;
  notify(text: string, source: string): void;
  /**
   * The window is going away: abort a running run and wait (at most `timeoutMs`) until the session
   * has logged its end, so the log does not stop in the middle of a run.
   */
  shutdown(timeoutMs: number): Promise<void>;
  /**
   * Does ahead of the first prompt what every first prompt needs and nothing a user would see: loads
   * the core (SDK, tools) and runs one canned model call on loopback (model/warmUp.ts). No session, no
   * log file, no host (it reads the settings of the moment it is made), nothing sent off the machine.
   * Idempotent; a prompt sent meanwhile only waits for the core to load.
   */
  warmUp(): Promise<void>;
}

export interface SessionControllerOptions {
  readonly host: () => Host;
  readonly settings: () => KeelSettings;
  readonly apiKey: () => Promise<string | undefined>;
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
  /** Remembers the current session id across window reloads (workspaceState). */
  readonly memento?: vscode.Memento;
  /** The bundled skills folder inside the installed extension. */
  readonly bundledSkillsDir?: string;
  /** OpenTelemetry export of each session's events, when configured. */
  readonly telemetry?: ExtensionTelemetry;
  /** Runs before a session is made (the workspace-trust modal for what the repository supplies). */
  readonly beforeCreate?: () => Promise<unknown>;
}
