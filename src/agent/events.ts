import type { AgentMessage, AssistantBlock, AssistantMessage, UserMessage } from './messages.ts';
import type { MemoryChange } from './memory/store.ts';
import type { JobInfo } from './jobs/manager.ts';
import type { ToolResult } from './tools/protocol.ts';

// One discriminated union for everything subscribers (CLI, webview, trace, tests) consume.
// Every event carries the session id, a per-session monotonically increasing `seq` and a timestamp.

export interface ModelCallRecord {
  readonly stage: number;
  readonly message_count: number;
  readonly est_tokens: number;
  readonly prefix_hash: string;
  readonly cache_read: number;
  readonly cache_write: number;
  readonly input: number;
  readonly output: number;
  readonly latency_ms: number;
  readonly ttft_ms: number;
  readonly model: string;
  readonly cost_usd: number;
  readonly context_window: number;
  readonly ok: boolean;
  /** Set on a sub-agent's call (its id): counted in the session's totals, not in its context. */
  readonly agent?: string;
}

export interface TodoItem {
  readonly id: string;
  readonly content: string;
  readonly status: 'pending' | 'in_progress' | 'completed';
}

export type AgentEventBody =
  | {
      type: 'agent_start';
      runId: string;
      prompt: string /** Checkpoint number (`keel restore --before-prompt`). */;
      promptNumber?: number;
    }
  | { type: 'turn_start'; turn: number }
  | { type: 'message_start'; messageId: string; model: string }
  | {
      type: 'message_delta';
      messageId: string;
      blockIndex: number;
      kind: 'text' | 'thinking' | 'tool_input';
      delta: string;
    }
  | { type: 'message_end'; message: AssistantMessage }
  | { type: 'user_message'; message: UserMessage; queued: boolean }
  | { type: 'tool_start'; toolUseId: string; name: string; input: unknown }
  | { type: 'tool_update'; toolUseId: string; text: string }
  | { type: 'tool_end'; toolUseId: string; name: string; result: ToolResult; durationMs: number }
  | { type: 'turn_end'; turn: number; stopReason: string | null }
  | {
      type: 'agent_end';
      runId: string;
      status: 'finished' | 'failed' | 'aborted' | 'max_turns' | 'stopped';
      finalText: string;
      error?: string;
    }
  | { type: 'retry'; attempt: number; delayMs: number; reason: string; model: string }
  | { type: 'model_call'; record: ModelCallRecord }
  /** A partial reply that was thrown away (the stream failed and was retried). Logged, never sent to the model. */
  | { type: 'discarded'; model: string; content: readonly AssistantBlock[]; reason: string }
  | { type: 'todo'; todos: readonly TodoItem[] }
  /** A background job started, ended or was stopped. */
  | { type: 'job'; job: JobInfo }
  /** A Task call started a sub-agent; its own log is `logPath`. */
  | {
      type: 'subagent_start';
      toolUseId: string;
      agentId: string;
      description: string;
      /** `explore`, `general`, or a custom agent's name. */
      mode: string;
      /** The sub-agent's own model when it is not the parent's (a setting per kind, an agent file). */
      model?: string;
      logPath: string;
    }
  /** One of the sub-agent's own tool calls (the panel card and the CLI show them under the Task). */
  | {
      type: 'subagent_tool';
      toolUseId: string;
      agentId: string;
      phase: 'start' | 'end';
      name: string;
      input?: unknown;
      status?: 'success' | 'partial' | 'error';
      errorCode?: string;
    }
  | {
      type: 'subagent_end';
      toolUseId: string;
      agentId: string;
      status: 'finished' | 'failed' | 'aborted' | 'max_turns' | 'stopped';
      turns: number;
      costUsd: number;
    }
  | { type: 'message_appended'; message: AgentMessage }
  | { type: 'notice'; level: 'info' | 'warn' | 'error'; text: string }
  /** MEMORY.md changed (Memory tool, consolidation): on disk now, in the prompt from the next session. */
  | { type: 'memory_changed'; change: MemoryChange }
  /** Plan mode ended with a plan: its text, its steps, and the file it was written to (to edit, then start). */
  | { type: 'plan'; text: string; steps: readonly string[]; file?: string }
  /** The session's model changed (`/model`): later calls use it; a resumed session keeps it. */
  | { type: 'model_switch'; model: string }
  /** The chat's thinking level changed (the panel's effort picker): later turns use it; a resumed session keeps it. */
  | { type: 'effort_change'; effort: 'low' | 'medium' | 'high' | 'max' | 'off' }
  /**
   * The session was driven past its compactions (or could not be brought under the window) and goes on
   * as a new session seeded with a handoff (seed 002 P4). The last event of the old log; the new log's
   * header names the old one (`continuedFrom`). Later events carry the new session id.
   */
  | {
      type: 'session_reset';
      oldSessionId: string;
      newSessionId: string;
      reason: string;
      compactions: number;
      /** The new session's log. */
      logPath: string;
    }
  /** `--approve auto`: the classifier's verdict on a command (allowed, or escalated to a person). */
  | {
      type: 'auto_classifier';
      toolUseId: string;
      command: string;
      decision: 'allow' | 'escalate';
      reason: string;
      model: string;
      latencyMs: number;
      failure?: 'malformed' | 'error' | 'timeout' | 'unavailable';
      costUsd?: number;
    }
  | { type: 'error'; code: string; message: string };

export type AgentEvent = AgentEventBody & {
  readonly sessionId: string;
  readonly seq: number;
  readonly ts: number;
};
export type AgentEventType = AgentEvent['type'];

export type Listener = (event: AgentEvent) => void;

/** Minimal typed emitter (VS Code style: subscribe returns a disposer). */
export interface EventStream {
  subscribe(listener: Listener): { dispose(): void };
}
