import type Anthropic from '@anthropic-ai/sdk';
import type { TodoItem } from '../events.ts';
import type { AgentMessage } from '../messages.ts';
import type { AntiDriftOptions } from './antiDrift.ts';
import type { SkillEntry, SkillIndex } from '../skills/discover.ts';
import type { CacheTtlPolicy } from './breakpoints.ts';
import type { PruneConfig } from './pruning.ts';
import type { RecapConfig } from './recap.ts';
import type { InContextSummarizeRequest } from './summarizeRequest.ts';
import type { McpServerLine, WorkspaceRootLine } from './systemPrompt.ts';

// The context engine's contract (engine.ts builds it): what it is given, what a prepared request
// holds, and the stage thresholds and cache lifetimes it decides with.

export interface PreparedRequest {
  readonly system: Anthropic.TextBlockParam[];
  readonly tools: Anthropic.Tool[];
  readonly messages: Anthropic.MessageParam[];
  /** Highest pruning stage APPLIED while preparing this call (0 = none; 3 = compaction). */
  readonly stage: number;
  /** Estimated prompt tokens (calibrated against the last call's real usage when known). */
  readonly estTokens: number;
  /**
   * sha256 of the canonical tools + system of THIS request, as sent (cache markers aside): equal on
   * every call of a session when P1 holds; `prefix_stability_ratio` compares it between calls.
   */
  readonly prefixHash: string;
  /** estTokens / contextWindow. */
  readonly utilization: number;
}

export interface StageThresholds {
  readonly softTrim: number;
  readonly hardClear: number;
  readonly compact: number;
  /** At or above this, stages run even while the prompt cache is warm. */
  readonly emergency: number;
}

export const DEFAULT_THRESHOLDS: StageThresholds = {
  softTrim: 0.3,
  hardClear: 0.5,
  compact: 0.7,
  emergency: 0.95,
};
export const DEFAULT_CACHE_TTL_MS = 5 * 60_000;
export const LONG_CACHE_TTL_MS = 60 * 60_000;
export const MAX_OVERFLOW_RETRIES = 3;

export interface ContextEngineOptions {
  /** Tool definitions for the API, already built from zod schemas. Frozen for the session. */
  readonly tools: readonly Anthropic.Tool[];
  readonly contextWindow: number;
  /** Project rules (AGENTS.md) read once at session start. */
  readonly projectRules?: string;
  /** The rendered rules section (every rules file, src/agent/projectRules/); wins over `projectRules`. */
  readonly rulesText?: string;
  /** Memory snapshot (MEMORY.md files) rendered once at session start. */
  readonly memory?: string;
  /** The main agent's own prompt (a custom agent, plan mode), last in the frozen system prompt. */
  readonly agentPrompt?: string;
  /** A complete system prompt instead of Keel's own (a sub-agent's minimal prompt). */
  readonly systemText?: string;
  /** Called for a compaction summary (a separate model call without tools). */
  readonly summarize?: (prompt: string, signal: AbortSignal) => Promise<string>;
  /**
   * Preferred way to get a compaction summary: send this request (the conversation as already cached,
   * plus the instruction at the end) as it is and return the reply's text. An error or an empty text
   * falls back to `summarize`; so does a request that would not fit the window.
   */
  readonly summarizeInContext?: (request: InContextSummarizeRequest, signal: AbortSignal) => Promise<string>;
  /** Configured MCP servers (one line each in the system prompt). */
  readonly mcpServers?: readonly McpServerLine[];
  /** Workspace folders listed in the system prompt (only when several; fixed at session start, P1). */
  readonly workspaceRoots?: readonly WorkspaceRootLine[];
  /** Skill snapshot taken at session start (index goes into the system prompt). */
  readonly skills?: SkillIndex | readonly SkillEntry[];
  readonly workspaceRoot?: string;
  /** Keel's state dir (archives go to `<stateDir>/archive/`). Default `<workspaceRoot>/.keel`. */
  readonly stateDir?: string;
  readonly sessionId?: string;
  /** How archives are written (the host's StoragePort.writeText); default: plain fs. */
  readonly writeText?: (absolutePath: string, text: string) => void;
  /** Current todo list (the session's); default: parsed from the last TodoWrite in the transcript. */
  readonly getTodos?: () => readonly TodoItem[];
  /** How long the cache of the previous request's end lives (cold-cache decisions); default from the policy. */
  readonly cacheTtlMs?: number;
  /**
   * Which breakpoints carry the 1 h TTL: 'all' (default; the cache survives an idle gap of up to an
   * hour, and the stages wait that long), 'stable' (system, anchor, summary; the moving ends 5 min),
   * 'none'. `true` = 'all', `false` = 'none'.
   */
  readonly longCacheTtl?: boolean | CacheTtlPolicy;
  readonly thresholds?: Partial<StageThresholds>;
  readonly prune?: Partial<PruneConfig>;
  readonly recap?: Partial<RecapConfig>;
  /**
   * The runtime layer and the periodic restatement (antiDrift.ts), appended as reminders after the
   * last cache breakpoint of the call that first shows them. Absent: neither (sub-agents, tests).
   */
  readonly antiDrift?: AntiDriftOptions;
  /** Share of the window the kept tail may use after a compaction. */
  readonly compactTailFraction?: number;
  readonly newId?: () => string;
}

export interface PrepareArgs {
  readonly transcript: readonly AgentMessage[];
  readonly now: number;
  /** When the previous model call finished (for cache-TTL decisions). */
  readonly lastCallAt?: number;
  /** Set after a "prompt is too long" error: compaction must happen now. */
  readonly overflow?: boolean;
  readonly signal: AbortSignal;
  /** Runtime notes for this call only: placed after the last cache breakpoint, never persisted. */
  readonly volatileTail?: readonly string[];
}

export interface ContextEngine {
  /** Builds the next request; may return messages to append first (context edits, summaries). */
  prepare(args: PrepareArgs): Promise<{ request: PreparedRequest; appended: AgentMessage[] }>;
  /** Reminders to append after a batch of tool results (recap, skill reminders). */
  afterTools(transcript: readonly AgentMessage[]): AgentMessage[];
  /** The frozen system prompt text (for tests, `keel` diagnostics and the fixed-prefix budget). */
  readonly systemText: string;
  /** Hash of the frozen tools + system as built at session start (every request's should equal it). */
  readonly prefixHash: string;
  /**
   * Whether the full guide of a skill (an unpruned `Skill` result) is in the context the last
   * prepared request showed the model: the Skill tool answers a re-ask with a reminder only then.
   */
  skillInContext(name: string): boolean;
}
