import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type Anthropic from '@anthropic-ai/sdk';
import {
  ContextOverflowError,
  createContextEngine,
  type ContextEngineOptions,
} from '../../src/agent/context/engine.ts';
import type {
  AgentMessage,
  AssistantMessage,
  SummaryMessage,
  ToolResultMessage,
  UserMessage,
} from '../../src/agent/messages.ts';
import { countInputTokens, createPromptCache, promptBlocks } from '../emulator/cache.ts';
import type { MessagesRequest } from '../emulator/types.ts';
import { validateRequest } from '../emulator/validate.ts';

// Staged degradation (P4): each stage fires at its threshold and not before, never skips a stage, waits
// for a cold cache, persists its edits; compaction keeps red lines and identifiers exact; overflow.

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-stages-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

let seq = 0;
const nextId = (p: string) => `${p}${++seq}`;
const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
const TOOLS: Anthropic.Tool[] = [
  {
    name: 'Read',
    description: 'Read a file.',
    input_schema: { type: 'object', properties: { file_path: { type: 'string' } } },
  },
];
const MINUTE = 60_000;
const NOW = 10 * MINUTE;
const COLD = NOW - 6 * MINUTE;
const WARM = NOW - 10_000;

const FIRST =
  'Refactor the payment module in src/payments/charge.ts to use the new client. Never touch the migrations folder. ' +
  "Don't push to origin without asking me first. The failing build is commit 3f9a2c1d7e and the ticket is https://tracker.example.com/KEEL-481.";

function user(text: string): UserMessage {
  return { role: 'user', id: nextId('usr'), ts: 1, text };
}

function lines(count: number, tag: string): string {
  return Array.from(
    { length: count },
    (_, i) => `${tag} line ${i}: const value${i} = compute(${i}); // padding text`,
  ).join('\n');
}

function turn(
  name: string,
  input: Record<string, unknown>,
  content: string,
  opts: { text?: string; isError?: boolean } = {},
): [AssistantMessage, ToolResultMessage] {
  const useId = nextId('toolu_');
  return [
    {
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
    },
    {
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
        stats: { time_ms: 3 },
      },
    },
  ];
}

/** A session of Read turns; `resultLines` per result, optional reasoning text per turn. */
function readSession(
  turns: number,
  resultLines: (i: number) => number,
  text?: (i: number) => string,
): AgentMessage[] {
  const t: AgentMessage[] = [user(FIRST)];
  for (let i = 0; i < turns; i++) {
    t.push(
      ...turn(
        'Read',
        { file_path: `src/mod${i}.ts` },
        lines(resultLines(i), `mod${i}`),
        text ? { text: text(i) } : {},
      ),
    );
  }
  return t;
}

function engineFor(options: Partial<ContextEngineOptions> & { contextWindow: number }) {
  // The stage tests use the 5-minute TTL for the moving breakpoints, so a 6-minute gap is cold.
  return createContextEngine({
    tools: TOOLS,
    newId: () => nextId('ctx'),
    longCacheTtl: 'stable',
    ...options,
  });
}

async function tokensOf(transcript: AgentMessage[]): Promise<number> {
  const { request } = await engineFor({ contextWindow: 1e9 }).prepare({
    transcript,
    now: NOW,
    lastCallAt: WARM,
    signal: new AbortController().signal,
  });
  return request.estTokens;
}

/** An engine whose window puts `transcript` at exactly `utilization` of it. */
async function at(
  transcript: AgentMessage[],
  utilization: number,
  extra: Partial<ContextEngineOptions> = {},
) {
  const tokens = await tokensOf(transcript);
  return engineFor({ contextWindow: Math.floor(tokens / utilization), ...extra });
}

const run = (
  engine: ReturnType<typeof engineFor>,
  transcript: AgentMessage[],
  lastCallAt: number | undefined = COLD,
  overflow = false,
) => engine.prepare({ transcript, now: NOW, lastCallAt, overflow, signal: new AbortController().signal });

const asRequest = (r: { system: unknown; tools: unknown; messages: unknown }) =>
  ({
    model: 'm',
    max_tokens: 10,
    system: r.system,
    tools: r.tools,
    messages: r.messages,
  }) as unknown as MessagesRequest;

test('stage 1 soft-trims big old tool results at 30% of the window, not at 29%', async () => {
  const transcript = readSession(8, () => 200);
  const below = await run(await at(transcript, 0.29), transcript);
  assert.equal(below.request.stage, 0);
  assert.deepEqual(below.appended, []);

  const { request, appended } = await run(await at(transcript, 0.31), transcript);
  assert.equal(request.stage, 1);
  assert.equal(appended.length, 1);
  const edit = appended[0]!;
  assert.ok(
    edit.role === 'context_edit' && edit.stage === 1,
    "expected: edit.role === 'context_edit' && edit.stage === 1",
  );
  const results = transcript.filter((m): m is ToolResultMessage => m.role === 'tool_result');
  assert.deepEqual(
    edit.edits.map((e) => e.messageId),
    results.slice(0, 5).map((r) => r.id),
    'all but the last 3 turns',
  );
  const trimmed = edit.edits[0]!.content;
  assert.ok(trimmed.startsWith('mod0 line 0:'), 'head kept');
  assert.ok(trimmed.endsWith('mod0 line 199: const value199 = compute(199); // padding text'), 'tail kept');
  assert.match(trimmed, new RegExp(`lines trimmed.*MemorySearch \\(message ${results[0]!.id}\\)`));
  const body = JSON.stringify(request.messages);
  assert.ok(!body.includes('mod0 line 100:'), 'the middle is gone from the view');
  assert.ok(body.includes('mod7 line 100:'), 'recent results are untouched');
  assert.ok(
    transcript.some((m) => m.role === 'tool_result' && m.content.includes('mod0 line 100:')),
    'the transcript keeps the original (P8)',
  );
});

test('stages wait for a cold cache: at 80% with a warm cache nothing changes, at 95% it runs anyway', async () => {
  const transcript = readSession(8, () => 200);
  const warm = await run(await at(transcript, 0.8), transcript, WARM);
  assert.equal(warm.request.stage, 0);
  assert.deepEqual(warm.appended, []);
  const emergency = await run(await at(transcript, 0.96), transcript, WARM);
  assert.ok(emergency.request.stage >= 1, 'emergency ignores the cache');
  assert.equal(emergency.appended[0]!.role, 'context_edit');
});

test('stage 2 clears old results to a placeholder at 50%, not at 49%, and never before stage 1 ran', async () => {
  // Medium results: too small for stage 1, so only stage 2 can act on them.
  const medium = readSession(10, () => 40);
  const below = await run(await at(medium, 0.49), medium);
  assert.equal(below.request.stage, 0);
  assert.deepEqual(below.appended, []);
  const cleared = await run(await at(medium, 0.51), medium);
  assert.equal(cleared.request.stage, 2);
  const edit = cleared.appended[0]!;
  assert.ok(
    edit.role === 'context_edit' && edit.stage === 2,
    "expected: edit.role === 'context_edit' && edit.stage === 2",
  );
  assert.match(
    edit.edits[0]!.content,
    /^\[Old tool result cleared to save context: Read src\/mod0\.ts → success, 40 lines; full output: MemorySearch \(message res\d+\)\]$/,
  );

  // With one big result too: stage 1 runs first, then stage 2 on what is still too large.
  const mixed = readSession(10, (i) => (i === 0 ? 80 : 40));
  const both = await run(await at(mixed, 0.6), mixed);
  assert.deepEqual(
    both.appended.map((m) => m.role === 'context_edit' && m.stage),
    [1, 2],
  );
});

test('stage 3 compacts at 70%, not at 69%; the view is reproducible from the transcript (resume)', async () => {
  // Long reasoning that stages 1-2 cannot touch.
  const transcript = readSession(
    12,
    () => 3,
    (i) => `Reasoning ${i}: ${'we weigh the options carefully. '.repeat(60)}`,
  );
  const below = await run(await at(transcript, 0.69), transcript);
  assert.ok(
    below.appended.every((m) => m.role !== 'summary'),
    "expected: below.appended.every((m) => m.role !== 'summary')",
  );
  const engine = await at(transcript, 0.71, { summarize: async () => '## Decisions\n- Keep the old API.' });
  const { request, appended } = await run(engine, transcript);
  assert.equal(request.stage, 3);
  const summary = appended.find((m): m is SummaryMessage => m.role === 'summary');
  assert.ok(summary, 'a summary was appended');
  assert.equal(validateRequest(asRequest(request)).ok, true);

  // Later calls and a resumed session rebuild byte-identical messages from the transcript.
  const next = [...transcript, ...appended];
  const again = await run(engine, next, WARM);
  assert.deepEqual(again.appended, []);
  assert.equal(JSON.stringify(again.request.messages), JSON.stringify(request.messages));
  const resumed = await run(engineFor({ contextWindow: 1e9 }), next, WARM);
  assert.equal(JSON.stringify(resumed.request.messages), JSON.stringify(request.messages));
});

test("compaction keeps the first message's red lines verbatim and identifiers exact, archives the history, names the archive", async () => {
  const root = tempDir();
  const transcript: AgentMessage[] = [user(FIRST)];
  transcript.push(...turn('Read', { file_path: 'src/payments/charge.ts' }, lines(120, 'charge')));
  transcript.push(...turn('Edit', { file_path: 'src/payments/charge.ts', old: 'a', new: 'b' }, 'edited'));
  transcript.push(
    ...turn('Bash', { command: 'npm test -- payments' }, 'Tests failed\nexit code 1', { isError: true }),
  );
  for (let i = 0; i < 10; i++) {
    const text = `Step ${i}: ${'thinking about the refactor. '.repeat(80)}`;
    transcript.push(...turn('Read', { file_path: `src/mod${i}.ts` }, 'short', { text }));
  }
  transcript.push(user('Now update the docs too.'));
  let prompt = '';
  const engine = await at(transcript, 0.9, {
    workspaceRoot: root,
    sessionId: 'sess42',
    summarize: async (p) => {
      prompt = p;
      // A careless summarizer: paraphrases the red line and corrupts the hash and URL.
      return '## Decisions\n- Switched to the new client (commit 3f9a2c1d7f).\n## Verification status\n- tests ok\n## Open TODOs and rollback notes\n- docs\n## Progress\n- Ticket tracker.example.com/KEEL-48; migrations may be edited.';
    },
  });
  const { request, appended } = await run(engine, transcript);
  const summary = appended.find((m): m is SummaryMessage => m.role === 'summary')!;
  assert.ok(summary, 'a summary was appended');
  for (const exact of [
    'Never touch the migrations folder.',
    "Don't push to origin without asking me first.",
    '3f9a2c1d7e',
    'https://tracker.example.com/KEEL-481',
    'src/payments/charge.ts',
    'KEEL-481',
  ]) {
    assert.ok(summary.text.includes(exact), `summary keeps ${exact} verbatim`);
  }
  const redLines = summary.text.indexOf('red lines');
  assert.ok(redLines >= 0 && redLines < summary.text.indexOf('## Decisions'), 'red lines come first');
  assert.match(summary.text, /src\/payments\/charge\.ts \(Edit\)/, 'modified files listed by code');
  assert.match(summary.text, /npm test -- payments` → FAILED/, 'verification status recorded by code');
  assert.ok(summary.text.includes('Switched to the new client'), "the model's decisions are kept");

  assert.equal(summary.archivePath, path.join('.keel', 'archive', 'sess42-compaction-1.jsonl'));
  assert.ok(summary.text.includes(summary.archivePath), 'the summary names the archive');
  const archived = fs
    .readFileSync(path.join(root, summary.archivePath), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AgentMessage);
  assert.equal(archived[0]!.id, transcript[0]!.id);
  assert.ok(
    archived.some((m) => m.role === 'tool_result' && m.content.includes('charge line 119')),
    'full tool output archived',
  );
  assert.ok(
    summary.replaces.includes(transcript[0]!.id),
    'expected: summary.replaces.includes(transcript[0]!.id)',
  );

  assert.ok(!prompt.includes('charge line 60'), 'file reads are dropped from the summarizer input');
  assert.ok(prompt.includes('Tests failed'), 'errors are kept in detail');

  const first = request.messages[0]!;
  assert.equal(first.role, 'user');
  assert.ok(
    (first.content as Anthropic.TextBlockParam[])[0]!.text.startsWith('<session-summary'),
    'the view starts with the summary',
  );
  assert.ok(
    JSON.stringify(request.messages).includes('Now update the docs too.'),
    'the newest request is kept',
  );
  assert.equal(validateRequest(asRequest(request)).ok, true, 'no orphaned tool_result after the cut');
});

test('a summary is immutable: a second compaction adds a new one and keeps the first byte for byte', async () => {
  const root = tempDir();
  const reasoning = (i: number) => `Note ${i}: ${'details of the work so far. '.repeat(60)}`;
  const transcript = readSession(12, () => 3, reasoning);
  const engine = await at(transcript, 0.9, { workspaceRoot: root, sessionId: 's' });
  const first = await run(engine, transcript);
  const summary1 = first.appended.find((m): m is SummaryMessage => m.role === 'summary')!;
  assert.ok(summary1.text.includes('Built from the log alone'), 'works without a summarizer');
  assert.ok(
    summary1.text.includes('Never touch the migrations folder.'),
    "expected: summary1.text.includes('Never touch the migrations folder.')",
  );
  const grown: AgentMessage[] = [...transcript, ...first.appended];
  for (let i = 0; i < 14; i++)
    grown.push(...turn('Read', { file_path: `src/late${i}.ts` }, 'x', { text: reasoning(100 + i) }));
  const second = await run(engine, grown);
  const summary2 = second.appended.find((m): m is SummaryMessage => m.role === 'summary');
  assert.ok(summary2, 'second compaction');
  assert.ok(!summary2.replaces.includes(summary1.id), 'summaries are never re-summarised');
  const blocks = second.request.messages[0]!.content as Anthropic.TextBlockParam[];
  assert.equal(blocks[0]!.text, summary1.text, 'first summary unchanged and first');
  assert.equal(blocks[1]!.text, summary2.text);
  assert.ok(
    fs.existsSync(path.join(root, '.keel/archive/s-compaction-2.jsonl')),
    "expected: fs.existsSync(path.join(root, '.keel/archive/s-compaction-2.jsonl'))",
  );
});

test('a failing summarizer still yields a summary built from the log, red lines included', async () => {
  const transcript = readSession(
    12,
    () => 3,
    (i) => `Reasoning ${i}: ${'more words here. '.repeat(80)}`,
  );
  const engine = await at(transcript, 0.9, {
    summarize: async () => {
      throw new Error('overloaded');
    },
  });
  const { appended } = await run(engine, transcript);
  const summary = appended.find((m): m is SummaryMessage => m.role === 'summary')!;
  assert.ok(
    summary.text.includes('The model summary failed: overloaded'),
    "expected: summary.text.includes('The model summary failed: overloaded')",
  );
  assert.ok(
    summary.text.includes("Don't push to origin without asking me first."),
    'expected: summary.text.includes("Don\'t push to origin without asking me first.")',
  );
});

test('overflow compacts even with a warm cache and low usage; a 4th overflow in a row fails clearly', async () => {
  const transcript = readSession(
    12,
    () => 50,
    (i) => `Reasoning ${i}: ${'words '.repeat(100)}`,
  );
  const engine = engineFor({ contextWindow: 1e7 });
  const first = await run(engine, transcript, WARM, true);
  assert.equal(first.request.stage, 3);
  assert.ok(
    first.appended.some((m) => m.role === 'summary'),
    "expected: first.appended.some((m) => m.role === 'summary')",
  );
  let grown: AgentMessage[] = [...transcript, ...first.appended];
  for (let i = 0; i < 2; i++) {
    grown.push(...turn('Read', { file_path: `x${i}` }, lines(30, `x${i}`), { text: 'more' }));
    grown.push(...turn('Read', { file_path: `y${i}` }, lines(30, `y${i}`), { text: 'more' }));
    const retry = await run(engine, grown, WARM, true);
    assert.ok(retry.request.stage >= 1, 'expected: retry.request.stage >= 1');
    grown = [...grown, ...retry.appended];
  }
  await assert.rejects(run(engine, grown, WARM, true), ContextOverflowError);
  const normal = await run(engine, grown, WARM, false);
  assert.equal(normal.request.stage, 0, 'a normal call resets the streak');
});

test('a pruning pass on a cold cache still reads everything up to the 1 h anchor', async () => {
  // Stages 1-2 run when the 5-minute cache has expired; the anchor (1 h TTL) written when it first
  // appeared still holds, so such a pass rewrites only what follows it.
  const clock = { now: 0 };
  const cache = createPromptCache({ now: () => clock.now, ttlMs: 5 * MINUTE, minCacheableTokens: 1 });
  const transcript: AgentMessage[] = [user(FIRST)];
  const engine = engineFor({ contextWindow: 30_000 });
  const events: { read: number; fixed: number; anchorTokens: number }[] = [];
  let previous: MessagesRequest | undefined;
  let lastCallAt = 0;
  for (let i = 0; i < 80 && events.length < 3; i++) {
    clock.now += i % 6 === 5 ? 6 * MINUTE : 15_000; // the user steps away now and then
    const { request, appended } = await engine.prepare({
      transcript,
      now: clock.now,
      lastCallAt,
      signal: new AbortController().signal,
    });
    lastCallAt = clock.now;
    transcript.push(...appended);
    const req = asRequest(request);
    const usageOut = cache.account(req);
    if (request.stage > 0 && request.stage < 3 && previous) {
      // Tokens up to the previous request's long-TTL conversation breakpoint (the anchor).
      const blocks = promptBlocks(previous);
      const conversationStart = promptBlocks({ ...previous, messages: [] }).length;
      let anchorTokens = 0;
      let sum = 0;
      blocks.forEach((b, k) => {
        sum += b.tokens;
        if (k >= conversationStart && b.cacheControl?.ttl === '1h') anchorTokens = sum;
      });
      events.push({
        read: usageOut.cache_read_input_tokens,
        fixed: countInputTokens({ ...req, messages: [] }),
        anchorTokens,
      });
    }
    previous = req;
    transcript.push(
      ...turn('Read', { file_path: `src/f${i}.ts` }, lines(40, `f${i}`), { text: `step ${i}` }),
    );
  }
  assert.ok(events.length >= 2, `pruning passes happened (${events.length})`);
  for (const event of events.slice(1)) {
    assert.ok(event.anchorTokens > event.fixed, 'an anchor stood in the conversation');
    assert.ok(
      event.read >= event.anchorTokens,
      `read ${event.read} covers the anchor at ${event.anchorTokens}`,
    );
  }
});

test('the token estimate equals a full count of every request, through edits, summaries and tails', async () => {
  // The estimate is built from per-message figures cached across calls; it must never drift from
  // counting the request the model actually receives (the emulator's count uses the same unit).
  const transcript: AgentMessage[] = [user(FIRST)];
  const engine = engineFor({ contextWindow: 12_000, summarize: async () => '## Decisions\n- Go on.' });
  const stages = new Set<number>();
  for (let i = 0; i < 60; i++) {
    const now = NOW + i * 10 * MINUTE; // cold every call: every stage gets its chance
    const tail = i % 3 === 0 ? [`runtime note ${i}`, ''] : undefined;
    const { request, appended } = await engine.prepare({
      transcript,
      now,
      lastCallAt: now - 6 * MINUTE,
      signal: new AbortController().signal,
      ...(tail ? { volatileTail: tail } : {}),
    });
    transcript.push(...appended);
    stages.add(request.stage);
    assert.equal(request.estTokens, countInputTokens(asRequest(request)), `call ${i}`);
    transcript.push(
      ...turn('Read', { file_path: `src/f${i}.ts` }, lines(i % 4 === 0 ? 120 : 15, `f${i}`), {
        text: `step ${i} ✓`,
      }),
    );
    if (i % 7 === 6) transcript.push({ ...user(`Also check part ${i}.`), mentions: [`docs/p${i}.md`] });
  }
  for (const stage of [0, 1, 2, 3]) assert.ok(stages.has(stage), `stage ${stage} was exercised`);
});
