import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { computeMetrics } from '../src/agent/context/metrics.ts';
import { isCompactionRequest } from '../src/agent/context/summarizeRequest.ts';
import type { ModelCallRecord } from '../src/agent/events.ts';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../src/agent/safety/approvals.ts';
import { createAgentSession } from '../src/agent/session/session.ts';
import { canonicalJson, countInputTokens, type PromptBlock, promptBlocks } from '../test/emulator/cache.ts';
import {
  type MessagesRequest,
  type ScriptedBlock,
  type ScriptedReply,
  startEmulator,
} from '../test/emulator/server.ts';

// A scripted 100-turn coding session against the emulator, through the real SDK and the real session:
// realistic tool outputs (file reads of 150-900 lines, test runs, searches), files written and edited,
// at least one compaction. Figures for Keel, and for a naive baseline measured in the same run: the
// very same requests replayed on a fresh emulator with a system prompt that carries a timestamp.

export interface BenchOptions {
  readonly turns?: number;
  /** The session's own context window (`--context-window`). */
  readonly contextWindow?: number;
  /** Seconds of simulated time per model call. */
  readonly secondsPerCall?: number;
  /** After this many turns the user goes idle for 6 minutes (the prompt cache expires). */
  readonly idleAfterTurn?: number;
  readonly seed?: number;
}

export interface SideFigures {
  /** cache_read / all input tokens. */
  readonly cache_hit_ratio: number;
  /** cache_read / Σ input tokens before each request's newest message (the most a cache could give). */
  readonly cache_hit_of_limit: number;
  /**
   * cache_read / Σ tokens each request shares with the previous request's prefix (what any cache could
   * hold: the previous reply and the newest results were never sent before).
   */
  readonly cache_hit_of_shared_prefix: number;
  /** Fraction of calls after the first whose tools + system are byte-identical to the previous call's. */
  readonly prefix_stability: number;
  readonly input_tokens_all: number;
  readonly cache_read: number;
}

export interface SessionBenchFigures {
  readonly turns: number;
  /** Every call: the agent's and the compaction summaries' (which the cache figures include). */
  readonly model_calls: number;
  readonly summarize_calls: number;
  readonly compactions: number;
  readonly context_window: number;
  readonly pruning_stage_distribution: Readonly<Record<string, number>>;
  readonly context_utilization_max: number;
  /** Tools + system of the first request, in emulator tokens. */
  readonly fixed_prefix_tokens: number;
  readonly keel: SideFigures;
  readonly baseline: SideFigures;
  readonly goals: Readonly<Record<string, boolean>>;
  /** The same session with a 200K window (secondary; the 80K one with compactions is the headline). */
  readonly window_200k?: Pick<
    SessionBenchFigures,
    'model_calls' | 'compactions' | 'pruning_stage_distribution' | 'context_utilization_max' | 'keel'
  >;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sourceFile(i: number, lines: number): string {
  const out = [`// Module ${i}: order processing helpers.`, `export const VERSION_${i} = 1;`, ''];
  for (let n = 0; out.length < lines; n++) {
    out.push(
      `export function handle${i}_${n}(input: Order${n % 7}, options: Options = {}): Result {`,
      `  const total = input.items.reduce((sum, item) => sum + item.price * item.quantity, 0);`,
      `  if (total > options.limit ?? ${1000 + n}) throw new LimitError('order ${i}-${n} exceeds the limit');`,
      `  return { id: input.id, total, tax: Math.round(total * 0.${(n % 9) + 1}), module: ${i} };`,
      '}',
      '',
    );
  }
  return out.join('\n');
}

function testFile(i: number, cases: number): string {
  const out = [
    `import { test } from 'node:test';`,
    `import assert from 'node:assert/strict';`,
    `import * as m from './mod${i}.ts';`,
    '',
  ];
  for (let c = 0; c < cases; c++) {
    out.push(
      `test('handle${i}_${c} computes totals and tax for order ${c}', () => {`,
      `  const result = m.handle${i}_${c}({ id: 'o${c}', items: [{ price: ${c + 3}, quantity: 2 }] });`,
      `  assert.equal(result.total, ${(c + 3) * 2});`,
      '});',
      '',
    );
  }
  return out.join('\n');
}

function testRunCommand(i: number, cases: number): string {
  return `node -e "for (let c = 0; c < ${cases}; c++) console.log('ok ' + (c + 1) + ' - handle${i}_' + c + ' computes totals and tax'); console.log('# tests ${cases}'); console.log('# pass ${cases}')"`;
}

/** The model's side of the session: one reply per call, deterministic. */
function buildScript(turns: number, random: () => number, sizes: number[]): ScriptedBlock[][] {
  const script: ScriptedBlock[][] = [];
  const todo = (done: number) => ({
    todos: [
      'Survey the modules',
      'Bump module versions',
      'Add tests per module',
      'Run the tests',
      'Summarise',
    ].map((content, k) => ({
      id: String(k + 1),
      content,
      status: k < done ? 'completed' : k === done ? 'in_progress' : 'pending',
    })),
  });
  const think = (text: string): ScriptedBlock[] => (random() < 0.4 ? [{ type: 'text', text }] : []);
  script.push([
    { type: 'text', text: 'I will survey the modules first, then update them one by one.' },
    { type: 'tool_use', name: 'TodoWrite', input: todo(0) },
  ]);
  script.push([{ type: 'tool_use', name: 'Glob', input: { pattern: 'src/**/*.ts' } }]);
  for (let i = 0; script.length < turns - 1; i++) {
    const m = i % sizes.length;
    const cases = 20 + Math.floor(random() * 50);
    script.push([
      ...think(`Looking at module ${m}.`),
      { type: 'tool_use', name: 'Grep', input: { pattern: `VERSION_${m}|handle${m}_1\\b`, path: 'src' } },
    ]);
    script.push([{ type: 'tool_use', name: 'Read', input: { path: `src/mod${m}.ts` } }]);
    script.push([
      ...think(`Module ${m} exports VERSION_${m}; bumping it as the release requires.`),
      {
        type: 'tool_use',
        name: 'Edit',
        input: {
          path: `src/mod${m}.ts`,
          old_string: `export const VERSION_${m} = ${1 + Math.floor(i / sizes.length)};`,
          new_string: `export const VERSION_${m} = ${2 + Math.floor(i / sizes.length)};`,
        },
      },
    ]);
    script.push([
      {
        type: 'tool_use',
        name: 'Write',
        input: { path: `src/mod${m}.test.ts`, content: testFile(m, cases) },
      },
    ]);
    script.push([
      {
        type: 'tool_use',
        name: 'Bash',
        input: { command: testRunCommand(m, cases), description: `Run module ${m} tests` },
      },
    ]);
    if (i % 4 === 3)
      script.push([{ type: 'tool_use', name: 'TodoWrite', input: todo(Math.min(4, 1 + Math.floor(i / 4))) }]);
  }
  script.length = Math.min(script.length, turns - 1);
  script.push([
    { type: 'text', text: 'All modules were bumped, each has tests, and every test run passed.' },
  ]);
  return script;
}

const hasTools = (req: MessagesRequest) => (req.tools?.length ?? 0) > 0;
/** A compaction summary call: the standalone prompt (no tools) or the in-context request. */
const isSummarize = (req: MessagesRequest) =>
  !hasTools(req) || isCompactionRequest(req as unknown as { messages: Anthropic.MessageParam[] });

interface CallUsage {
  readonly input_tokens: number;
  readonly cache_read_input_tokens: number;
  readonly cache_creation_input_tokens: number;
}

function sideFigures(requests: readonly { req: MessagesRequest; usage: CallUsage }[]): SideFigures {
  let all = 0;
  let read = 0;
  let limit = 0;
  let shared = 0;
  let stable = 0;
  let previous: string | undefined;
  let previousBlocks: PromptBlock[] = [];
  requests.forEach(({ req, usage }, i) => {
    all += usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
    read += usage.cache_read_input_tokens;
    const lim = countInputTokens({ ...req, messages: req.messages.slice(0, -1) });
    limit += lim;
    const blocks = promptBlocks(req);
    let sharedHere = 0;
    for (let b = 0; b < blocks.length && b < previousBlocks.length; b++) {
      if (blocks[b]!.canonical !== previousBlocks[b]!.canonical) break;
      sharedHere += blocks[b]!.tokens;
    }
    shared += sharedHere;
    previousBlocks = blocks;
    if (process.env.BENCH_DEBUG) {
      const last = req.messages.at(-1);
      const lastTokens = last ? countInputTokens({ ...req, tools: [], system: [], messages: [last] }) : 0;
      console.error(
        `call ${i}: limit ${lim} read ${usage.cache_read_input_tokens} write ${usage.cache_creation_input_tokens} input ${usage.input_tokens} lost ${lim - usage.cache_read_input_tokens} shared ${sharedHere} newest ${lastTokens} msgs ${req.messages.length}`,
      );
    }
    const prefix = createHash('sha256')
      .update(canonicalJson({ tools: req.tools, system: req.system }))
      .digest('hex');
    if (prefix === previous) stable++;
    previous = prefix;
  });
  const r = (n: number) => Math.round(n * 10_000) / 10_000;
  return {
    cache_hit_ratio: all ? r(read / all) : 0,
    cache_hit_of_limit: limit ? r(read / limit) : 0,
    cache_hit_of_shared_prefix: shared ? r(read / shared) : 0,
    prefix_stability: requests.length > 1 ? r(stable / (requests.length - 1)) : 1,
    input_tokens_all: all,
    cache_read: read,
  };
}

function timestamped(system: MessagesRequest['system'], at: number): MessagesRequest['system'] {
  const stamp = `Current date and time: ${new Date(at).toISOString()}\n\n`;
  if (typeof system === 'string') return stamp + system;
  const blocks = [...(system ?? [])] as { type: string; text?: string }[];
  const first = blocks[0];
  return [
    { ...first, type: 'text', text: stamp + (first?.text ?? '') },
    ...blocks.slice(1),
  ] as MessagesRequest['system'];
}

export async function runSessionBench(options: BenchOptions = {}): Promise<SessionBenchFigures> {
  const headline = await runSessionScenario(options);
  if (options.contextWindow !== undefined) return headline;
  const wide = await runSessionScenario({ ...options, contextWindow: 200_000 });
  return {
    ...headline,
    window_200k: {
      model_calls: wide.model_calls,
      compactions: wide.compactions,
      pruning_stage_distribution: wide.pruning_stage_distribution,
      context_utilization_max: wide.context_utilization_max,
      keel: wide.keel,
    },
  };
}

async function runSessionScenario(options: BenchOptions): Promise<SessionBenchFigures> {
  const turns = options.turns ?? 100;
  const contextWindow = options.contextWindow ?? 80_000;
  const random = rng(options.seed ?? 7);
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-session-')));
  const sizes = Array.from({ length: 24 }, () => 150 + Math.floor(random() * 750));
  fs.mkdirSync(path.join(root, 'src'));
  for (const [i, lines] of sizes.entries())
    fs.writeFileSync(path.join(root, 'src', `mod${i}.ts`), sourceFile(i, lines));
  fs.writeFileSync(path.join(root, 'package.json'), '{ "name": "orders", "type": "module" }\n');
  const script = buildScript(turns, random, sizes);

  let clock = Date.UTC(2025, 0, 6, 9, 0, 0);
  const step = (options.secondsPerCall ?? 15) * 1000;
  let turn = 0;
  let summarizeCalls = 0;
  const emu = await startEmulator({
    now: () => clock,
    scenario: {
      respond: (req): ScriptedReply => {
        clock += step;
        if (isSummarize(req)) {
          summarizeCalls++;
          return {
            content: [
              {
                type: 'text',
                text: '## Decisions\n- Bump every module version by one and add a test file per module.\n## Verification status\n- Each module test run passed.\n## Open TODOs and rollback notes\n- Continue with the next modules.\n## Progress\n- Modules handled in order.',
              },
            ],
          };
        }
        const content = script[Math.min(turn, script.length - 1)]!;
        turn++;
        if (options.idleAfterTurn !== undefined && turn === options.idleAfterTurn) clock += 6 * 60_000;
        return { content };
      },
    },
  });
  const records: ModelCallRecord[] = [];
  try {
    const base = createNodeHost({ workspace: root, approvals: createPolicyApprovals('all') });
    const host = { ...base, clock: { now: () => clock } };
    const session = createAgentSession({
      host,
      model: 'claude-sonnet-4-6',
      apiKey: 'bench',
      baseURL: emu.url,
      contextWindow,
      maxTurns: turns + 5,
    });
    session.subscribe((e) => {
      if (e.type === 'model_call') records.push(e.record);
    });
    const outcome = await session.prompt(
      'Bump the version constant of every module under src/ by one, add a node:test file for each module and run it. ' +
        "Don't touch package.json. Never push anything. Keep the public function names unchanged.",
    );
    if (outcome.status !== 'finished')
      throw new Error(`bench session ended ${outcome.status}: ${outcome.error ?? ''}`);
    const compactions = session.messages.filter((m) => m.role === 'summary').length;
    session.dispose();

    // Every call counts, compaction summaries included: an honest figure is over what was paid for.
    const calls = emu.requests.flatMap((r) =>
      r.status === 200 && r.request && r.usage ? [{ req: r.request, usage: r.usage }] : [],
    );
    const agentCalls = calls.filter((c) => !isSummarize(c.req));
    const keel = sideFigures(calls);
    if (process.env.BENCH_DUMP) {
      let agent = 0;
      for (const [i, { req, usage }] of calls.entries()) {
        const stage = isSummarize(req) ? 'summarize' : records[agent++]?.stage;
        process.stderr.write(
          `${i} in=${usage.input_tokens} read=${usage.cache_read_input_tokens} write=${usage.cache_creation_input_tokens} stage=${stage}\n`,
        );
      }
    }
    const first = agentCalls[0]!.req;
    const fixed = countInputTokens({ ...first, messages: [] });

    // Baseline: the same requests, replayed in order on a fresh emulator, with a timestamped system prompt.
    let replayClock = Date.UTC(2025, 0, 6, 9, 0, 0);
    const fresh = await startEmulator({
      now: () => replayClock,
      scenario: { respond: () => ({ content: [{ type: 'text', text: 'ok' }] }) },
    });
    const baselineCalls: { req: MessagesRequest; usage: CallUsage }[] = [];
    try {
      const client = new Anthropic({ apiKey: 'bench', baseURL: fresh.url, maxRetries: 0 });
      for (const { req } of calls) {
        replayClock += step;
        const naive = { ...req, system: timestamped(req.system, replayClock), stream: false };
        const reply = await client.messages.create(
          naive as unknown as Anthropic.MessageCreateParamsNonStreaming,
        );
        baselineCalls.push({
          req: naive,
          usage: {
            input_tokens: reply.usage.input_tokens,
            cache_read_input_tokens: reply.usage.cache_read_input_tokens ?? 0,
            cache_creation_input_tokens: reply.usage.cache_creation_input_tokens ?? 0,
          },
        });
      }
    } finally {
      await fresh.close();
    }
    const baseline = sideFigures(baselineCalls);
    const metrics = computeMetrics(records);
    return {
      turns,
      model_calls: calls.length,
      summarize_calls: summarizeCalls,
      compactions,
      context_window: contextWindow,
      pruning_stage_distribution: metrics.pruning_stage_distribution,
      context_utilization_max: metrics.context_utilization.max,
      fixed_prefix_tokens: fixed,
      keel,
      baseline,
      goals: {
        'cache_hit_ratio >= 0.95': keel.cache_hit_ratio >= 0.95,
        'cache_hit_of_limit >= 0.98': keel.cache_hit_of_limit >= 0.98,
        'prefix_stability >= 0.98': keel.prefix_stability >= 0.98,
        'fixed_prefix_tokens <= 3000': fixed <= 3000,
        'at least one compaction': compactions >= 1,
      },
    };
  } finally {
    await emu.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await runSessionBench();
  console.log(JSON.stringify(figures, null, 2));
}
