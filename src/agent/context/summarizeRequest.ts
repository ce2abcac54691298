import type Anthropic from '@anthropic-ai/sdk';
import type { AgentMessage } from '../messages.ts';
import { SUMMARY_TEMPLATE } from './compaction.ts';
import { describeToolCall } from './pruning.ts';

// Compaction's summary asked IN the conversation: the same tools, system and messages the previous
// call sent (so the whole conversation is read from the prompt cache) and the instruction as one more
// user text block at the end. A standalone prompt would send ~25K fresh tokens for the same summary.

export const COMPACTION_REQUEST_TAG = 'compaction-request';

export interface InContextSummarizeRequest {
  readonly system: Anthropic.TextBlockParam[];
  readonly tools: Anthropic.Tool[];
  readonly messages: Anthropic.MessageParam[];
}

/** Whether a request is an in-context summary request (benchmarks and emulator scenarios tell them apart). */
export function isCompactionRequest(request: { readonly messages: readonly Anthropic.MessageParam[] }) {
  const last = request.messages.at(-1);
  if (last?.role !== 'user' || typeof last.content === 'string') return false;
  const block = last.content.at(-1);
  return block?.type === 'text' && block.text.startsWith(`<${COMPACTION_REQUEST_TAG}>`);
}

function clipLine(text: string, max = 80): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/** How the instruction names the first message that stays in context after the summary. */
export function describeKeptFrom(message: AgentMessage | undefined): string | undefined {
  if (!message) return undefined;
  switch (message.role) {
    case 'assistant': {
      const use = message.content.find((b) => b.type === 'tool_use');
      if (use?.type === 'tool_use') return `your call ${describeToolCall(use, use.name)}`;
      const text = message.content.find((b) => b.type === 'text');
      return text?.type === 'text' ? `your message "${clipLine(text.text)}"` : undefined;
    }
    case 'user':
      return `the user's message "${clipLine(message.text)}"`;
    case 'reminder':
      return `the reminder "${clipLine(message.text)}"`;
    default:
      return undefined;
  }
}

export function compactionInstruction(keptFrom: string | undefined): string {
  const kept = keptFrom
    ? `Everything above before ${keptFrom} is about to be replaced by a summary you write now; from there on the messages stay in context verbatim.`
    : 'Everything above is about to be replaced by a summary you write now; only the newest messages stay in context verbatim.';
  return `<${COMPACTION_REQUEST_TAG}>
The context is nearly full. ${kept} You will continue the work with only that summary and the kept messages, so write it for yourself. Do not call any tool: answer with the summary alone. Earlier <session-summary> blocks stay as they are; do not repeat them.
${SUMMARY_TEMPLATE}
</${COMPACTION_REQUEST_TAG}>`;
}

function withoutCacheControl(message: Anthropic.MessageParam): Anthropic.MessageParam {
  if (typeof message.content === 'string') return message;
  return {
    role: message.role,
    content: message.content.map((block) => {
      if (!('cache_control' in block) || !block.cache_control) return block;
      const { cache_control: _dropped, ...rest } = block;
      return rest as Anthropic.ContentBlockParam;
    }),
  } as Anthropic.MessageParam;
}

/**
 * `messages` is the request as the next call would send it BEFORE any pruning of this pass (its
 * prefix is what the previous call cached). When `summarizedBeforeNewestReply` holds (every message the
 * summary replaces precedes the newest assistant reply), the request stops where the previous call's
 * prompt ended, so nothing but the instruction is new; otherwise it carries everything, newest
 * content uncached (no breakpoint after the cached part: it would be written for nothing).
 */
export function buildInContextSummarizeRequest(input: {
  readonly system: readonly Anthropic.TextBlockParam[];
  readonly tools: readonly Anthropic.Tool[];
  readonly messages: readonly Anthropic.MessageParam[];
  readonly summarizedBeforeNewestReply: boolean;
  readonly keptFrom: string | undefined;
}): InContextSummarizeRequest | undefined {
  let lastAssistant = -1;
  for (let i = input.messages.length - 1; i >= 0; i--) {
    if (input.messages[i]!.role === 'assistant') {
      lastAssistant = i;
      break;
    }
  }
  const truncate = input.summarizedBeforeNewestReply && lastAssistant > 0;
  const messages = truncate
    ? input.messages.slice(0, lastAssistant)
    : input.messages.map((m, i) => (i > lastAssistant ? withoutCacheControl(m) : m));
  const last = messages.at(-1);
  if (last?.role !== 'user') return undefined;
  const instruction: Anthropic.TextBlockParam = {
    type: 'text',
    text: compactionInstruction(input.keptFrom),
  };
  const content =
    typeof last.content === 'string' ? [{ type: 'text' as const, text: last.content }] : last.content;
  return {
    system: [...input.system],
    tools: [...input.tools],
    messages: [...messages.slice(0, -1), { role: 'user', content: [...content, instruction] }],
  };
}
