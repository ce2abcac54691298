import { ContextOverflowError, type PreparedRequest } from './context/engine.ts';
import type { LoopDeps } from './loop.ts';
import { compactionsIn, MAX_COMPACTIONS } from './session/handoff.ts';

// A turn's request, with the reset rung (seed 002 P4) between the context engine and the model: a
// session driven past MAX_COMPACTIONS, or whose context nothing can bring under the window, goes on
// as a new session (deps.reset) and the request is built again from its handoff. At most once a turn.

export async function prepareTurn(
  deps: LoopDeps,
  overflow: boolean,
  lastCallAt: number | undefined,
): Promise<PreparedRequest> {
  let resetDone = false;
  for (;;) {
    let prepared: Awaited<ReturnType<LoopDeps['engine']['prepare']>>;
    try {
      prepared = await deps.engine.prepare({
        transcript: deps.transcript(),
        now: deps.now(),
        lastCallAt,
        overflow: overflow && !resetDone,
        signal: deps.signal,
      });
    } catch (error) {
      if (!(error instanceof ContextOverflowError) || resetDone || !deps.reset) throw error;
      if (!(await deps.reset(`the context could not be brought under the window (${error.message})`)))
        throw error;
      resetDone = true;
      continue;
    }
    for (const message of prepared.appended) deps.append(message);
    const compacted = prepared.appended.some((m) => m.role === 'summary');
    if (!resetDone && compacted && deps.reset) {
      const compactions = compactionsIn(deps.transcript());
      if (compactions > MAX_COMPACTIONS && (await deps.reset(`driven past ${MAX_COMPACTIONS} compactions`))) {
        resetDone = true;
        continue;
      }
    }
    return prepared.request;
  }
}
