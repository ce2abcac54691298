import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { rgPath } from '@vscode/ripgrep';
import type { AgentEvent } from '../../src/agent/events.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { tempWorkspace } from './helpers/cli.ts';

// Read-only calls of one reply (Read, Grep, Glob, LS) run together; what the model gets back must be
// exactly what running them one by one gives, in the order it asked.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const FILES: Record<string, string> = {
  'src/a.ts': 'export const a = 1; // alpha\n',
  'src/b.ts': 'export const b = 2; // beta\n',
  'src/c.ts': 'export const c = 3; // gamma\n',
  'src/d.ts': 'export const d = 4; // delta\n',
  'src/e.ts': 'export const e = 5; // epsilon\n',
  'README.md': '# demo\nalpha beta\n',
};

function session(readConcurrency?: number, files = FILES) {
  const host = createNodeHost({
    workspace: tempWorkspace(files),
    approvals: createPolicyApprovals('never'),
    ripgrepPath: rgPath,
  });
  return createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
    userMemoryFile: null,
    ...(readConcurrency !== undefined ? { readConcurrency } : {}),
  });
}

const use = (name: string, input: Record<string, unknown>) => ({ type: 'tool_use' as const, name, input });

/** 6 Reads and 2 Greps in one reply, then a closing answer. */
function readTurn() {
  return [
    use('Read', { path: 'src/a.ts' }),
    use('Read', { path: 'src/b.ts' }),
    use('Grep', { pattern: 'alpha' }),
    use('Read', { path: 'src/c.ts' }),
    use('Read', { path: 'src/d.ts' }),
    use('Grep', { pattern: 'const [a-c]' }),
    use('Read', { path: 'src/e.ts' }),
    use('Read', { path: 'README.md' }),
  ];
}

/** The messages of the last request, with tool_use ids numbered in order of appearance. */
function lastMessages(): string {
  const body = emu.requests.at(-1)?.body as { messages: unknown };
  const ids = new Map<string, string>();
  return (
    JSON.stringify(body.messages)
      // Each run has its own workspace folder, which the runtime note names.
      .replace(/workspace [^\s"\\]+\./g, 'workspace WS.')
      .replace(/toolu_\w+/g, (id) => {
        if (!ids.has(id)) ids.set(id, `toolu_${ids.size}`);
        return ids.get(id)!;
      })
  );
}

function toolResults(): { id: string; text: string }[] {
  const body = emu.requests.at(-1)?.body as {
    messages: {
      role: string;
      content: string | { type: string; tool_use_id?: string; content?: unknown }[];
    }[];
  };
  const out: { id: string; text: string }[] = [];
  for (const m of body.messages)
    if (typeof m.content !== 'string')
      for (const b of m.content)
        if (b.type === 'tool_result') out.push({ id: b.tool_use_id!, text: JSON.stringify(b.content) });
  return out;
}

function toolUseIds(): string[] {
  const body = emu.requests.at(-1)?.body as {
    messages: { role: string; content: string | { type: string; id?: string }[] }[];
  };
  return body.messages
    .filter((m) => m.role === 'assistant' && typeof m.content !== 'string')
    .flatMap((m) => (m.content as { type: string; id?: string }[]).filter((b) => b.type === 'tool_use'))
    .map((b) => b.id!);
}

/** Most calls started and not yet ended at any point of the event stream. */
function maxInFlight(events: AgentEvent[]): number {
  let open = 0;
  let max = 0;
  for (const e of events) {
    if (e.type === 'tool_start') max = Math.max(max, ++open);
    if (e.type === 'tool_end') open--;
  }
  return max;
}

function pairedStartsAndEnds(events: AgentEvent[]): void {
  const started = events
    .filter((e) => e.type === 'tool_start')
    .map((e) => e.type === 'tool_start' && e.toolUseId);
  const ended = events.filter((e) => e.type === 'tool_end').map((e) => e.type === 'tool_end' && e.toolUseId);
  assert.deepEqual([...ended].sort(), [...started].sort(), 'every tool_start has its tool_end');
}

async function runTurn(readConcurrency?: number) {
  const s = session(readConcurrency);
  emu.setScenario({ replies: [{ content: readTurn() }, { content: [{ type: 'text', text: 'done' }] }] });
  const events: AgentEvent[] = [];
  s.subscribe((e) => events.push(e));
  const outcome = await s.prompt('look around');
  return { outcome, events, messages: lastMessages(), results: toolResults(), uses: toolUseIds() };
}

test('6 Reads and 2 Greps in one reply run together; the model gets the results in call order, byte for byte what one-by-one gives', async () => {
  const together = await runTurn();
  const oneByOne = await runTurn(1);
  assert.equal(together.outcome.status, 'finished');
  assert.equal(oneByOne.outcome.status, 'finished');
  assert.ok(maxInFlight(together.events) > 1, 'calls overlapped');
  assert.equal(maxInFlight(oneByOne.events), 1, 'readConcurrency 1 runs them one by one');
  pairedStartsAndEnds(together.events);
  assert.deepEqual(
    together.results.map((r) => r.id),
    together.uses,
    'each tool_result answers the tool_use at the same position',
  );
  assert.match(together.results[0]!.text, /alpha/);
  assert.match(together.results[1]!.text, /beta/);
  assert.match(together.results[7]!.text, /# demo/);
  assert.equal(together.messages, oneByOne.messages, 'the request is the same as with sequential calls');
});

test('an error in one read does not lose the others', async () => {
  const s = session();
  emu.setScenario({
    replies: [
      {
        content: [
          use('Read', { path: 'src/a.ts' }),
          use('Read', { path: 'src/missing.ts' }),
          use('Grep', { pattern: '(' }),
          use('Read', { path: 'src/c.ts' }),
        ],
      },
      { content: [{ type: 'text', text: 'done' }] },
    ],
  });
  const events: AgentEvent[] = [];
  s.subscribe((e) => events.push(e));
  const outcome = await s.prompt('read');
  assert.equal(outcome.status, 'finished');
  const results = toolResults();
  assert.deepEqual(
    results.map((r) => r.id),
    toolUseIds(),
  );
  assert.match(results[0]!.text, /alpha/);
  assert.match(results[1]!.text, /NOT_FOUND/);
  assert.match(results[2]!.text, /Error \[/, 'the bad pattern is an error for that call only');
  assert.match(results[3]!.text, /gamma/);
  pairedStartsAndEnds(events);
});

test('abort during a batch stops every call: each is answered (ABORTED), starts and ends stay paired, nothing runs after', async () => {
  const s = session();
  emu.setScenario({
    replies: [{ content: readTurn() }, { content: [{ type: 'text', text: 'never asked' }] }],
  });
  const events: AgentEvent[] = [];
  const before = emu.requests.length;
  s.subscribe((e) => {
    events.push(e);
    if (
      e.type === 'tool_start' &&
      e.name === 'Read' &&
      events.filter((x) => x.type === 'tool_start').length === 2
    )
      s.abort('user pressed stop');
  });
  const outcome = await s.prompt('look around');
  assert.equal(outcome.status, 'aborted');
  assert.equal(emu.requests.length - before, 1, 'no model call after the abort');
  pairedStartsAndEnds(events);
  const starts = events.filter((e) => e.type === 'tool_start').length;
  assert.ok(starts < 8, `calls stopped starting after the abort (${starts} started)`);
  const results = s.messages.filter((m) => m.role === 'tool_result');
  assert.equal(results.length, 8, 'every call got a result (P2)');
  assert.ok(results.slice(1).every((m) => m.role === 'tool_result' && m.result.error?.code === 'ABORTED'));
});

test('a write between reads splits the batch: reads after it see the edit, reads before it do not', async () => {
  const s = session(undefined, { 'notes.txt': 'alpha\n', 'other.txt': 'beta\n' });
  emu.setScenario({
    replies: [
      {
        content: [
          use('Read', { path: 'notes.txt' }),
          use('Grep', { pattern: 'OMEGA' }),
          use('Edit', { path: 'notes.txt', old_string: 'alpha', new_string: 'OMEGA' }),
          use('Read', { path: 'notes.txt' }),
          use('Grep', { pattern: 'OMEGA' }),
        ],
      },
      { content: [{ type: 'text', text: 'done' }] },
    ],
  });
  const events: AgentEvent[] = [];
  s.subscribe((e) => events.push(e));
  const outcome = await s.prompt('edit');
  assert.equal(outcome.status, 'finished');
  const results = toolResults();
  assert.deepEqual(
    results.map((r) => r.id),
    toolUseIds(),
  );
  assert.match(results[0]!.text, /alpha/);
  assert.doesNotMatch(results[1]!.text, /notes\.txt/, 'the Grep before the edit finds nothing');
  assert.doesNotMatch(results[2]!.text, /Error/, 'the edit applied');
  assert.match(results[3]!.text, /OMEGA/);
  assert.match(results[4]!.text, /notes\.txt/, 'the Grep after the edit finds it');
  // The edit starts only after both reads before it ended, and the reads after it start after it ended.
  const order = events
    .filter((e) => e.type === 'tool_start' || e.type === 'tool_end')
    .map((e) => `${e.type === 'tool_start' ? '+' : '-'}${(e as { name: string }).name}`);
  const edit = order.indexOf('+Edit');
  assert.deepEqual(
    order.slice(0, edit).filter((x) => x.startsWith('-')).length,
    2,
    'both reads before it ended',
  );
  assert.equal(order[edit + 1], '-Edit');
  pairedStartsAndEnds(events);
});
