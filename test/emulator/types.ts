import { z } from 'zod';

// The request schema is deliberately loose (unknown fields pass through, as the API tolerates many
// optional parameters); the rules the real API enforces beyond shape live in validate.ts.
export const ContentBlockInSchema = z.looseObject({ type: z.string() });
export const MessageInSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(ContentBlockInSchema)]),
});
export const ToolInSchema = z.looseObject({ name: z.string(), type: z.string().optional() });
export const MessagesRequestSchema = z.looseObject({
  model: z.string(),
  max_tokens: z.number().int().min(1),
  messages: z.array(MessageInSchema),
  system: z.union([z.string(), z.array(ContentBlockInSchema)]).optional(),
  tools: z.array(ToolInSchema).optional(),
  stream: z.boolean().optional(),
  stop_sequences: z.array(z.string()).optional(),
  thinking: z.looseObject({ type: z.string(), budget_tokens: z.number().optional() }).optional(),
  output_config: z.looseObject({ effort: z.string().nullable().optional() }).optional(),
});

export type ContentBlockIn = z.infer<typeof ContentBlockInSchema>;
export type MessageIn = z.infer<typeof MessageInSchema>;
export type ToolIn = z.infer<typeof ToolInSchema>;
/** Typed view of a /v1/messages request body that passed validation. */
export type MessagesRequest = z.infer<typeof MessagesRequestSchema>;

export type ScriptedBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string }
  /** Thinking the safety systems redacted: `hidden` is what it stands for (only its signed token is sent). */
  | { type: 'redacted_thinking'; hidden: string }
  | { type: 'tool_use'; name: string; input: unknown; id?: string };

export type Fault =
  | { type: 'overloaded' }
  | { type: 'rate_limit'; retryAfterSeconds?: number }
  | { type: 'server_error'; status?: 500 | 502 | 503 | 504 }
  | { type: 'mid_stream_error'; afterEvents?: number }
  | { type: 'cut_stream'; afterEvents?: number }
  | { type: 'invalid_tool_json' }
  | { type: 'prompt_too_long' }
  | { type: 'slow'; delayMs: number; perChunkDelayMs?: number };

export interface ReplyExpectation {
  /** The text of the last user message (text blocks and tool_result contents) contains this. */
  lastUserContains?: string;
  /** Some tool_result in the last user message contains this. */
  toolResultContains?: string;
  /** Every tool_result in the last user message has this is_error (absent counts as false). */
  toolResultIsError?: boolean;
}

export interface ScriptedReply {
  content?: ScriptedBlock[];
  stop_reason?: 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence';
  expect?: ReplyExpectation;
  fault?: Fault;
  model?: string;
}

export type Scenario =
  | {
      name?: string;
      replies: ScriptedReply[];
      onExhausted?: 'error' | 'repeat_last' | 'echo';
      /** Conversations told apart by their first user message (sub-agents), each with its own replies. */
      threads?: { firstUserContains: string; replies: ScriptedReply[] }[];
    }
  | { name?: string; respond: (req: MessagesRequest, index: number) => ScriptedReply };

export interface UsageOut {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  service_tier: 'standard';
}

export interface RecordedRequest {
  /** The parsed JSON body (or the raw text when it was not JSON). */
  body: unknown;
  /** The body exactly as received (UTF-8 text): byte-level checks of what a client sends. */
  raw?: string;
  /** Typed view of `body`, present when the request passed validation. */
  request?: MessagesRequest;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The request path (Bedrock and Vertex carry the model there). */
  path?: string;
  /** HTTP status sent (0 while the response has not started). */
  status: number;
  usage?: UsageOut;
  requestId: string;
  /** Additions beyond the lead's contract (backwards-compatible): observability for fault tests. */
  stream?: boolean;
  error?: { type: string; message: string };
  fault?: Fault['type'];
  /** SSE events written so far (streaming only). */
  eventsWritten?: number;
  /** The client went away before the response finished; the server stopped writing. */
  clientDisconnected?: boolean;
  /** The response was completely written. */
  finished?: boolean;
  /** Which API the request came to (absent: the Messages API). `request` is then its Messages view. */
  api?: 'chat' | 'responses';
  /** OpenAI requests: prompt tokens, the cached part of them, output tokens. */
  openaiUsage?: { prompt: number; cached: number; output: number };
}
