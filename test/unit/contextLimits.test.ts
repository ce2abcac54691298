import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { type CacheTtlPolicy, placeBreakpoints } from '../../src/agent/context/breakpoints.ts';
import { extractIdentifiers, renderSummary } from '../../src/agent/context/compaction.ts';
import {
  type ContextEngineOptions,
  createContextEngine,
  requestPrefixHash,
} from '../../src/agent/context/engine.ts';
import { mergeSummaries } from '../../src/agent/context/mergeSummaries.ts';
import type { InContextSummarizeRequest } from '../../src/agent/context/summarizeRequest.ts';
import type { AgentEvent, ModelCallRecord } from '../../src/agent/events.ts';
import type {
  AgentMessage,
  AssistantMessage,
  SummaryMessage,
  ToolResultMessage,
  UserMessage,
} from '../../src/agent/messages.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { canonicalJson } from '../emulator/cache.ts';
import { type MessagesRequest, startEmulator } from '../emulator/server.ts';
import { validateRequest } from '../emulator/validate.ts';

// Limits the API and long sessions impose: cache TTL order, what prefix_hash measures, a newest batch
// too big for the window, summaries piling up over many compactions, identifiers past the cap, and
// a skill guide that pruning or compaction took away.

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-limits-')));
  dirs.push(dir);
  return dir;
}

let seq = 0;
const nextId = (p: string) => `${p}${++seq}`;
const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
const MINUTE = 60_000;
const TOOLS: Anthropic.Tool[] = [
  {
    name: 'Read',
    description: 'Read a file.',
    input_schema: { type: 'object', properties: { file_path: { type: 'string' } } },
  },
];
const RED_LINE = 'Never touch the migrations folder.';
const FIRST = `Refactor src/payments/charge.ts to the new client. ${RED_LINE} Ticket https://tracker.example.com/KEEL-481.`;

function user(text: string): UserMessage {
  return { role: 'user', id: nextId('usr'), ts: 1, text };
}

function lines(count: number, tag: string): string {
  return Array.from({ length: count }, (_, i) => `${tag} line ${i}: const v${i} = f(${i}); // padding`).join(
    '\n',
  );
}

function turn(
  name: string,
  input: Record<string, unknown>,
  content: string,
  data: unknown = null,
  text?: string,
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
        ...(text ? [{ type: 'text' as const, text }] : []),
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
      isError: false,
      result: { status: 'success', data, text: content, stats: { time_ms: 1 } },
    },
  ];
}

const asRequest = (r: { system: unknown; tools: unknown; messages: unknown }): MessagesRequest =>
  ({ model: 'claude-sonnet-4-5', max_tokens: 100, ...r }) as unknown as MessagesRequest;

function ttls(r: { system: readonly object[]; messages: readonly Anthropic.MessageParam[] }): string[] {
  const out: string[] = [];
  const of = (b: object) => (b as { cache_control?: { ttl?: string } }).cache_control;
  for (const b of r.system) if (of(b)) out.push(of(b)!.ttl ?? '5m');
  for (const m of r.messages) {
    if (typeof m.content === 'string') continue;
    for (const b of m.content) if (of(b)) out.push(of(b)!.ttl ?? '5m');
  }
  return out;
}

test('cache TTLs never increase: the anchor landing after the previous end promotes it (the probe case)', () => {
  // The probe that broke: sys:1h 0.0:5m 1.1:1h 2.0:5m — the first prunable result is in the newest turn.
  const [reply, result] = turn('Read', { file_path: 'big.ts' }, lines(200, 'big'));
  const messages: Anthropic.MessageParam[] = [
    { role: 'user', content: [{ type: 'text', text: FIRST }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading it.' },
        { type: 'tool_use', id: result.toolUseId, name: 'Read', input: {} },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: result.toolUseId, content: 'x' }] },
  ];
  void reply;
  for (const policy of ['all', 'stable', 'none'] as CacheTtlPolicy[]) {
    const placed = placeBreakpoints({
      system: [{ type: 'text', text: 'system' }],
      messages,
      editableToolUseIds: new Set([result.toolUseId]),
      longTtl: policy,
    });
    const order = ttls(placed);
    assert.equal(order.length, 4, `${policy}: four markers`);
    for (let i = 1; i < order.length; i++) {
      assert.ok(!(order[i] === '1h' && order[i - 1] === '5m'), `${policy}: ${order.join(' ')}`);
    }
    assert.equal(order[2], policy === 'none' ? '5m' : '1h', `${policy}: the anchor keeps its TTL`);
    const check = validateRequest(asRequest({ ...placed, tools: TOOLS }));
    assert.ok(check.ok, `${policy}: ${check.ok ? '' : check.message}`);
  }
});

test('the emulator rejects a 1h marker after a 5m one with the API 400, tools → system → messages', async () => {
  const emu = await startEmulator({});
  try {
    const client = new Anthropic({ apiKey: 'k', baseURL: emu.url, maxRetries: 0 });
    const bad = (body: Record<string, unknown>) =>
      client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 10, ...body } as never);
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        {
          system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }],
          messages: [
            {
              role: 'user',
              content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '1h' } }],
            },
          ],
        },
        /^messages\.0\.content\.0\.cache_control\.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block\. Note that blocks are processed in the following order: `tools`, `system`, `messages`\.$/,
      ],
      [
        {
          tools: [{ ...TOOLS[0], cache_control: { type: 'ephemeral', ttl: '5m' } }],
          system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral', ttl: '1h' } }],
          messages: [{ role: 'user', content: 'hi' }],
        },
        /^system\.0\.cache_control\.ttl: a ttl='1h'/,
      ],
    ];
    for (const [body, pattern] of cases) {
      await assert.rejects(bad(body), (e: unknown) => {
        assert.ok(e instanceof Anthropic.BadRequestError, String(e));
        const error = (e.error as { error?: { type?: string; message?: string } }).error;
        assert.equal(error?.type, 'invalid_request_error');
        assert.match(error?.message ?? '', pattern);
        return true;
      });
    }
    // Non-increasing is fine: 1h, 1h, 5m.
    const okReply = await bad({
      system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a', cache_control: { type: 'ephemeral', ttl: '1h' } },
            { type: 'text', text: 'b', cache_control: { type: 'ephemeral' } },
          ],
        },
      ],
    });
    assert.equal(okReply.type, 'message');
  } finally {
    await emu.close();
  }
});

test('every request the engine builds is valid for the API under each TTL policy, summary requests too', async () => {
  for (const policy of ['all', 'stable', 'none'] as CacheTtlPolicy[]) {
    const asked: InContextSummarizeRequest[] = [];
    const engine = createContextEngine({
      tools: TOOLS,
      contextWindow: 14_000,
      newId: () => nextId('ctx'),
      longCacheTtl: policy,
      summarizeInContext: async (request) => {
        asked.push(request);
        return '## Decisions\n- Keep going.';
      },
      summarize: async () => '## Decisions\n- Keep going.',
    });
    const transcript: AgentMessage[] = [user(FIRST)];
    for (let i = 0; i < 60; i++) {
      // Mostly warm, a cold gap now and then (each policy's own cache life), one huge batch.
      const cold = i % 25 === 24;
      const now = i * 2 * 60 * MINUTE;
      const { request, appended } = await engine.prepare({
        transcript,
        now,
        lastCallAt: cold ? now - 2 * 60 * MINUTE : now - 10_000,
        signal: new AbortController().signal,
        ...(i % 4 === 0 ? { volatileTail: [`note ${i}`] } : {}),
      });
      transcript.push(...appended);
      const check = validateRequest(asRequest(request));
      assert.ok(check.ok, `${policy} call ${i}: ${check.ok ? '' : check.message}`);
      transcript.push(...turn('Read', { file_path: `src/f${i}.ts` }, lines(i % 5 === 0 ? 150 : 25, `f${i}`)));
    }
    assert.ok(asked.length >= 1, `${policy}: in-context summaries were asked`);
    for (const request of asked) {
      const check = validateRequest(asRequest(request));
      assert.ok(check.ok, `${policy} summary request: ${check.ok ? '' : check.message}`);
    }
  }
});

test('prefix_hash is hashed from the request sent: equal when tools + system are, different when not', async () => {
  const engine = createContextEngine({ tools: TOOLS, contextWindow: 100_000 });
  const { request } = await engine.prepare({
    transcript: [user('hi')],
    now: 1,
    signal: new AbortController().signal,
  });
  assert.equal(request.prefixHash, requestPrefixHash(request));
  assert.equal(request.prefixHash, engine.prefixHash, 'the sent prefix is the frozen one');
  const changed = requestPrefixHash({
    ...request,
    system: [{ type: 'text', text: `Now: 2025-01-01T00:00:00Z\n${engine.systemText}` }],
  });
  assert.notEqual(changed, request.prefixHash, 'a timestamp in the system prompt changes the hash');
  const markersOnly = requestPrefixHash({ ...request, system: [{ type: 'text', text: engine.systemText }] });
  assert.equal(markersOnly, request.prefixHash, 'cache markers are not part of the prefix');
});

test('eight parallel 50 KB reads in an 80K window: the newest results are trimmed (head + tail, where to find the rest) instead of failing', async () => {
  const root = tempDir();
  const fileText = (i: number) =>
    Array.from({ length: 1150 }, (_, n) => `export const big${i}_${n} = ${n}; // padding padding`).join('\n');
  for (let i = 0; i < 8; i++) fs.writeFileSync(path.join(root, `big${i}.ts`), fileText(i));
  let step = 0;
  const emu = await startEmulator({
    contextWindow: 80_000,
    scenario: {
      respond: (req) => {
        if (
          (req.tools?.length ?? 0) === 0 ||
          JSON.stringify(req.messages.at(-1)).includes('compaction-request')
        )
          return { content: [{ type: 'text', text: '## Decisions\n- Read all eight files.' }] };
        step++;
        if (step === 1) {
          return {
            content: Array.from({ length: 8 }, (_, i) => ({
              type: 'tool_use' as const,
              name: 'Read',
              input: { path: `big${i}.ts` },
            })),
          };
        }
        return { content: [{ type: 'text', text: 'Read them all.' }] };
      },
    },
  });
  try {
    const host = createNodeHost({ workspace: root, approvals: createPolicyApprovals('never') });
    const session = createAgentSession({
      host,
      model: 'claude-sonnet-4-5',
      apiKey: 'k',
      baseURL: emu.url,
      contextWindow: 80_000,
      maxTurns: 6,
    });
    const events: AgentEvent[] = [];
    session.subscribe((e) => events.push(e));
    const outcome = await session.prompt(`Read big0.ts to big7.ts at once. ${RED_LINE}`);
    assert.equal(outcome.status, 'finished', outcome.error);
    const results = session.messages.filter((m) => m.role === 'tool_result');
    assert.equal(results.length, 8);
    assert.ok(
      results.every((r) => r.content.length > 40_000),
      'each read really was big',
    );
    const edits = session.messages.filter((m) => m.role === 'context_edit');
    const trimmed = edits.flatMap((e) => (e.role === 'context_edit' ? e.edits : []));
    assert.ok(trimmed.length >= 1, 'the newest results were trimmed');
    for (const edit of trimmed) {
      assert.match(edit.content, /lines trimmed to save context/);
      assert.match(edit.content, /MemorySearch \(message res/, 'the trim names where the full output is');
    }
    const final = emu.requests.filter((r) => r.status === 200 && r.request).at(-1)!.request!;
    assert.ok(JSON.stringify(final.messages).includes('big7_0 = 0'), 'the heads are still there');
    // The trace's prefix_hash is what was sent.
    const records = events.flatMap((e) => (e.type === 'model_call' ? [e.record as ModelCallRecord] : []));
    const sent = emu.requests.filter(
      (r) => r.status === 200 && r.request && (r.request.tools?.length ?? 0) > 0,
    );
    const hashOf = (r: MessagesRequest) =>
      requestPrefixHash(JSON.parse(canonicalJson({ tools: r.tools, system: r.system })));
    for (const record of records) assert.equal(record.prefix_hash, hashOf(sent[0]!.request!));
    session.dispose();
  } finally {
    await emu.close();
  }
});

test('many compactions at a 40K window: older summaries are merged, red lines stay verbatim, nothing overflows', async () => {
  const engine = createContextEngine({
    tools: TOOLS,
    contextWindow: 40_000,
    newId: () => nextId('ctx'),
    summarize: async () =>
      `## Decisions\n- Decision ${nextId('d')}: keep the charge client, because it is tested.\n## Progress\n- More modules done.`,
  });
  const transcript: AgentMessage[] = [user(FIRST)];
  let compactions = 0;
  let merges = 0;
  for (let i = 0; i < 3000 && compactions < 75; i++) {
    const now = i * 2 * 60 * MINUTE; // always cold: every stage gets its chance
    const { request, appended } = await engine.prepare({
      transcript,
      now,
      lastCallAt: now - 2 * 60 * MINUTE,
      signal: new AbortController().signal,
    });
    transcript.push(...appended);
    const summaries = appended.filter((m): m is SummaryMessage => m.role === 'summary');
    if (summaries.length > 0) compactions++;
    if (summaries.some((s) => s.replaces.some((id) => id.startsWith('ctx')))) merges++;
    assert.ok(request.utilization < 1, `call ${i} fits (${request.utilization})`);
    const body = JSON.stringify(request.messages);
    if (compactions > 0) assert.ok(body.includes(RED_LINE), `call ${i}: the red line is in front verbatim`);
    // Reasoning is never pruned: it is what fills the window between compactions here.
    const text = `Step ${i}: I chose to edit src/m${i}/file${i}.ts because ${'the tests cover it and '.repeat(120)}it is safe.`;
    transcript.push(...turn('Read', { file_path: `src/m${i}/file${i}.ts` }, lines(20, `m${i}`), null, text));
    if (i % 25 === 24) transcript.push(user(`Also handle part ${i}. Don't rename src/part${i}.ts.`));
  }
  assert.ok(compactions >= 70, `many compactions (${compactions})`);
  const made = transcript.filter((m): m is SummaryMessage => m.role === 'summary');
  const archives = made.filter((m) => !m.archivePath.includes(', ')).map((m) => m.archivePath);
  assert.equal(
    new Set(archives).size,
    archives.length,
    'every compaction has its own archive (numbering never repeats)',
  );
  assert.ok(merges >= 1, 'older summaries were merged');
  const { request } = await engine.prepare({
    transcript,
    now: 1e12,
    lastCallAt: 1e12 - 1,
    signal: new AbortController().signal,
  });
  const front = request.messages[0]!;
  const frontText = JSON.stringify(front.content);
  const tokens = frontText.length / 4;
  assert.ok(tokens < 40_000 * 0.4, `front summaries stay bounded (${Math.round(tokens)} tokens)`);
  assert.ok(frontText.includes("Don't rename src/part24.ts."), 'a later user red line is kept verbatim');
});

test('identifiers past the cap: the most recent and the most referenced are kept, not only the first', () => {
  const early = Array.from({ length: 200 }, (_, i) => `src/early/file${i}.ts`).join(' ');
  const hot = Array.from({ length: 30 }, () => 'src/core/engine.ts').join(' ');
  const late = 'Fix https://tracker.example.com/KEEL-999 in src/late/final.ts at commit 9f8e7d6c5b';
  const kept = extractIdentifiers([`Start with src/early/file0.ts. ${hot}`, early, late]);
  assert.equal(kept.length, 120);
  for (const id of ['https://tracker.example.com/KEEL-999', 'src/late/final.ts', '9f8e7d6c5b']) {
    assert.ok(kept.includes(id), `recent ${id} kept`);
  }
  assert.ok(kept.includes('src/core/engine.ts'), 'the much-referenced one is kept');
  assert.ok(kept.includes('src/early/file199.ts') && !kept.includes('src/early/file50.ts'));
  assert.ok(kept.indexOf('src/core/engine.ts') < kept.indexOf('src/late/final.ts'), 'first-mention order');
});

test('a skill guide survives stages 1-2; after a compaction the engine reports it gone', async () => {
  const options: ContextEngineOptions = {
    tools: TOOLS,
    contextWindow: 9_000,
    newId: () => nextId('ctx'),
    longCacheTtl: 'stable',
    summarize: async () => '## Decisions\n- Go on.',
  };
  const engine = createContextEngine(options);
  const guide = `<skill name="safe-refactoring">\n${lines(40, 'guide')}\n</skill>`;
  const transcript: AgentMessage[] = [
    user(FIRST),
    ...turn('Skill', { name: 'safe-refactoring' }, guide, { name: 'safe-refactoring', mode: 'full' }),
  ];
  let sawStage2 = false;
  let gone = false;
  for (let i = 0; i < 150 && !gone; i++) {
    const now = i * 10 * MINUTE;
    const { request, appended } = await engine.prepare({
      transcript,
      now,
      lastCallAt: now - 6 * MINUTE,
      signal: new AbortController().signal,
    });
    transcript.push(...appended);
    const compacted = appended.some((m) => m.role === 'summary');
    if (request.stage === 2) sawStage2 = true;
    if (!compacted) {
      assert.ok(engine.skillInContext('safe-refactoring'), `call ${i}: the guide is whole`);
      assert.ok(JSON.stringify(request.messages).includes('guide line 39'), 'never trimmed or cleared');
    } else {
      gone = !engine.skillInContext('safe-refactoring');
    }
    transcript.push(...turn('Read', { file_path: `src/f${i}.ts` }, lines(30, `f${i}`)));
  }
  assert.ok(sawStage2, 'stage 2 ran while the guide was in context');
  assert.ok(gone, 'after the compaction the guide is no longer in context');
});

test('default TTL policy: every marker is 1 h, so a 6-minute gap is still warm (no pruning) and a 61-minute one is cold', async () => {
  const transcript: AgentMessage[] = [user(FIRST)];
  for (let i = 0; i < 10; i++)
    transcript.push(...turn('Read', { file_path: `src/m${i}.ts` }, lines(150, `m${i}`)));
  const probe = await createContextEngine({ tools: TOOLS, contextWindow: 1e9 }).prepare({
    transcript,
    now: 0,
    signal: new AbortController().signal,
  });
  const window = Math.floor(probe.request.estTokens / 0.4);
  const now = 10 * 60 * MINUTE;
  const prepare = (gap: number) =>
    createContextEngine({ tools: TOOLS, contextWindow: window, newId: () => nextId('ctx') }).prepare({
      transcript,
      now,
      lastCallAt: now - gap,
      signal: new AbortController().signal,
    });
  const warm = await prepare(6 * MINUTE);
  assert.equal(warm.request.stage, 0, 'the 1 h cache is warm after 6 minutes: nothing is rewritten');
  assert.deepEqual(ttls(warm.request), ['1h', '1h', '1h', '1h']);
  const cold = await prepare(61 * MINUTE);
  assert.equal(cold.request.stage, 1, 'past the hour the cache is cold: stage 1 runs at 40%');
});

test('merging summaries by code: red lines and the goal verbatim, decisions kept, edits added up, archives named', () => {
  const summary = (n: number): SummaryMessage => {
    const archivePath = `.keel/archive/s-compaction-${n}.jsonl`;
    return {
      id: `sum${n}`,
      ts: 1,
      role: 'summary',
      archivePath,
      replaces: [],
      text: renderSummary({
        n,
        archivePath,
        continues: n > 1,
        facts: {
          redLines: [n === 1 ? RED_LINE : `Don't rename src/part${n}.ts.`],
          requests: [n === 1 ? FIRST : `Also handle part ${n}.`],
          modifiedFiles: [`src/part${n}.ts (Edit)`, 'src/common.ts (Edit ×2, Write)'],
          verification: ['`npm test` → passed'],
          identifiers: [`src/part${n}.ts`, 'src/common.ts', `3f9a2c1d${n}e`],
          decisionHints: [],
        },
        model: {
          decisions: `- Decision ${n}: keep the charge client, because it is tested.`,
          verification: `Run ${n} green.`,
          todos: `- [ ] part ${n + 1}`,
          progress: `Part ${n} done.`,
        },
      }),
    };
  };
  const merged = mergeSummaries([1, 2, 3].map(summary), 40_000, 'merged1', 9);
  assert.deepEqual(merged.replaces, ['sum1', 'sum2', 'sum3']);
  assert.match(merged.text, /^<session-summary n="1-3">/);
  for (const line of [RED_LINE, "Don't rename src/part2.ts.", "Don't rename src/part3.ts.", `Goal: ${FIRST}`])
    assert.ok(merged.text.includes(`- ${line}`), `verbatim: ${line}`);
  for (const n of [1, 2, 3]) {
    assert.ok(merged.text.includes(`Decision ${n}: keep the charge client`), `decision ${n} kept`);
    assert.ok(merged.text.includes(`.keel/archive/s-compaction-${n}.jsonl`), `archive ${n} named`);
    assert.ok(merged.text.includes(`\`3f9a2c1d${n}e\``), `identifier ${n} exact`);
  }
  assert.ok(merged.text.includes('- src/common.ts (Edit ×6, Write ×3)'), 'edits add up');
  assert.ok(
    merged.text.includes('- [ ] part 4') && !merged.text.includes('- [ ] part 2'),
    'latest TODOs win',
  );
  assert.ok(
    merged.text.includes('Run 3 green.') && !merged.text.includes('Run 1 green.'),
    'latest verification wins',
  );
});
