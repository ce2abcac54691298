import type { z } from 'zod';
import type { ImageBudget } from '../context/imageBudget.ts';
import type { ImageAttachment } from '../context/images.ts';
import type { Host } from '../host.ts';
import type { JobManager } from '../jobs/manager.ts';
import type { AuditEntry } from '../safety/audit.ts';
import type { AutoClassifier } from '../safety/autoClassifier.ts';
import type { ReadLedger } from '../safety/guards/readLedger.ts';
import type { PathGuard } from '../safety/paths/pathGuard.ts';
import type { Refusal } from '../safety/refusal.ts';

/** The closed set of error codes a tool may return (DESIGN.md §3). */
export const ERROR_CODES = [
  'NOT_FOUND',
  'INVALID_PARAM',
  'ACCESS_DENIED',
  'OUTSIDE_WORKSPACE',
  'NOT_READ',
  'CONFLICT',
  'NO_MATCH',
  'AMBIGUOUS_MATCH',
  'TIMEOUT',
  'DENIED_BY_USER',
  'BLOCKED_BY_POLICY',
  'LOOP_DETECTED',
  'CIRCUIT_OPEN',
  'BINARY_FILE',
  'TOO_LARGE',
  'SANDBOX_DENIED',
  'UNAVAILABLE',
  'ABORTED',
  'INTERNAL',
  'TOOL_ERROR',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ToolError {
  readonly code: ErrorCode;
  readonly message: string;
  /** What the model should do next; always actionable. */
  readonly suggestion: string;
}

export type ToolStatus = 'success' | 'partial' | 'error';

export interface ToolStats {
  time_ms: number;
  [key: string]: number;
}

export interface ToolResult<D = unknown> {
  readonly status: ToolStatus;
  readonly data: D;
  /** What the model reads (before deterministic rendering adds status/error framing). */
  readonly text: string;
  readonly error?: ToolError;
  readonly stats: ToolStats;
  /** For UIs only (never sent to the model): e.g. a unified diff, the first changed line. */
  readonly ui?: Readonly<Record<string, unknown>>;
  /**
   * Images the model sees after the text (Read of a PNG): the loop moves them to the tool-result
   * message (messages.ts), so events and the log carry each image's bytes once.
   */
  readonly images?: readonly ImageAttachment[];
}

// Defined by safety (tools → safety, never back); re-exported because every tool uses them.
export type { AuditEntry } from '../safety/audit.ts';
export type { ReadLedger } from '../safety/guards/readLedger.ts';

export interface ToolContext {
  readonly host: Host;
  readonly sessionId: string;
  readonly toolUseId: string;
  readonly signal: AbortSignal;
  readonly ledger: ReadLedger;
  /** Resolve every user-supplied path through this before any I/O. */
  readonly guard: PathGuard;
  /** Appends to `.keel/audit.jsonl`. */
  audit(entry: AuditEntry): void;
  /** Streams progress to subscribers (tool_update events), e.g. command output. */
  update(text: string): void;
  /** The session's background jobs (absent where jobs cannot outlive the call, e.g. `keel tool`). */
  readonly jobs?: JobManager;
  /** The run this call belongs to (Stop ends the jobs it started). */
  readonly runId?: string;
  /** Starts a sub-agent (absent inside a sub-agent: depth limit 1). */
  readonly subagents?: SubagentPort;
  /** `--approve auto`: the classifier for what the effect classes leave to a person (absent: asked). */
  readonly autoClassifier?: AutoClassifier;
  /** The model of this call takes image blocks (absent: it does, e.g. `keel tool`, which prints text). */
  readonly acceptsImages?: boolean;
  /** The API's per-request image limits over this conversation (absent: no conversation, `keel tool`). */
  readonly images?: ImageBudget;
}

export interface SubagentRequest {
  readonly description: string;
  readonly prompt: string;
  /** `explore`, `general`, or the name of a custom agent (agent files). */
  readonly mode: string;
  /** A short name other Task calls can wait for (`after`). */
  readonly id?: string;
  /** Ids of Task calls that must finish (and merge) before this one starts. */
  readonly after?: readonly string[];
}

export interface SubagentPort {
  run(request: SubagentRequest, context: ToolContext): Promise<ToolResult>;
}

export interface ToolDefinition<I = unknown, D = unknown> {
  readonly name: string;
  /** When to use, when NOT to use, 1-3 short examples. Frozen per session (P1). */
  readonly description: string;
  readonly inputSchema: z.ZodType<I>;
  /** Read-only tools are the only ones offered in an untrusted workspace. */
  readonly readOnly: boolean;
  /** The circuit breaker's key for this call (default: the tool name), e.g. one per MCP server. */
  circuitKey?(input: I): string;
  /** Consecutive calls of this tool in one reply may run at the same time (Task). */
  readonly concurrent?: boolean;
  /**
   * Only reads (asks nothing, writes nothing): consecutive such calls in one reply run a few at a
   * time and are committed in call order, as if run one by one (Read, Grep, Glob, LS).
   */
  readonly concurrentRead?: boolean;
  execute(input: I, context: ToolContext): Promise<ToolResult<D>>;
}

export type AnyToolDefinition = ToolDefinition<never, unknown>;

// ---------- result constructors ----------

export function ok<D>(
  data: D,
  text: string,
  stats: Partial<ToolStats> = {},
  ui?: ToolResult['ui'],
): ToolResult<D> {
  return {
    status: 'success',
    data,
    text,
    stats: { time_ms: 0, ...stats } as ToolStats,
    ...(ui ? { ui } : {}),
  };
}

export function partial<D>(
  data: D,
  text: string,
  stats: Partial<ToolStats> = {},
  ui?: ToolResult['ui'],
): ToolResult<D> {
  return {
    status: 'partial',
    data,
    text,
    stats: { time_ms: 0, ...stats } as ToolStats,
    ...(ui ? { ui } : {}),
  };
}

export function fail(code: ErrorCode, message: string, suggestion: string, data: unknown = null): ToolResult {
  return {
    status: 'error',
    data,
    text: message,
    error: { code, message, suggestion },
    stats: { time_ms: 0 },
  };
}

/** A safety check's refusal as a tool result. */
export function refused(refusal: Refusal, data: unknown = null): ToolResult {
  return fail(refusal.code, refusal.message, refusal.suggestion, data);
}

/** Thrown inside tools to end with a structured error; the registry turns it into a ToolResult. */
export class ToolFailure extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly suggestion: string,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/**
 * Deterministic rendering of a result into the text the model sees (P1: same result, same bytes).
 */
export function renderForModel(result: ToolResult): string {
  if (result.status === 'error' && result.error) {
    return `Error [${result.error.code}]: ${result.error.message}\nSuggestion: ${result.error.suggestion}`;
  }
  return result.text;
}
