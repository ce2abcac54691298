import type { PreparedRequest } from './context/engineTypes.ts';
import type { LoopDeps } from './loop.ts';
import type { AssistantBlock } from './messages.ts';
import type { ModelReply } from './model/client.ts';
import { outputLimitFor } from './model/models.ts';
import { costUsd } from './model/pricing.ts';
import { fail, type ToolResult } from './tools/protocol.ts';

// One model call of a turn, as the loop sees it: streamed, recorded in the trace (every attempt, so the
// cost is complete), and never handed over with a tool call cut off by max_tokens when a retry with the
// model's larger limit can still give the whole call.

type ToolUseBlock = Extract<AssistantBlock, { type: 'tool_use' }>;

/** The tool call max_tokens cut in the middle of (the client marks it `truncated`), if any. */
export function cutToolUse(content: readonly AssistantBlock[]): ToolUseBlock | undefined {
  return content.find((b): b is ToolUseBlock => b.type === 'tool_use' && b.truncated === true);
}

/** What the model is told instead of running a half-written call (a Write cut mid-file must never run). */
export function cutOffResult(use: ToolUseBlock): ToolResult {
  return fail(
    'TOO_LARGE',
    `Your ${use.name} call was cut off at the output limit before its input was complete, so it was not run.`,
    'Send the work in smaller calls: e.g. Write the first part of the file, then add the rest with Edit, or split it into several files.',
  );
}

export async function streamTurn(
  deps: LoopDeps,
  request: PreparedRequest,
  messageId: string,
  contextWindow: number,
): Promise<ModelReply> {
  let maxTokens = deps.maxTokens;
  for (let attempt = 0; ; attempt++) {
    const reply = await deps.model.stream(
      { ...request, maxTokens, ...(deps.effort ? { effort: deps.effort } : {}) },
      deps.signal,
      {
        onStart: (_id, model) => deps.emit({ type: 'message_start', messageId, model }),
        onDelta: (blockIndex, kind, delta) =>
          deps.emit({ type: 'message_delta', messageId, blockIndex, kind, delta }),
        onRetry: (info) => deps.emit({ type: 'retry', ...info }),
        onDiscard: (partial) => deps.emit({ type: 'discarded', ...partial }),
        // The failover ladder (another auth profile, less thinking): shown, and kept in the log.
        onSwitch: (info) => deps.emit({ type: 'notice', level: 'warn', text: info.text }),
      },
    );
    recordCall(deps, request, reply, contextWindow);
    const cut = cutToolUse(reply.content);
    const limit = outputLimitFor(reply.model);
    if (!cut || attempt > 0 || reply.maxTokens >= limit) return reply;
    // Once, with the model's own limit: nothing of the cut reply reaches the transcript (P2).
    const reason = `${cut.name} was cut off at max_tokens ${reply.maxTokens}; retrying with ${limit}`;
    deps.emit({ type: 'discarded', model: reply.model, content: reply.content, reason });
    deps.emit({ type: 'notice', level: 'warn', text: `The reply was cut off: ${reason}.` });
    maxTokens = limit;
  }
}

function recordCall(
  deps: LoopDeps,
  request: PreparedRequest,
  reply: ModelReply,
  contextWindow: number,
): void {
  const u = reply.usage;
  deps.emit({
    type: 'model_call',
    record: {
      stage: request.stage,
      message_count: request.messages.length,
      est_tokens: request.estTokens,
      // The engine hashes the very tools + system objects it hands over to be sent (not a frozen
      // constant), so the trace measures stability; hashing them again here would cost as much.
      prefix_hash: request.prefixHash,
      cache_read: u.cacheRead,
      cache_write: u.cacheWrite,
      input: u.input,
      // Thinking tokens are output tokens (the API counts them there): the cost includes them.
      output: u.output,
      latency_ms: reply.latencyMs,
      ttft_ms: reply.ttftMs,
      model: reply.model,
      cost_usd: costUsd(reply.model, u),
      context_window: contextWindow,
      ok: true,
    },
  });
}
