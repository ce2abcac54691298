import type { ContextEngine } from './context/engine.ts';
import type { AgentEventBody } from './events.ts';
import type { AgentMessage, AssistantMessage, ToolResultMessage } from './messages.ts';
import { assistantText, toolUses } from './messages.ts';
import type { ModelClient } from './model/client.ts';
import { ModelError } from './model/errors.ts';
import type { Effort } from './model/models.ts';
import { cutOffResult, streamTurn } from './modelTurn.ts';
import { prepareTurn } from './prepareTurn.ts';
import type { RunOutcome } from './session/types.ts';
import { fail, renderForModel, type ToolContext, type ToolResult } from './tools/protocol.ts';
import type { StartedCall, ToolRegistry } from './tools/registry.ts';

// The agent loop: stream a reply, run its tool calls, append the results, repeat. New capabilities
// are tools, prompt parts (the context engine) or event subscribers — never more code here.

export interface LoopDeps {
  readonly model: ModelClient;
  readonly engine: ContextEngine;
  readonly registry: ToolRegistry;
  readonly transcript: () => readonly AgentMessage[];
  /** Appends to the transcript; logged before anything else sees it (P8). */
  readonly append: (message: AgentMessage) => void;
  readonly emit: (event: AgentEventBody) => void;
  readonly toolContext: (toolUseId: string) => ToolContext;
  /** Steering messages the user sent during the run and host notes (P7), drained once. */
  readonly takeSteering: () => AgentMessage[];
  readonly hasSteering: () => boolean;
  /** The model ended its turn: wait for background work; true = a notice is ready, keep going. */
  readonly awaitBackground?: () => Promise<boolean>;
  /** The agent is about to finish: a message to append and keep going instead (a Stop hook's reason). */
  readonly beforeStop?: () => Promise<AgentMessage | undefined>;
  readonly newId: (prefix: string) => string;
  readonly now: () => number;
  /** Total time spent so far waiting for the user's approval answers (left out of tool durations). */
  readonly approvalWaitMs?: () => number;
  readonly signal: AbortSignal;
  readonly maxTurns: number;
  /** Turns the run's whole tree has used (its sub-agents' too): the tree shares `maxTurns`. */
  readonly turnsUsed?: () => number;
  readonly maxTokens: number;
  /** Thinking at this level where the model thinks; absent = no thinking. */
  readonly effort?: Effort;
  readonly contextWindow: number;
  /**
   * The last rung of recovery (seed 002 P4): the session goes on as a new one seeded with a handoff;
   * false when it cannot (then the run fails as before). Called when the session was driven past
   * MAX_COMPACTIONS, or the context cannot be brought under the window.
   */
  readonly reset?: (reason: string) => Promise<boolean>;
  /** Read-only calls of one reply run at the same time, at most (default READ_CONCURRENCY; 1 = one by one). */
  readonly readConcurrency?: number;
}

const MAX_OVERFLOW_RETRIES = 3;

function toolResultMessage(
  deps: LoopDeps,
  id: string,
  name: string,
  result: ToolResult,
  content: string,
): ToolResultMessage {
  const isError = result.status === 'error';
  const images = isError ? undefined : result.images;
  return {
    role: 'tool_result',
    id: deps.newId('res'),
    ts: deps.now(),
    toolUseId: id,
    toolName: name,
    result: withoutImages(result),
    content,
    isError,
    ...(images?.length ? { images } : {}),
  };
}

/** A result as events carry it: its images (base64, up to 5 MB each) go only to the tool-result message. */
function withoutImages(result: ToolResult): ToolResult {
  if (!result.images) return result;
  const { images: _moved, ...rest } = result;
  return rest;
}

const skipped = (): ToolResult => ({
  status: 'error',
  data: null,
  text: '[Skipped] The user sent a new message before this call ran.',
  stats: { time_ms: 0 },
});

async function runTool(
  deps: LoopDeps,
  use: ReturnType<typeof toolUses>[number],
): Promise<{ result: ToolResult; content: string; stopRun: string | undefined }> {
  deps.emit({ type: 'tool_start', toolUseId: use.id, name: use.name, input: use.input });
  const started = deps.now();
  const waitedBefore = deps.approvalWaitMs?.() ?? 0;
  const executed = use.truncated
    ? { result: cutOffResult(use), content: '', stopRun: undefined }
    : use.invalidJson !== undefined
      ? {
          result: fail(
            'INVALID_PARAM',
            `The input for ${use.name} was not valid JSON: ${use.invalidJson.slice(0, 200)}`,
            'Send the tool input again as one valid JSON object.',
          ),
          content: '',
          stopRun: undefined,
        }
      : await deps.registry.execute(use.name, use.input, deps.toolContext(use.id));
  deps.emit({
    type: 'tool_end',
    toolUseId: use.id,
    name: use.name,
    result: withoutImages(executed.result),
    // The time an approval question waited for the user is not the tool's (concurrent siblings'
    // waits overlap it, so a batch may under-count; never over-count).
    durationMs: Math.max(0, deps.now() - started - ((deps.approvalWaitMs?.() ?? 0) - waitedBefore)),
  });
  return {
    result: executed.result,
    content: executed.content || renderForModel(executed.result),
    stopRun: executed.stopRun,
  };
}

type ToolUse = ReturnType<typeof toolUses>[number];

/** Calls that may share a batch: sub-agents with sub-agents, read-only calls with read-only calls. */
function batchGroup(deps: LoopDeps, use: ToolUse): 'concurrent' | 'read' | undefined {
  const tool = deps.registry.get(use.name);
  if (tool?.concurrent) return 'concurrent';
  const reads = tool?.concurrentRead && use.invalidJson === undefined && !use.truncated;
  return reads && (deps.readConcurrency ?? READ_CONCURRENCY) > 1 ? 'read' : undefined;
}

/** Read-only calls of one reply running at the same time, at most. */
export const READ_CONCURRENCY = 4;

/**
 * A batch of read-only calls: up to `concurrency` run at once, and each is committed in call
 * order — its guards checked, [Skipped] once a steering message or a stop came before it, its result
 * appended — so the transcript is the one running them one by one would give (P2, P7). Every call
 * that started gets its tool_end. Returns the stop reason a loop guard gave, if any.
 */
async function runReadBatch(
  deps: LoopDeps,
  batch: readonly ToolUse[],
  concurrency: number,
): Promise<string | undefined> {
  let stopRun: string | undefined;
  const halted = () => deps.hasSteering() || deps.signal.aborted || stopRun !== undefined;
  type Started = { call: StartedCall; began: number; ranAt: Promise<number> };
  const slots = batch.map(() => {
    let settle!: (started: Started | undefined) => void;
    const promise = new Promise<Started | undefined>((resolve) => {
      settle = resolve;
    });
    return { promise, settle };
  });
  let next = 0;
  const worker = async () => {
    while (next < batch.length) {
      const k = next++;
      const use = batch[k]!;
      // Not started once the batch is halted: committed below as [Skipped] / ABORTED.
      if (halted()) {
        slots[k]!.settle(undefined);
        continue;
      }
      deps.emit({ type: 'tool_start', toolUseId: use.id, name: use.name, input: use.input });
      const began = deps.now();
      const call = deps.registry.begin(use.name, use.input, deps.toolContext(use.id));
      const ranAt = call.ran.then(() => deps.now());
      slots[k]!.settle({ call, began, ranAt });
      await ranAt;
    }
  };
  const workers = Array.from({ length: Math.min(concurrency, batch.length) }, () => worker());
  for (let k = 0; k < batch.length; k++) {
    const use = batch[k]!;
    // Decided where running one by one would decide it: once the previous call is done (the
    // first call was cleared with the batch).
    const skip = k > 0 && halted();
    const started = await slots[k]!.promise;
    if (skip || !started) {
      const result = deps.signal.aborted
        ? fail('ABORTED', 'The run was aborted before this call ran.', 'Wait for the user.')
        : skipped();
      if (started) {
        await started.call.discard();
        deps.emit({
          type: 'tool_end',
          toolUseId: use.id,
          name: use.name,
          result,
          durationMs: (await started.ranAt) - started.began,
        });
      }
      deps.append(toolResultMessage(deps, use.id, use.name, result, renderForModel(result)));
      continue;
    }
    const executed = await started.call.commit();
    deps.emit({
      type: 'tool_end',
      toolUseId: use.id,
      name: use.name,
      result: withoutImages(executed.result),
      durationMs: (await started.ranAt) - started.began,
    });
    deps.append(
      toolResultMessage(
        deps,
        use.id,
        use.name,
        executed.result,
        executed.content || renderForModel(executed.result),
      ),
    );
    stopRun ??= executed.stopRun;
  }
  await Promise.all(workers);
  return stopRun;
}

export async function runLoop(deps: LoopDeps): Promise<RunOutcome> {
  let lastCallAt: number | undefined;
  let overflowRetries = 0;
  let finalText = '';
  for (let turn = 1; turn <= deps.maxTurns; turn++) {
    if (deps.signal.aborted) return { status: 'aborted', finalText };
    if (deps.turnsUsed && deps.turnsUsed() >= deps.maxTurns) break;
    deps.emit({ type: 'turn_start', turn });
    for (const message of deps.takeSteering()) deps.append(message);

    const request = await prepareTurn(deps, overflowRetries > 0, lastCallAt);

    let reply: Awaited<ReturnType<ModelClient['stream']>>;
    const messageId = deps.newId('msg');
    try {
      reply = await streamTurn(deps, request, messageId, deps.contextWindow);
    } catch (error) {
      const e = error instanceof ModelError ? error : new ModelError('invalid_request', String(error));
      if (e.kind === 'aborted' || deps.signal.aborted) return { status: 'aborted', finalText };
      if (e.kind === 'prompt_too_long' && overflowRetries >= MAX_OVERFLOW_RETRIES && deps.reset) {
        const reason = `the prompt stayed too long for the context window after ${overflowRetries} compaction attempts`;
        if (await deps.reset(reason)) {
          overflowRetries = 0;
          turn--;
          continue;
        }
      }
      if (e.kind === 'prompt_too_long' && overflowRetries < MAX_OVERFLOW_RETRIES) {
        overflowRetries++;
        deps.emit({
          type: 'notice',
          level: 'warn',
          text: `Prompt too long; compacting and retrying (${overflowRetries}/${MAX_OVERFLOW_RETRIES}).`,
        });
        turn--;
        continue;
      }
      const message =
        e.kind === 'prompt_too_long'
          ? `The conversation no longer fits the model's context window, even after ${overflowRetries} compaction attempts: ${e.message}`
          : e.message;
      deps.emit({ type: 'error', code: e.kind, message });
      return { status: 'failed', finalText, error: message };
    }
    overflowRetries = 0;
    lastCallAt = deps.now();
    const u = reply.usage;
    const assistant: AssistantMessage = {
      role: 'assistant',
      id: messageId,
      ts: deps.now(),
      content: reply.content,
      model: reply.model,
      stopReason: reply.stopReason,
      usage: u,
    };
    deps.append(assistant);
    deps.emit({ type: 'message_end', message: assistant });
    finalText = assistantText(assistant) || finalText;

    const uses = toolUses(assistant);
    if (uses.length === 0) {
      deps.emit({ type: 'turn_end', turn, stopReason: reply.stopReason });
      if (deps.hasSteering()) continue;
      if (!deps.signal.aborted && (await deps.awaitBackground?.())) continue;
      const keepGoing = deps.signal.aborted ? undefined : await deps.beforeStop?.();
      if (keepGoing) {
        deps.append(keepGoing);
        continue;
      }
      return { status: 'finished', finalText };
    }
    let stopRun: string | undefined;
    // Calls run in order, except that consecutive calls of a concurrent tool (Task: sub-agents) run
    // together, and so do consecutive read-only calls (Read, Grep, Glob, LS; a few at a time); their
    // results are still appended in the order the model asked for them (P2).
    for (let i = 0; i < uses.length; ) {
      const group = batchGroup(deps, uses[i]!);
      let end = i + 1;
      if (group) while (end < uses.length && batchGroup(deps, uses[end]!) === group) end++;
      const batch = uses.slice(i, end);
      i = end;
      if (group === 'read' && batch.length > 1 && !deps.hasSteering() && !deps.signal.aborted && !stopRun) {
        stopRun = await runReadBatch(deps, batch, deps.readConcurrency ?? READ_CONCURRENCY);
        continue;
      }
      if (deps.hasSteering() || deps.signal.aborted || stopRun) {
        for (const use of batch) {
          const result = deps.signal.aborted
            ? fail('ABORTED', 'The run was aborted before this call ran.', 'Wait for the user.')
            : skipped();
          deps.append(toolResultMessage(deps, use.id, use.name, result, renderForModel(result)));
        }
        continue;
      }
      const executed = await Promise.all(batch.map((use) => runTool(deps, use)));
      batch.forEach((use, k) => {
        const call = executed[k]!;
        deps.append(toolResultMessage(deps, use.id, use.name, call.result, call.content));
        stopRun ??= call.stopRun;
      });
    }
    for (const reminder of deps.engine.afterTools(deps.transcript())) deps.append(reminder);
    deps.emit({ type: 'turn_end', turn, stopReason: reply.stopReason });
    if (deps.signal.aborted) return { status: 'aborted', finalText };
    if (stopRun) return { status: 'stopped', finalText, error: stopRun };
  }
  return { status: 'max_turns', finalText, error: `Stopped after ${deps.maxTurns} turns (--max-turns).` };
}
