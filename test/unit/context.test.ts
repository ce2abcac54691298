import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, mock, test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import { countBreakpoints } from '../../src/agent/context/breakpoints.ts';
import { createContextEngine, type PreparedRequest } from '../../src/agent/context/engine.ts';
import { computeMetrics } from '../../src/agent/context/metrics.ts';
import type { ModelCallRecord } from '../../src/agent/events.ts';
import type {
  AgentMessage,
  AssistantMessage,
  ToolResultMessage,
  UserMessage,
} from '../../src/agent/messages.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { discoverSkills } from '../../src/agent/skills/discover.ts';
import type { AnyToolDefinition, ToolContext } from '../../src/agent/tools/protocol.ts';
import { renderForModel } from '../../src/agent/tools/protocol.ts';
import { toApiTool } from '../../src/agent/tools/registry.ts';
import { createSkillTool } from '../../src/agent/tools/skill.ts';
import { countInputTokens, createPromptCache } from '../emulator/cache.ts';
import type { MessagesRequest } from '../emulator/types.ts';
import { validateRequest } from '../emulator/validate.ts';

// Prompt assembly (P1), cache breakpoints, the fixed-prefix budget, @file reminders, recap (P5), metrics.

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-ctx-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

let seq = 0;
const nextId = (p: string) => `${p}${++seq}`;
const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

function user(text: string, extra: Partial<UserMessage> = {}): UserMessage {
  return { role: 'user', id: nextId('usr'), ts: 1, text, ...extra };
}
function toolTurn(
  name: string,
  input: Record<string, unknown>,
  content: string,
  opts: { isError?: boolean; code?: string; timeMs?: number; text?: string } = {},
): [AssistantMessage, ToolResultMessage] {
  const useId = nextId('toolu_');
  const assistant: AssistantMessage = {
    role: 'assistant',
    id: nextId('msg'),
    ts: 1,
    model: 'm',
    stopReason: 'tool_use',
    usage,
    content: [
      ...(opts.text ? [{ type: 'text' as const, text: opts.text }] : []),
      { type: 'tool_use', id: useId, name, input },
    ],
  };
  const result: ToolResultMessage = {
    role: 'tool_result',
    id: nextId('res'),
    ts: 1,
    toolUseId: useId,
    toolName: name,
    content,
    isError: opts.isError ?? false,
    result: {
      status: opts.isError ? 'error' : 'success',
      data: null,
      text: content,
      stats: { time_ms: opts.timeMs ?? 5 },
      ...(opts.isError
        ? { error: { code: (opts.code ?? 'NO_MATCH') as 'NO_MATCH', message: content, suggestion: 's' } }
        : {}),
    },
  };
  return [assistant, result];
}

const SAMPLE_TOOLS: Anthropic.Tool[] = [
  {
    name: 'Read',
    description: 'Read a file.',
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'Edit',
    description: 'Edit a file.',
    input_schema: { type: 'object', properties: { path: { type: 'string' }, old: { type: 'string' } } },
  },
  {
    name: 'Bash',
    description: 'Run a command.',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
];

function asRequest(r: PreparedRequest): MessagesRequest {
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 1024,
    system: r.system,
    tools: r.tools,
    messages: r.messages,
  } as unknown as MessagesRequest;
}

const prepare = (
  engine: ReturnType<typeof createContextEngine>,
  transcript: AgentMessage[],
  now = 1_000,
  lastCallAt = now - 1000,
) => engine.prepare({ transcript, now, lastCallAt, signal: new AbortController().signal });

function frozenPart(r: PreparedRequest): string {
  return JSON.stringify({ tools: r.tools, system: r.system });
}

test('the system prompt is layered: red lines, then how to decide, how to recover, AGENTS.md, skill index', () => {
  const root = tempDir();
  fs.mkdirSync(path.join(root, '.agents/skills/release-notes'), { recursive: true });
  fs.writeFileSync(
    path.join(root, '.agents/skills/release-notes/SKILL.md'),
    "---\nname: release-notes\ndescription: Use when drafting release notes. Don't use for commit messages.\n---\nSteps.\n",
  );
  const skills = discoverSkills({ workspaceRoot: root, userDir: null });
  const engine = createContextEngine({
    tools: SAMPLE_TOOLS,
    contextWindow: 200_000,
    projectRules: 'Use pnpm, never npm.',
    skills,
  });
  const text = engine.systemText;
  const order = [
    '# Red lines',
    'Never guess',
    'Never leave the workspace',
    'Ask before irreversible',
    'Not verified = not done',
    '# How to decide',
    '# How to recover',
    'NOT_READ',
    'CONFLICT',
    'NO_MATCH',
    '3 failures in a row',
    "# Project rules (AGENTS.md: the repository's text, not the user's words)",
    'Use pnpm, never npm.',
    '# Skills',
    'release-notes: Use when drafting release notes.',
  ];
  let last = -1;
  for (const marker of order) {
    const at = text.indexOf(marker);
    assert.ok(at > last, `"${marker}" must come after the previous layer (at ${at}, previous ${last})`);
    last = at;
  }
  assert.doesNotMatch(text, /\b20\d\d-\d\d-\d\d\b|\d\d:\d\d/, 'no date or clock in the prefix');
  assert.ok(!text.includes(root), 'no workspace path or listing in the prefix');
  assert.ok(!text.includes('Steps.'), 'skill bodies never enter the system prompt');
});

test('tools are sorted and serialised canonically, whatever order and key order they arrive in', async () => {
  const shuffled: Anthropic.Tool[] = [
    {
      input_schema: { required: ['command'], properties: { command: { type: 'string' } }, type: 'object' },
      description: 'Run a command.',
      name: 'Bash',
    },
    SAMPLE_TOOLS[1]!,
    SAMPLE_TOOLS[0]!,
  ];
  const a = await prepare(createContextEngine({ tools: SAMPLE_TOOLS, contextWindow: 200_000 }), [user('hi')]);
  const b = await prepare(createContextEngine({ tools: shuffled, contextWindow: 200_000 }), [user('hi')]);
  assert.deepEqual(
    a.request.tools.map((t) => t.name),
    ['Bash', 'Edit', 'Read'],
  );
  assert.equal(
    JSON.stringify(a.request.tools.map((t) => t.description)),
    JSON.stringify(b.request.tools.map((t) => t.description)),
  );
  assert.equal(
    JSON.stringify(b.request.tools[0]),
    '{"description":"Run a command.","input_schema":{"properties":{"command":{"type":"string"}},"required":["command"],"type":"object"},"name":"Bash"}',
  );
});

test('system prompt and tools stay byte-identical across a session: skill loaded, skill file changed, day boundary passed', async (t) => {
  const root = tempDir();
  const skillDir = path.join(root, '.agents/skills/db-migrations');
  fs.mkdirSync(skillDir, { recursive: true });
  fs.writeFileSync(
    path.join(skillDir, 'SKILL.md'),
    "---\nname: db-migrations\ndescription: Use when writing a database migration. Don't use for queries.\n---\nAlways write a down migration.\n",
  );
  const day1 = Date.UTC(2025, 0, 1, 23, 59, 0);
  t.mock.timers.enable({ apis: ['Date'], now: day1 });
  const index = discoverSkills({ workspaceRoot: root, userDir: null });
  const host = createNodeHost({ workspace: root, approvals: createPolicyApprovals('never') });
  const skillTool = createSkillTool(index);
  const tools = [skillTool as unknown as AnyToolDefinition].map(toApiTool).concat(SAMPLE_TOOLS);
  const engine = createContextEngine({
    tools,
    contextWindow: 200_000,
    skills: index,
    projectRules: 'Rules.',
  });

  const transcript: AgentMessage[] = [user('add a migration for the users table')];
  const first = await prepare(engine, transcript, day1, undefined);

  // The model loads the skill; the body arrives as a tool result.
  const [call, placeholder] = toolTurn('Skill', { name: 'db-migrations' }, '');
  const ctx = {
    host,
    sessionId: 's',
    toolUseId: 'x',
    signal: new AbortController().signal,
    guard: createPathGuard({ roots: [root], stateDir: host.stateDir }),
  } as unknown as ToolContext;
  const loaded = await skillTool.execute({ name: 'db-migrations' }, ctx);
  transcript.push(call, { ...placeholder, result: loaded, content: renderForModel(loaded) });
  const second = await prepare(engine, transcript, day1 + 30_000);
  assert.ok(
    JSON.stringify(second.request.messages).includes('Always write a down migration.'),
    'body is in the tool result',
  );

  // The user edits the skill on disk; the day changes.
  fs.writeFileSync(
    path.join(skillDir, 'SKILL.md'),
    '---\nname: db-migrations\ndescription: CHANGED description that must not leak.\n---\nNew body.\n',
  );
  const day2 = day1 + 2 * 60_000;
  t.mock.timers.setTime(day2);
  transcript.push(...toolTurn('Read', { path: 'db/schema.sql' }, 'create table users (id int);'));
  const third = await prepare(engine, transcript, day2);

  assert.equal(frozenPart(second.request), frozenPart(first.request));
  assert.equal(frozenPart(third.request), frozenPart(first.request));
  assert.equal(third.request.prefixHash, first.request.prefixHash);
  assert.ok(!frozenPart(third.request).includes('CHANGED'), 'the index snapshot is locked at session start');
  assert.ok(!frozenPart(third.request).includes('Always write'), 'the body never enters the system prompt');

  // A fresh engine built on another day from the same inputs produces the same bytes: no clock inside.
  const again = createContextEngine({ tools, contextWindow: 200_000, skills: index, projectRules: 'Rules.' });
  assert.equal(again.systemText, engine.systemText);
  assert.equal(again.prefixHash, engine.prefixHash);
  mock.timers.reset();
});

test('breakpoints: at most 4, system end + front summary + previous end + last block; the next call reads the whole previous prompt', async () => {
  const engine = createContextEngine({ tools: SAMPLE_TOOLS, contextWindow: 200_000 });
  const cache = createPromptCache({ now: () => 0, ttlMs: 300_000, minCacheableTokens: 1 });
  const summary: AgentMessage = {
    role: 'summary',
    id: 'sum1',
    ts: 1,
    text: 'Summary of earlier work.',
    replaces: ['old1'],
    archivePath: 'a',
  };
  const transcript: AgentMessage[] = [{ ...user('old'), id: 'old1' }, summary, user('go on')];
  let previousTotal = 0;
  for (let i = 0; i < 30; i++) {
    const { request } = await engine.prepare({
      transcript,
      now: 1000 + i,
      lastCallAt: 999 + i,
      signal: new AbortController().signal,
      volatileTail: [`runtime note ${i}`],
    });
    const req = asRequest(request);
    assert.equal(validateRequest(req).ok, true, 'the API accepts the request');
    assert.ok(countBreakpoints(request) <= 4, `call ${i} has ${countBreakpoints(request)} breakpoints`);
    assert.equal(request.system.at(-1)?.cache_control?.type, 'ephemeral');
    const first = request.messages[0]!.content as Anthropic.ContentBlockParam[];
    assert.ok(
      first.some((b) => b.type === 'text' && b.text === summary.text && b.cache_control),
      'the summary is a breakpoint',
    );
    const lastBlocks = request.messages.at(-1)!.content as Anthropic.ContentBlockParam[];
    assert.deepEqual(
      lastBlocks.at(-1),
      { type: 'text', text: `runtime note ${i}` },
      'volatile text comes after the last breakpoint',
    );
    assert.ok(
      (lastBlocks.at(-2) as { cache_control?: unknown }).cache_control,
      'the block before it is the last breakpoint',
    );
    const usageOut = cache.account(req);
    if (i > 0) {
      assert.equal(
        usageOut.cache_read_input_tokens,
        previousTotal,
        `call ${i} reads everything the previous call sent before its volatile tail`,
      );
    }
    previousTotal =
      countInputTokens(req) -
      Math.ceil(
        Buffer.byteLength(
          JSON.stringify({ role: 'user', block: { text: `runtime note ${i}`, type: 'text' } }),
        ) / 4,
      );
    // Many parallel tool calls per turn: the read must not depend on the API's 20-block lookback.
    const uses = Array.from({ length: 12 }, () => toolTurn('Read', { path: `f${i}.ts` }, `content ${i}`));
    transcript.push({ ...uses[0]![0], content: uses.flatMap(([a]) => a.content) }, ...uses.map(([, r]) => r));
  }
});

test('@file mentions become a reminder to read the file, never its content', async () => {
  const root = tempDir();
  fs.writeFileSync(path.join(root, 'secret.ts'), 'export const UNIQUE_CONTENT_MARKER = 42;\n');
  const engine = createContextEngine({ tools: SAMPLE_TOOLS, contextWindow: 200_000, workspaceRoot: root });
  const { request } = await prepare(engine, [user('what does this do?', { mentions: ['secret.ts'] })]);
  const body = JSON.stringify(request.messages);
  assert.ok(body.includes('secret.ts') && /Read/.test(body), 'the model is told to read the file');
  assert.ok(!body.includes('UNIQUE_CONTENT_MARKER'), 'the file content is not injected');
});

test('recap: after TodoWrite, after 10 tool calls without a todo update, after a long run, and on a task switch', async () => {
  const engine = createContextEngine({ tools: SAMPLE_TOOLS, contextWindow: 200_000 });
  const todos = {
    todos: [
      { id: '1', content: 'Write the parser', status: 'completed' },
      { id: '2', content: 'Wire the CLI flag', status: 'in_progress' },
      { id: '3', content: 'Run the test suite', status: 'pending' },
    ],
  };
  const transcript: AgentMessage[] = [user('build it'), ...toolTurn('TodoWrite', todos, 'ok')];
  const afterTodo = engine.afterTools(transcript);
  assert.equal(afterTodo.length, 1);
  const recap = afterTodo[0]!;
  assert.ok(
    recap.role === 'reminder' &&
      recap.text.includes('[1/3 done]') &&
      recap.text.includes('Wire the CLI flag') &&
      recap.text.includes('Run the test suite'),
    "expected: recap.role === 'reminder' && recap.text.includes('[1/3 done]') && recap.text.includes('Wire the CLI flag') && recap.text.includes('Run the test suite')",
  );
  transcript.push(recap);

  for (let i = 1; i <= 9; i++) {
    transcript.push(...toolTurn('Read', { path: `f${i}` }, 'x'));
    assert.equal(engine.afterTools(transcript).length, 0, `no recap after ${i} calls`);
  }
  transcript.push(...toolTurn('Read', { path: 'f10' }, 'x'));
  const stale = engine.afterTools(transcript);
  assert.equal(stale.length, 1, 'recap after 10 tool calls without a todo update');
  transcript.push(...stale);

  transcript.push(...toolTurn('Bash', { command: 'npm test' }, 'ok', { timeMs: 95_000 }));
  assert.equal(engine.afterTools(transcript).length, 1, 'recap after a long tool run');

  transcript.push({
    role: 'assistant',
    id: 'done',
    ts: 1,
    model: 'm',
    stopReason: 'end_turn',
    usage,
    content: [{ type: 'text', text: 'paused' }],
  });
  transcript.push(user('also add a --verbose flag'));
  const { appended, request } = await prepare(engine, transcript);
  assert.equal(appended.length, 1, 'task switch restates the plan');
  const last = request.messages.at(-1)!.content as Anthropic.TextBlockParam[];
  assert.ok(last.at(-1)!.text.includes('Wire the CLI flag'), 'the recap is the very end of the context');
});

test('two errors of the same class in a row re-inject the guide once; different classes do not', () => {
  const root = tempDir();
  const dir = path.join(root, '.agents/skills/edit-help');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'SKILL.md'),
    '---\nname: edit-help\ndescription: Use when edits fail.\nmetadata:\n  error-codes: NO_MATCH\n---\nCOPY THE EXACT LINES.\n',
  );
  const skills = discoverSkills({ workspaceRoot: root, userDir: null });
  const engine = createContextEngine({ tools: SAMPLE_TOOLS, contextWindow: 200_000, skills });
  const transcript: AgentMessage[] = [user('edit it')];
  transcript.push(...toolTurn('Edit', { path: 'a' }, 'not found', { isError: true, code: 'NO_MATCH' }));
  assert.equal(engine.afterTools(transcript).length, 0);
  transcript.push(...toolTurn('Read', { path: 'a' }, 'TIMEOUT', { isError: true, code: 'TIMEOUT' }));
  assert.equal(engine.afterTools(transcript).length, 0, 'different classes');
  transcript.push(...toolTurn('Read', { path: 'a' }, 'TIMEOUT', { isError: true, code: 'TIMEOUT' }));
  const timeout = engine.afterTools(transcript);
  assert.equal(timeout.length, 1);
  assert.ok(
    timeout[0]!.role === 'reminder' &&
      timeout[0]!.text.includes('TIMEOUT') &&
      !timeout[0]!.text.includes('COPY THE EXACT'),
    "expected: timeout[0]!.role === 'reminder' && timeout[0]!.text.includes('TIMEOUT') && !timeout[0]!.text.includes('COPY THE EXACT')",
  );
  transcript.push(...toolTurn('Edit', { path: 'a' }, 'not found', { isError: true, code: 'NO_MATCH' }));
  transcript.push(...toolTurn('Edit', { path: 'a' }, 'not found', { isError: true, code: 'NO_MATCH' }));
  const guide = engine.afterTools(transcript);
  assert.equal(guide.length, 1);
  assert.ok(
    guide[0]!.role === 'reminder' && guide[0]!.text.includes('COPY THE EXACT LINES.'),
    'the matching skill body is re-injected',
  );
  transcript.push(...guide);
  transcript.push(...toolTurn('Edit', { path: 'a' }, 'not found', { isError: true, code: 'NO_MATCH' }));
  assert.equal(engine.afterTools(transcript).length, 0, 'once per streak');
});

function record(over: Partial<ModelCallRecord>): ModelCallRecord {
  return {
    stage: 0,
    message_count: 1,
    est_tokens: 0,
    prefix_hash: 'h',
    cache_read: 0,
    cache_write: 0,
    input: 0,
    output: 0,
    latency_ms: 1,
    ttft_ms: 1,
    model: 'm',
    cost_usd: 0.01,
    context_window: 1000,
    ok: true,
    ...over,
  };
}

test('metrics: stability, cache hit, hit of limit, stage distribution and utilization from call records', () => {
  const records = [
    record({ cache_write: 100, input: 10, output: 20 }),
    record({ cache_read: 110, cache_write: 30, input: 10, output: 20 }),
    record({ cache_read: 150, cache_write: 30, input: 10, output: 20, stage: 1 }),
    record({ prefix_hash: 'other', cache_read: 0, cache_write: 50, input: 5, output: 20, stage: 3 }),
    record({ ok: false, input: 999 }),
  ];
  const m = computeMetrics(records, { loopBlocks: 2 });
  assert.equal(m.calls, 4);
  assert.equal(m.prefix_stability_ratio, Math.round((2 / 3) * 10_000) / 10_000);
  assert.equal(m.cache_hit_ratio, Math.round((260 / (35 + 260 + 210)) * 10_000) / 10_000);
  // limits: first call = what it read (0); then min(prompt, previous prompt + previous output).
  const limits = [0, Math.min(150, 110 + 20), Math.min(190, 150 + 20), Math.min(55, 190 + 20)];
  assert.equal(m.cache_hit_of_limit, Math.round((260 / limits.reduce((a, b) => a + b, 0)) * 10_000) / 10_000);
  assert.deepEqual(m.pruning_stage_distribution, { '0': 2, '1': 1, '2': 0, '3': 1 });
  assert.equal(m.loop_detection_blocks, 2);
  assert.equal(m.context_utilization.max, 0.19);
  assert.deepEqual(m.tokens, { input: 35, output: 80, cache_read: 260, cache_write: 210 });
  assert.equal(
    computeMetrics(records, { limits: [110, 150, 190, 55] }).cache_hit_of_limit,
    Math.round((260 / 505) * 10_000) / 10_000,
  );
});
