import type { ContentBlockIn, MessagesRequest, ScriptedReply } from './types.ts';
import { blocksOf } from './validate.ts';

// What the API does with thinking that a stateless schema check cannot: a model only thinks when the
// request asks it to, and the thinking it gave before a tool call must come back with that call.

/** The request asks the model to think (manual budget or adaptive). */
export function thinkingOn(req: MessagesRequest): boolean {
  return req.thinking?.type === 'enabled' || req.thinking?.type === 'adaptive';
}

/** A scripted reply as the model would give it to this request: without thinking when none was asked. */
export function replyForRequest(reply: ScriptedReply, req: MessagesRequest): ScriptedReply {
  const isThinking = (b: { type: string }) => b.type === 'thinking' || b.type === 'redacted_thinking';
  if (thinkingOn(req) || !reply.content?.some(isThinking)) return reply;
  return { ...reply, content: reply.content.filter((b) => !isThinking(b)) };
}

/**
 * Remembers the thinking signatures each reply gave before its tool calls (tool_use id → signatures in
 * order), and checks a later request's final assistant turn against them: with thinking on, the API
 * answers 400 when the turn that made the pending tool calls lost or reordered its thinking blocks.
 */
export function createThinkingLedger() {
  const issued = new Map<string, string[]>();
  return {
    record(content: readonly { type: string; id?: string; signature?: string; data?: string }[]): void {
      const signatures = content.flatMap((b) =>
        b.type === 'thinking' ? [b.signature ?? ''] : b.type === 'redacted_thinking' ? [b.data ?? ''] : [],
      );
      if (signatures.length === 0) return;
      for (const b of content) if (b.type === 'tool_use' && b.id) issued.set(b.id, signatures);
    },
    check(req: MessagesRequest): string | undefined {
      if (!thinkingOn(req)) return undefined;
      const i = req.messages.findLastIndex((m) => m.role === 'assistant');
      if (i < 0) return undefined;
      const blocks: ContentBlockIn[] = blocksOf(req.messages[i]!.content);
      const firstUse = blocks.findIndex((b) => b.type === 'tool_use');
      if (firstUse < 0) return undefined;
      const expected = issued.get(String(blocks[firstUse]!['id']));
      if (!expected) return undefined;
      const sent = blocks
        .slice(0, firstUse)
        .flatMap((b) =>
          b.type === 'thinking'
            ? [String(b['signature'])]
            : b.type === 'redacted_thinking'
              ? [String(b['data'])]
              : [],
        );
      if (sent.length === 0) {
        return `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${blocks[0]?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
      }
      if (sent.length !== expected.length || sent.some((s, k) => s !== expected[k])) {
        return `messages.${i}.content: thinking blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.`;
      }
      return undefined;
    },
  };
}
