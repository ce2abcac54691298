// A realistic session's event stream for the panel and session-log benchmarks: prompts, replies in
// long Markdown (headings, lists, code), Read / Grep / Bash / Edit calls with results of a few KB and
// Edit cards with unified diffs, model-call records, todos — in the order the session emits them.
// Deterministic (seeded), so every run measures the same bytes.

import { rng } from './sessionScript.ts';

type Body = Record<string, unknown> & { type: string };

export interface FixtureOptions {
  readonly sessionId: string;
  /** Stop once this many events were produced (the last run is closed properly). */
  readonly events?: number;
  /** Or once the log lines would reach this many bytes. */
  readonly bytes?: number;
  /** Size of a Read/Bash result in bytes (default ~6 KB). */
  readonly resultBytes?: number;
  readonly seed?: number;
  readonly startSeq?: number;
  readonly startTs?: number;
}

const WORDS =
  'the parser reads each token and checks whether the cache still holds a valid entry for this path so that a second call returns at once while the first one writes the result to disk and updates the index'.split(
    ' ',
  );

function markdown(rand: () => number, n: number): string {
  const sentence = () =>
    Array.from({ length: 8 + Math.floor(rand() * 12) }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(
      ' ',
    );
  const parts: string[] = [`## Step ${n}`, '', `${sentence()}. ${sentence()}.`, ''];
  for (let i = 0; i < 3; i++) parts.push(`- **${WORDS[i + (n % 20)]}**: ${sentence()} \`src/f${n}.ts\``);
  parts.push('', '```ts', `export function step${n}(input: string): number {`);
  for (let i = 0; i < 8; i++) parts.push(`  const v${i} = input.length * ${i} + ${n}; // ${sentence()}`);
  parts.push('  return v7;', '}', '```', '', `${sentence()}. ${sentence()}.`);
  return parts.join('\n');
}

function output(rand: () => number, bytes: number, n: number): string {
  let s = '';
  let i = 0;
  while (s.length < bytes)
    s += `${String(++i).padStart(5)}  const value${n}_${i} = compute(${Math.floor(rand() * 1e6)});\n`;
  return s;
}

function diff(n: number): string {
  const lines = [
    `--- a/src/f${n}.ts`,
    `+++ b/src/f${n}.ts`,
    `@@ -10,8 +10,9 @@ export function step${n}() {`,
  ];
  for (let i = 0; i < 4; i++) lines.push(`   const keep${i} = ${i};`);
  lines.push(`-  return old${n};`, `+  const next = old${n} + 1;`, '+  return next;');
  for (let i = 0; i < 3; i++) lines.push(`   // context ${i}`);
  return `${lines.join('\n')}\n`;
}

/** The events (with sessionId, seq, ts), in session order. */
export function sessionEvents(options: FixtureOptions): Body[] {
  const rand = rng(options.seed ?? 7);
  const sessionId = options.sessionId;
  const out: Body[] = [];
  let seq = options.startSeq ?? 0;
  let ts = options.startTs ?? 1_700_000_000_000;
  let bytes = 0;
  const ev = (body: Body) => {
    const event = { ...body, sessionId, seq: ++seq, ts: ++ts };
    out.push(event);
    if (options.bytes !== undefined) bytes += JSON.stringify(event).length + 1;
  };
  const done = () =>
    (options.events !== undefined && out.length >= options.events) ||
    (options.bytes !== undefined && bytes >= options.bytes);
  const resultBytes = options.resultBytes ?? 6000;
  const usage = { input: 3, output: 400, cacheRead: 40_000, cacheWrite: 500 };
  let n = 0;
  let run = 0;
  while (!done()) {
    run++;
    const runId = `run_${run}`;
    const prompt = `Question ${run}: make step ${run} handle empty input and add a test for it.`;
    ev({ type: 'agent_start', runId, prompt, promptNumber: run });
    const user = { role: 'user', id: `usr_${run}`, ts, text: prompt };
    ev({ type: 'user_message', message: user, queued: false });
    ev({ type: 'message_appended', message: user });
    const steps = 3 + Math.floor(rand() * 4);
    for (let step = 0; step < steps && !done(); step++) {
      n++;
      const tool = ['Read', 'Grep', 'Bash', 'Edit'][n % 4]!;
      const id = `toolu_${n}`;
      const input =
        tool === 'Edit'
          ? { path: `src/f${n}.ts`, old_string: `return old${n};`, new_string: `return old${n} + 1;` }
          : tool === 'Bash'
            ? { command: `npm test -- --grep step${n}` }
            : tool === 'Grep'
              ? { pattern: `step${n}`, path: 'src' }
              : { path: `src/f${n}.ts` };
      const msgId = `msg_${n}`;
      const text = markdown(rand, n);
      const assistant = {
        role: 'assistant',
        id: msgId,
        ts,
        model: 'claude-sonnet-4-6',
        stopReason: 'tool_use',
        usage,
        content: [
          { type: 'text', text },
          { type: 'tool_use', id, name: tool, input },
        ],
      };
      ev({ type: 'turn_start', turn: step + 1 });
      ev({ type: 'message_start', messageId: msgId, model: 'claude-sonnet-4-6' });
      ev({ type: 'message_end', message: assistant });
      ev({ type: 'message_appended', message: assistant });
      ev({
        type: 'model_call',
        record: {
          stage: 0,
          message_count: n * 3,
          est_tokens: 20_000 + n * 800,
          prefix_hash: 'a'.repeat(64),
          cache_read: 40_000,
          cache_write: 500,
          input: 3,
          output: 400,
          latency_ms: 1800,
          ttft_ms: 600,
          model: 'claude-sonnet-4-6',
          cost_usd: 0.012,
          context_window: 200_000,
          ok: true,
        },
      });
      ev({ type: 'tool_start', toolUseId: id, name: tool, input });
      const resultText =
        tool === 'Edit' ? `Edited src/f${n}.ts (1 change)` : output(rand, resultBytes * (0.5 + rand()), n);
      const result = {
        status: 'success',
        data: null,
        text: resultText,
        stats: { time_ms: 12 },
        ...(tool === 'Edit' ? { ui: { diff: diff(n), path: `src/f${n}.ts` } } : {}),
      };
      ev({ type: 'tool_end', toolUseId: id, name: tool, result, durationMs: 12 });
      ev({
        type: 'message_appended',
        message: {
          role: 'tool_result',
          id: `res_${n}`,
          ts,
          toolUseId: id,
          toolName: tool,
          result,
          content: resultText,
          isError: false,
        },
      });
      ev({ type: 'turn_end', turn: step + 1, stopReason: 'tool_use' });
    }
    const finalId = `msg_final_${run}`;
    const finalText = markdown(rand, n + 1000);
    const final = {
      role: 'assistant',
      id: finalId,
      ts,
      model: 'claude-sonnet-4-6',
      stopReason: 'end_turn',
      usage,
      content: [{ type: 'text', text: finalText }],
    };
    ev({ type: 'message_start', messageId: finalId, model: 'claude-sonnet-4-6' });
    ev({ type: 'message_end', message: final });
    ev({ type: 'message_appended', message: final });
    ev({ type: 'agent_end', runId, status: 'finished', finalText });
  }
  return out;
}

/** A whole session log (header line + events) as JSONL text. */
export function sessionLogText(options: FixtureOptions & { createdAt?: number }): string {
  const header = {
    type: 'session',
    version: 1,
    id: options.sessionId,
    createdAt: options.createdAt ?? 1_700_000_000_000,
    model: 'claude-sonnet-4-6',
    workspace: '/w',
  };
  const lines = [JSON.stringify(header), ...sessionEvents(options).map((e) => JSON.stringify(e))];
  return `${lines.join('\n')}\n`;
}
