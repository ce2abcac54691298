import type { ScriptedBlock } from '../test/emulator/server.ts';

// The scripted sessions the session bench drives: the workspace they run in and the model's side (one
// reply per call, deterministic for a seed). Two shapes:
//  - steady: one long run, one tool call per reply (the original 100-turn session);
//  - realistic: several user prompts with idle gaps between them (longer than the 5-minute TTL), several
//    tool calls per reply, Bash output big enough to spill, skills loaded (and asked for again), a
//    steering message while tools are about to run, a long tool run, todo updates.

export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function sourceFile(i: number, lines: number): string {
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

/** A verbose run whose stdout (~90 KB) is over the 50 KB limit: the tool spills it to a file. */
function verboseRunCommand(i: number): string {
  return `node -e "for (let c = 0; c < 1400; c++) console.log('[trace] module ${i} step ' + c + ': order pipeline stage ' + (c % 17) + ' ok, 0 warnings, elapsed ' + (c * 3) + ' ms'); console.log('# pass 1400')"`;
}

export interface ScriptedCall {
  readonly content: ScriptedBlock[];
  /** Emulated time this call's tools take beyond the usual step (a long build). */
  readonly extraMs?: number;
  /** A user message sent while this reply's tools are about to run (steering, P7). */
  readonly steer?: string;
}

export interface ScriptedRun {
  readonly prompt: string;
  /** The user's idle time before sending the prompt (emulated). */
  readonly idleBeforeMs: number;
  readonly calls: ScriptedCall[];
}

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

const FIRST_PROMPT =
  'Bump the version constant of every module under src/ by one, add a node:test file for each module and run it. ' +
  "Don't touch package.json. Never push anything. Keep the public function names unchanged.";

/** The original session: one run, one call per reply, 100 calls. */
export function steadyScript(turns: number, random: () => number, sizes: readonly number[]): ScriptedRun[] {
  const calls: ScriptedCall[] = [];
  const think = (text: string): ScriptedBlock[] => (random() < 0.4 ? [{ type: 'text', text }] : []);
  calls.push({
    content: [
      { type: 'text', text: 'I will survey the modules first, then update them one by one.' },
      { type: 'tool_use', name: 'TodoWrite', input: todo(0) },
    ],
  });
  calls.push({ content: [{ type: 'tool_use', name: 'Glob', input: { pattern: 'src/**/*.ts' } }] });
  for (let i = 0; calls.length < turns - 1; i++) {
    const m = i % sizes.length;
    const v = 1 + Math.floor(i / sizes.length);
    const cases = 20 + Math.floor(random() * 50);
    calls.push({
      content: [
        ...think(`Looking at module ${m}.`),
        { type: 'tool_use', name: 'Grep', input: { pattern: `VERSION_${m}|handle${m}_1\\b`, path: 'src' } },
      ],
    });
    calls.push({ content: [{ type: 'tool_use', name: 'Read', input: { path: `src/mod${m}.ts` } }] });
    calls.push({
      content: [
        ...think(`Module ${m} exports VERSION_${m}; bumping it as the release requires.`),
        { type: 'tool_use', name: 'Edit', input: edit(m, v) },
      ],
    });
    calls.push({
      content: [
        {
          type: 'tool_use',
          name: 'Write',
          input: { path: `src/mod${m}.test.ts`, content: testFile(m, cases) },
        },
      ],
    });
    calls.push({
      content: [
        {
          type: 'tool_use',
          name: 'Bash',
          input: { command: testRunCommand(m, cases), description: `Run module ${m} tests` },
        },
      ],
    });
    if (i % 4 === 3)
      calls.push({
        content: [{ type: 'tool_use', name: 'TodoWrite', input: todo(Math.min(4, 1 + Math.floor(i / 4))) }],
      });
  }
  calls.length = Math.min(calls.length, turns - 1);
  calls.push({
    content: [{ type: 'text', text: 'All modules were bumped, each has tests, and every test run passed.' }],
  });
  return [{ prompt: FIRST_PROMPT, idleBeforeMs: 0, calls }];
}

function edit(m: number, v: number) {
  return {
    path: `src/mod${m}.ts`,
    old_string: `export const VERSION_${m} = ${v};`,
    new_string: `export const VERSION_${m} = ${v + 1};`,
  };
}

const MINUTE = 60_000;

/**
 * Several runs (a user prompt each) with idle gaps before them, ~`turns` calls in all. `idleMs` are the
 * gaps before runs 2, 3, … (the first starts at once).
 */
export function realisticScript(
  turns: number,
  random: () => number,
  sizes: readonly number[],
  idleMs: readonly number[] = [7 * MINUTE, 16 * MINUTE, 28 * MINUTE, 45 * MINUTE],
): ScriptedRun[] {
  const runs: ScriptedRun[] = [];
  const perRun = Math.ceil(turns / (idleMs.length + 1));
  let module = 0;
  let version = new Map<number, number>();
  const prompts = [
    FIRST_PROMPT,
    'Continue with the next modules. Keep the CHANGELOG untouched.',
    'The CI log shows flaky output; look at the verbose runs too while you continue.',
    'Please go on with the remaining modules, and double-check the edits you made.',
    'Finish the remaining modules and tell me what changed.',
  ];
  for (let r = 0; r <= idleMs.length; r++) {
    const calls: ScriptedCall[] = [];
    const think = (text: string): ScriptedBlock[] => (random() < 0.5 ? [{ type: 'text', text }] : []);
    if (r === 0) {
      calls.push({
        content: [
          { type: 'text', text: 'I will load the refactoring guide, plan, and survey the modules.' },
          { type: 'tool_use', name: 'Skill', input: { name: 'safe-refactoring' } },
          { type: 'tool_use', name: 'TodoWrite', input: todo(0) },
        ],
      });
      calls.push({
        content: [
          { type: 'tool_use', name: 'Glob', input: { pattern: 'src/**/*.ts' } },
          { type: 'tool_use', name: 'Read', input: { path: 'package.json' } },
        ],
      });
    }
    if (r === 2)
      calls.push({
        content: [{ type: 'tool_use', name: 'Skill', input: { name: 'debugging-failing-tests' } }],
      });
    if (r === 3)
      calls.push({ content: [{ type: 'tool_use', name: 'Skill', input: { name: 'safe-refactoring' } }] });
    while (calls.length < perRun - 1) {
      const a = module % sizes.length;
      const b = (module + 1) % sizes.length;
      module += 2;
      const va = version.get(a) ?? 1;
      const vb = version.get(b) ?? 1;
      version = new Map(version).set(a, va + 1).set(b, vb + 1);
      const cases = 20 + Math.floor(random() * 50);
      // Three calls in one reply: a search and two reads.
      calls.push({
        content: [
          ...think(`Next: modules ${a} and ${b}.`),
          { type: 'tool_use', name: 'Grep', input: { pattern: `VERSION_(${a}|${b})\\b`, path: 'src' } },
          { type: 'tool_use', name: 'Read', input: { path: `src/mod${a}.ts` } },
          { type: 'tool_use', name: 'Read', input: { path: `src/mod${b}.ts` } },
        ],
      });
      calls.push({
        content: [
          ...think(`Both export a VERSION constant; bumping ${a} and ${b} together.`),
          { type: 'tool_use', name: 'Edit', input: edit(a, va) },
          { type: 'tool_use', name: 'Edit', input: edit(b, vb) },
        ],
      });
      calls.push({
        content: [
          {
            type: 'tool_use',
            name: 'Write',
            input: { path: `src/mod${a}.test.ts`, content: testFile(a, cases) },
          },
        ],
      });
      const verbose = random() < 0.35;
      calls.push({
        content: [
          {
            type: 'tool_use',
            name: 'Bash',
            input: verbose
              ? { command: verboseRunCommand(a), description: `Verbose run of module ${a}` }
              : { command: testRunCommand(a, cases), description: `Run module ${a} tests` },
          },
        ],
        // Now and then a run takes long (a full build): 6-9 minutes of emulated time.
        ...(random() < 0.12 ? { extraMs: (6 + Math.floor(random() * 4)) * MINUTE } : {}),
      });
      if (random() < 0.3)
        calls.push({ content: [{ type: 'tool_use', name: 'TodoWrite', input: todo(1 + (r % 4)) }] });
    }
    if (r === 1) {
      // The user writes while the model is about to run two calls: both are skipped, the message delivered.
      const at = Math.floor(calls.length / 2);
      calls.splice(at, 0, {
        content: [
          { type: 'tool_use', name: 'Read', input: { path: `src/mod${(module + 5) % sizes.length}.ts` } },
          { type: 'tool_use', name: 'Grep', input: { pattern: 'LimitError', path: 'src' } },
        ],
        steer: 'Stop reading ahead; finish the current module first.',
      });
    }
    calls.push({
      content: [
        { type: 'text', text: `Done with this part: modules up to ${module - 1} are bumped and tested.` },
      ],
    });
    runs.push({ prompt: prompts[r % prompts.length]!, idleBeforeMs: r === 0 ? 0 : idleMs[r - 1]!, calls });
  }
  return runs;
}
