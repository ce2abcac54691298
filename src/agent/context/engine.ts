import { createHash } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import type { AgentMessage } from '../messages.ts';
import { toLlm } from '../messages.ts';

// MINIMAL first version (the lead's stub). The context-engineering work owns and grows this file;
// the exported names and shapes below are what the loop relies on.

export interface PreparedRequest {
  readonly system: Anthropic.TextBlockParam[];
  readonly tools: Anthropic.Tool[];
  readonly messages: Anthropic.MessageParam[];
  /** Pruning stage in force for this call (0 = none). */
  readonly stage: number;
  readonly estTokens: number;
  /** sha256 of the canonical request up to its last cache breakpoint. */
  readonly prefixHash: string;
}

export interface ContextEngineOptions {
  /** Tool definitions for the API, already built from zod schemas. Frozen for the session. */
  readonly tools: readonly Anthropic.Tool[];
  readonly contextWindow: number;
  /** Project rules (AGENTS.md) read once at session start. */
  readonly projectRules?: string;
  /** Called for a compaction summary (a separate model call without tools). */
  readonly summarize?: (prompt: string, signal: AbortSignal) => Promise<string>;
}

export interface PrepareArgs {
  readonly transcript: readonly AgentMessage[];
  readonly now: number;
  /** When the previous model call finished (for cache-TTL decisions). */
  readonly lastCallAt?: number;
  /** Set after a "prompt is too long" error: compaction must happen now. */
  readonly overflow?: boolean;
  readonly signal: AbortSignal;
}

export interface ContextEngine {
  /** Builds the next request; may return messages to append first (context edits, summaries). */
  prepare(args: PrepareArgs): Promise<{ request: PreparedRequest; appended: AgentMessage[] }>;
  /** Reminders to append after a batch of tool results (recap, skill reminders). */
  afterTools(transcript: readonly AgentMessage[]): AgentMessage[];
}

const SYSTEM = "You are Keel, a coding agent working inside the user's workspace.";

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function createContextEngine(options: ContextEngineOptions): ContextEngine {
  const tools = [...options.tools].sort((a, b) => a.name.localeCompare(b.name));
  const systemText = options.projectRules ? `${SYSTEM}\n\n# Project rules\n${options.projectRules}` : SYSTEM;
  const system: Anthropic.TextBlockParam[] = [
    { type: 'text', text: systemText, cache_control: { type: 'ephemeral' } },
  ];
  return {
    async prepare({ transcript }) {
      const messages = toLlm(transcript);
      const last = messages.at(-1);
      if (last && Array.isArray(last.content) && last.content.length > 0) {
        const blocks = last.content.map((b) => ({ ...b }));
        const lastBlock = blocks.at(-1) as Anthropic.TextBlockParam;
        lastBlock.cache_control = { type: 'ephemeral' };
        messages[messages.length - 1] = { ...last, content: blocks } as Anthropic.MessageParam;
      }
      const canonical = JSON.stringify({ tools, system, messages });
      return {
        request: {
          system,
          tools,
          messages,
          stage: 0,
          estTokens: estimateTokens(canonical),
          prefixHash: createHash('sha256').update(canonical).digest('hex'),
        },
        appended: [],
      };
    },
    afterTools() {
      return [];
    },
  };
}
