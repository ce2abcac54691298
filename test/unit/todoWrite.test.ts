import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TodoItem } from '../../src/agent/events.ts';
import type { ToolContext } from '../../src/agent/tools/protocol.ts';
import { renderForModel } from '../../src/agent/tools/protocol.ts';
import { createTodoWriteTool, MAX_TODOS } from '../../src/agent/tools/todoWrite.ts';

// TodoWrite touches no host port; it is driven the way the registry drives it: schema parse, then execute.
const context = {} as ToolContext;

function setup() {
  let state: TodoItem[] = [];
  const changes: TodoItem[][] = [];
  const tool = createTodoWriteTool({
    onChange: (todos) => {
      state = todos;
      changes.push(todos);
    },
    current: () => state,
  });
  const call = async (raw: unknown) => {
    const parsed = tool.inputSchema.safeParse(raw);
    if (!parsed.success) return { parsed: false as const, issues: parsed.error.issues.map((i) => i.message) };
    return { parsed: true as const, result: await tool.execute(parsed.data, context) };
  };
  return { tool, call, changes, state: () => state };
}

const todo = (id: string, status: TodoItem['status'], content = `task ${id}`) => ({ id, content, status });

test('replaces the whole list, persists it through onChange and restates it compactly', async () => {
  const { call, changes, state } = setup();
  const first = await call({
    todos: [
      todo('1', 'completed', 'Read config'),
      todo('2', 'in_progress', 'Add flag'),
      todo('3', 'pending', 'Run tests'),
    ],
  });
  assert.ok(first.parsed);
  assert.equal(first.result.status, 'success');
  assert.equal(
    renderForModel(first.result),
    'Todos updated: 1 completed, 1 in progress, 1 pending (3 total).\n[x] 1. Read config\n[>] 2. Add flag\n[ ] 3. Run tests',
  );
  assert.deepEqual(first.result.data, {
    todos: [
      todo('1', 'completed', 'Read config'),
      todo('2', 'in_progress', 'Add flag'),
      todo('3', 'pending', 'Run tests'),
    ],
    counts: { pending: 1, in_progress: 1, completed: 1 },
  });
  assert.equal(changes.length, 1);

  const second = await call({
    todos: [todo('2', 'completed', 'Add flag'), todo('3', 'in_progress', 'Run tests')],
  });
  assert.ok(second.parsed);
  assert.match(second.result.text, /^Todos updated: 1 completed, 1 in progress, 0 pending \(2 total\)\./);
  assert.match(second.result.text, /Changed: 2 in_progress→completed, 3 pending→in_progress, -1$/);
  assert.deepEqual(state(), [todo('2', 'completed', 'Add flag'), todo('3', 'in_progress', 'Run tests')]);

  const done = await call({
    todos: [todo('2', 'completed', 'Add flag'), todo('3', 'completed', 'Run tests')],
  });
  assert.ok(done.parsed);
  assert.match(done.result.text, /All items are completed\.$/);
});

test('more than one in_progress is INVALID_PARAM naming the items, and the state is left alone', async () => {
  const { call, changes } = setup();
  const out = await call({
    todos: [todo('a', 'in_progress'), todo('b', 'in_progress'), todo('c', 'pending')],
  });
  assert.ok(out.parsed);
  assert.equal(out.result.status, 'error');
  assert.equal(out.result.error?.code, 'INVALID_PARAM');
  assert.match(out.result.error?.message ?? '', /2 todos are in_progress \("a", "b"\); at most one may be/);
  assert.match(out.result.error?.suggestion ?? '', /Keep only the item you are working on/);
  assert.equal(changes.length, 0);
});

test(`more than ${MAX_TODOS} items is INVALID_PARAM; exactly ${MAX_TODOS} is fine`, async () => {
  const { call, changes } = setup();
  const many = Array.from({ length: MAX_TODOS + 1 }, (_, i) => todo(String(i + 1), 'pending'));
  const tooMany = await call({ todos: many });
  assert.ok(tooMany.parsed);
  assert.equal(tooMany.result.error?.code, 'INVALID_PARAM');
  assert.match(tooMany.result.error?.message ?? '', /21 items, the limit is 20/);
  assert.equal(changes.length, 0);

  const max = await call({ todos: many.slice(0, MAX_TODOS) });
  assert.ok(max.parsed);
  assert.equal(max.result.status, 'success');
  assert.equal(changes[0]?.length, MAX_TODOS);
});

test('duplicate ids are INVALID_PARAM', async () => {
  const { call } = setup();
  const out = await call({ todos: [todo('1', 'pending'), todo('2', 'pending'), todo('1', 'completed')] });
  assert.ok(out.parsed);
  assert.equal(out.result.error?.code, 'INVALID_PARAM');
  assert.match(out.result.error?.message ?? '', /Duplicate todo ids: "1"/);
});

test('empty content, unknown status and missing fields are rejected by the schema', async () => {
  const { call, changes } = setup();
  const empty = await call({ todos: [{ id: '1', content: '   ', status: 'pending' }] });
  assert.equal(empty.parsed, false);
  assert.deepEqual(empty.parsed ? [] : empty.issues, ['content must not be empty']);
  assert.equal((await call({ todos: [{ id: '1', content: 'x', status: 'done' }] })).parsed, false);
  assert.equal((await call({ todos: [{ id: '1', status: 'pending' }] })).parsed, false);
  assert.equal(changes.length, 0);
});

test('an empty list clears the todos', async () => {
  const { call, state } = setup();
  await call({ todos: [todo('1', 'in_progress')] });
  const cleared = await call({ todos: [] });
  assert.ok(cleared.parsed);
  assert.equal(cleared.result.text, 'Todo list cleared (0 items).');
  assert.deepEqual(state(), []);
});

test('a list with pending work and nothing in progress nudges the model to start the next item', async () => {
  const { call } = setup();
  const out = await call({ todos: [todo('1', 'completed'), todo('2', 'pending')] });
  assert.ok(out.parsed);
  assert.match(out.result.text, /Mark the next item in_progress when you start it\.$/);
});

test('the description says when to use it and when not to, and stays compact', () => {
  const { tool } = setup();
  assert.equal(tool.name, 'TodoWrite');
  assert.match(tool.description, /Use when/);
  assert.match(tool.description, /Don't use/);
  assert.ok(tool.description.length < 1000, `description is ${tool.description.length} chars`);
});
