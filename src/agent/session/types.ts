import type { AgentEvent, EventStream, TodoItem } from '../events.ts';
import type { ImageAttachment } from '../context/images.ts';
import type { Host } from '../host.ts';
import type { McpManager } from '../mcp/manager.ts';
import type { JobInfo } from '../jobs/manager.ts';
import type { AgentCatalog } from '../agents/discover.ts';
import type { AgentMessage } from '../messages.ts';
import type { RuleSourceName } from '../projectRules/sources.ts';
import type { Effort } from '../model/models.ts';
import type { ProviderSettings } from '../model/providers/index.ts';
import type { AnyToolDefinition } from '../tools/protocol.ts';

// The API hosts (CLI, VS Code extension) drive. Hosts never reach into the loop.

export interface AgentSessionOptions {
  readonly host: Host;
  /** Model id, e.g. "claude-sonnet-4-5". */
  readonly model: string;
  /** Tried in order after the primary model keeps failing with retryable errors. */
  readonly fallbackModels?: readonly string[];
  /** `openai:`/`azure:`/`ollama:` models: Chat Completions or Responses, keys the host holds. */
  readonly providers?: ProviderSettings;
  /** A model per sub-agent kind (`explore`, `general`, a custom agent's name), e.g. a cheaper one. */
  readonly subagentModels?: Readonly<Record<string, string>>;
  readonly apiKey?: string;
  readonly baseURL?: string;
  readonly maxTurns?: number;
  /** Overrides the model's context window (tokens). */
  readonly contextWindow?: number;
  /** Which prompt-cache breakpoints get the 1 h TTL (default 'all'; see the context engine). */
  readonly cacheTtl?: 'all' | 'stable' | 'none';
  /** Resume this session id from `.keel/sessions/<id>.jsonl`. */
  readonly resumeId?: string;
  /** Only read-only tools (untrusted workspace). */
  readonly readOnly?: boolean;
  /** Max output tokens per model call (default: the model's own output limit, models.ts). */
  readonly maxTokens?: number;
  /** Thinking level for models that think (default 'medium'); 'off' sends no thinking. */
  readonly effort?: Effort | 'off';
  /** Where the bundled skills live (the host knows: repo checkout, or the installed extension). */
  readonly bundledSkillsDir?: string;
  /**
   * When the model ends its turn while background jobs run, wait this long (in all, per run) for
   * their notices and let the model continue (`keel run --job-wait`). Default 0: notices wait for the
   * next prompt.
   */
  readonly jobWaitMs?: number;
  /** User-level skills folder; `null` disables it (tests). Default: ~/.agents/skills. */
  readonly userSkillsDir?: string | null;
  /** User-level memory file; `null` disables it (tests). Default: ~/.keel/MEMORY.md. */
  readonly userMemoryFile?: string | null;
  /** Tools offered only in special sessions (e.g. FeatureDone in a long task); not in the everyday prefix. */
  readonly extraTools?: readonly AnyToolDefinition[];
  /** Wraps every tool (a long task uses it to protect its feature list). */
  readonly wrapTool?: (tool: AnyToolDefinition) => AnyToolDefinition;
  /** Per-prompt checkpoints (default on); `false` turns them off, `budgetBytes` caps their disk use. */
  readonly checkpoints?:
    | false
    | {
        readonly budgetBytes?: number;
        /** `full` rescans the workspace around every command (the bench's baseline). Default `watch`. */
        readonly detector?: 'watch' | 'full';
      };
  /** Read-only calls (Read, Grep, Glob, LS) of one reply run at once, at most (default 4; 1 = one by one). */
  readonly readConcurrency?: number;
  /** Rules-file sources not read (`keel.rules.disabled`, KEEL_RULES_DISABLED): e.g. ['cursor']. */
  readonly rulesDisabled?: readonly RuleSourceName[];
  /**
   * The main agent: a custom agent's name (agent files) or `plan` (plan mode, read-only). Fixed for the
   * session: its prompt and tool list are part of the frozen prefix. Default: Keel's own agent.
   */
  readonly agentName?: string;
  /** The agents (default: discovered in the workspace and the user's folders at session start). */
  readonly agents?: AgentCatalog;
  /** Where user-level agent files are looked for (tests); default `~/.keel/agents`, `~/.claude/agents`. */
  readonly agentDirs?: { readonly userDirs?: readonly string[]; readonly env?: NodeJS.ProcessEnv };
  /** The first todo list (a plan being carried out), in place before the first prompt. */
  readonly initialTodos?: readonly TodoItem[];
}

export type RunStatus = 'finished' | 'failed' | 'aborted' | 'max_turns' | 'stopped';

export interface RunOutcome {
  readonly status: RunStatus;
  readonly finalText: string;
  readonly error?: string;
}

export interface PromptOptions {
  /** Files the user @-mentioned (workspace-relative). */
  readonly mentions?: readonly string[];
  /** Images attached to the message, already checked (context/images.ts checkImages). */
  readonly images?: readonly ImageAttachment[];
  /** A double-send with the same key runs once. */
  readonly idempotencyKey?: string;
  /** The model for this run only (a prompt file's `model`); ignored for a steering message. */
  readonly model?: string;
  /** Tools this run is limited to (a prompt file's `allowed-tools`; narrows, never grants). */
  readonly allowedTools?: readonly string[];
  /** Who set `allowedTools`, for the refusal the model reads. */
  readonly limitBy?: string;
}

export interface AgentSession extends EventStream {
  readonly id: string;
  /** The transcript (append-only). */
  readonly messages: readonly AgentMessage[];
  readonly todos: readonly TodoItem[];
  readonly running: boolean;
  /** The session's model (`setModel` changes it). */
  readonly model: string;
  /** The chat's thinking level for its next runs ('off': no thinking). */
  readonly effort: Effort | 'off';
  /** The panel's effort picker: later runs think at this level (logged, so a resumed session keeps it). */
  setEffort(effort: Effort | 'off'): void;
  /** `/model NAME`: later calls use this model (logged, so a resumed session keeps it). */
  setModel(model: string): void;
  /** `/compact`: summarise the history now (between runs); false when there was nothing to compact. */
  compact(): Promise<boolean>;
  /** The main agent's name when it is not Keel's default one (`plan`, a custom agent). */
  readonly agentName?: string;
  /** Path of the session's JSONL log. */
  readonly logPath: string;
  /** The session's MCP servers, when any are configured (start/stop/state; shut down by dispose). */
  readonly mcp?: McpManager;
  /**
   * Start a run with this prompt, or — while a run is in progress — queue it as a steering message
   * delivered before the next model call (P7). Resolves when the run that handles it ends.
   */
  prompt(text: string, options?: PromptOptions): Promise<RunOutcome>;
  /** Abort the current run: HTTP stream, tools and child processes. */
  abort(reason?: string): void;
  /** Events with seq > `seq` (for webview catch-up). */
  eventsSince(seq: number): AgentEvent[];
  /** Appends a note the model sees at its next turn (e.g. "the user rejected hunk 2 of src/a.ts"). */
  notify(text: string, source: string): void;
  /**
   * After real work (or a compaction): ask the model for durable facts and append them to MEMORY.md.
   * Never throws and never blocks for long; a failure is a notice and loses nothing.
   */
  consolidateMemory(): Promise<void>;
  /** The panel's Undo on a memory change: restores the version before it; the model is told. */
  undoMemoryChange(changeId: string): void;
  /** Background jobs this session started. */
  readonly jobs: readonly JobInfo[];
  /** Stops the session's background jobs (only those of the current run with `currentRunOnly`). */
  stopJobs(currentRunOnly?: boolean): Promise<void>;
  /** Stops one background job (the panel's Stop button); false when no such job runs. */
  stopJob(id: string): Promise<boolean>;
  /** Aborts the run and stops every job. */
  /** Logs a notice for the user and the trace (e.g. the long-task harness reverting a change). */
  notice(level: 'info' | 'warn' | 'error', text: string): void;
  dispose(): void;
}
