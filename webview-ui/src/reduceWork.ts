import type { AgentEvent } from '../../src/agent/events.ts';
import { type Draft, get, put, toolFromUse } from './draft.ts';
import { lineChanges } from './format.ts';

// Work that outlives one tool call: background jobs, sub-agents (their cards live inside the Task
// card) and memory changes (a card with Keep / Undo).

type WorkEvent = Extract<
  AgentEvent,
  { type: 'job' | 'subagent_start' | 'subagent_tool' | 'subagent_end' | 'memory_changed' }
>;

export function applyWorkEvent(draft: Draft, event: WorkEvent): void {
  switch (event.type) {
    case 'job': {
      const { id, command, status, exitCode } = event.job;
      const view = { id, command, status, exitCode };
      const at = (draft.jobs ?? []).findIndex((j) => j.id === id);
      draft.jobs = at >= 0 ? draft.jobs.map((j, i) => (i === at ? view : j)) : [...(draft.jobs ?? []), view];
      break;
    }
    case 'subagent_start': {
      const card = get(draft, event.toolUseId, 'tool') ?? toolFromUse(event.toolUseId, 'Task', undefined);
      put(draft, {
        ...card,
        subagent: {
          agentId: event.agentId,
          description: event.description,
          mode: event.mode,
          status: 'running',
          calls: [],
          costUsd: 0,
          turns: 0,
          logPath: event.logPath,
        },
      });
      break;
    }
    case 'subagent_tool': {
      const card = get(draft, event.toolUseId, 'tool');
      if (!card?.subagent) break;
      const calls = [...card.subagent.calls];
      if (event.phase === 'start') calls.push({ name: event.name, input: event.input, status: 'running' });
      else {
        const at = calls.findLastIndex((c) => c.name === event.name && c.status === 'running');
        if (at >= 0)
          calls[at] = {
            ...calls[at]!,
            status: event.status ?? 'success',
            ...(event.errorCode ? { errorCode: event.errorCode } : {}),
          };
      }
      put(draft, { ...card, subagent: { ...card.subagent, calls } });
      break;
    }
    case 'subagent_end': {
      const card = get(draft, event.toolUseId, 'tool');
      if (!card?.subagent) break;
      const calls = card.subagent.calls.map((c) =>
        c.status === 'running' ? { ...c, status: 'cancelled' as const } : c,
      );
      put(draft, {
        ...card,
        subagent: {
          ...card.subagent,
          status: event.status,
          turns: event.turns,
          costUsd: event.costUsd,
          calls,
        },
      });
      break;
    }
    case 'memory_changed': {
      const { change } = event;
      // An undo marks the card it reverted; it is not a new card.
      const reverted = change.undoes ? get(draft, change.undoes, 'memory') : undefined;
      if (reverted) put(draft, { ...reverted, undone: true });
      else if (!change.undoes)
        put(draft, {
          kind: 'memory',
          id: change.id,
          scope: change.scope,
          origin: change.origin,
          summary: change.summary,
          lines: lineChanges(change.before, change.after),
          undone: false,
        });
      break;
    }
  }
}
