import type { ModelClient, ModelReply } from './client.ts';

/** The text of a reply, tool calls left out. */
export function replyText(reply: ModelReply): string {
  return reply.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
}

/** One question with no tools and no history (a compaction summary, memory consolidation): its answer. */
export async function askText(
  model: ModelClient,
  request: { system: string; prompt: string; maxTokens: number },
  signal: AbortSignal,
): Promise<string> {
  const reply = await model.stream(
    {
      system: [{ type: 'text', text: request.system }],
      tools: [],
      messages: [{ role: 'user', content: request.prompt }],
      maxTokens: request.maxTokens,
    },
    signal,
  );
  return replyText(reply);
}

export const SUMMARY_SYSTEM = 'You write faithful, compact summaries of coding sessions.';
