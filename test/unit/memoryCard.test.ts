import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEvent, AgentEventBody } from '../../src/agent/events.ts';
import type { MemoryChange } from '../../src/agent/memory/store.ts';
import { initialState, type MemoryItem } from '../../webview-ui/src/model.ts';
import { reduceMany } from '../../webview-ui/src/reducer.ts';

// The panel's memory diff card: a MEMORY.md change made during the session shows what changed, and an
// undo marks the card it reverted instead of adding another.

const stream = (bodies: AgentEventBody[]): AgentEvent[] =>
  bodies.map((b, i) => ({ ...b, sessionId: 's1', seq: i + 1, ts: 1000 + i }));

const change = (over: Partial<MemoryChange>): MemoryChange => ({
  id: 'mem_1',
  scope: 'workspace',
  file: '/w/.keel/memory/MEMORY.md',
  before: '# Memory\n\n## Tooling\n- 2026-01-01: Use npm\n',
  after: '# Memory\n\n## Tooling\n- 2026-01-02: Use pnpm\n',
  origin: 'agent',
  summary: 'replace: 2026-01-02: Use pnpm',
  ts: 1,
  ...over,
});

test('a memory change becomes a diff card; its undo marks that card undone', () => {
  let state = reduceMany(initialState(), stream([{ type: 'memory_changed', change: change({}) }]));
  const card = state.items.find((i) => i.kind === 'memory') as MemoryItem;
  assert.ok(card, 'a memory card');
  assert.equal(card.id, 'mem_1');
  assert.deepEqual(card.lines, [
    { sign: '-', text: '- 2026-01-01: Use npm' },
    { sign: '+', text: '- 2026-01-02: Use pnpm' },
  ]);
  assert.equal(card.undone, false);
  const undo = change({
    id: 'mem_2',
    origin: 'undo',
    undoes: 'mem_1',
    before: change({}).after,
    after: change({}).before,
  });
  state = reduceMany(state, [{ type: 'memory_changed', change: undo, sessionId: 's1', seq: 2, ts: 2 }]);
  const cards = state.items.filter((i) => i.kind === 'memory') as MemoryItem[];
  assert.equal(cards.length, 1, 'an undo is not a new card');
  assert.equal(cards[0]!.undone, true);
});
