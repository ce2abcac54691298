// What a safety check hands back when it says no. The tools layer turns it into a ToolResult
// (`refused()` in tools/protocol.ts); safety itself never imports from tools (one direction).

/** The error codes a safety check can produce — a subset of the tools' closed set. */
export type RefusalCode =
  | 'OUTSIDE_WORKSPACE'
  | 'INVALID_PARAM'
  | 'ACCESS_DENIED'
  | 'CIRCUIT_OPEN'
  | 'SANDBOX_DENIED'
  | 'UNAVAILABLE';

export interface Refusal {
  readonly code: RefusalCode;
  readonly message: string;
  /** What the model should do next; always actionable. */
  readonly suggestion: string;
}
