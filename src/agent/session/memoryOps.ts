import type { AgentEventBody } from '../events.ts';
import type { AgentMessage } from '../messages.ts';
import { CONSOLIDATION_SYSTEM } from '../memory/consolidate.ts';
import { consolidationDue, runConsolidation } from '../memory/sessionMemory.ts';
import { type memoryPaths, undoChange } from '../memory/store.ts';
import { askText } from '../model/ask.ts';
import type { ModelClient } from '../model/client.ts';

// The session's two memory operations (end-of-session consolidation, the panel's Undo), kept out of
// session.ts: they share only the transcript, the memory paths and the model with it.

export function sessionMemoryOps(deps: {
  readonly readOnly: boolean;
  readonly running: () => boolean;
  readonly transcript: readonly AgentMessage[];
  readonly memory: ReturnType<typeof memoryPaths>;
  readonly model: ModelClient;
  readonly now: () => number;
  readonly emit: (body: AgentEventBody) => void;
  readonly notify: (text: string, source: string) => void;
}) {
  const { transcript, memory, now, emit } = deps;
  /** Transcript length already offered to memory consolidation. */
  let consolidatedUpTo = transcript.length;
  return {
    async consolidateMemory(): Promise<void> {
      if (deps.readOnly || deps.running()) return;
      const fresh = transcript.slice(consolidatedUpTo);
      if (!consolidationDue(fresh)) return;
      consolidatedUpTo = transcript.length;
      await runConsolidation({
        messages: fresh,
        paths: memory,
        now,
        emit,
        ask: (prompt, signal) =>
          askText(deps.model, { system: CONSOLIDATION_SYSTEM, prompt, maxTokens: 1024 }, signal),
      });
    },
    undoMemoryChange(changeId: string): void {
      const change = undoChange(memory, changeId, now());
      if (!change) return;
      emit({ type: 'memory_changed', change });
      deps.notify(
        `The user undid a memory change (${change.summary.replace(/^undo of: /, '')}); do not save it again unless asked.`,
        'memory',
      );
    },
  };
}
