import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { MessagesRequest, ReplyExpectation, Scenario, ScriptedReply } from './types.ts';
import { blocksOf } from './validate.ts';

const BlockSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string().min(1) }),
  z.strictObject({ type: z.literal('thinking'), thinking: z.string() }),
  z.strictObject({ type: z.literal('redacted_thinking'), hidden: z.string() }),
  z.strictObject({
    type: z.literal('tool_use'),
    name: z.string(),
    input: z.unknown(),
    id: z.string().optional(),
  }),
]);
const FaultSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('overloaded') }),
  z.strictObject({ type: z.literal('rate_limit'), retryAfterSeconds: z.number().nonnegative().optional() }),
  z.strictObject({
    type: z.literal('server_error'),
    status: z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504)]).optional(),
  }),
  z.strictObject({
    type: z.literal('mid_stream_error'),
    afterEvents: z.number().int().nonnegative().optional(),
  }),
  z.strictObject({ type: z.literal('cut_stream'), afterEvents: z.number().int().nonnegative().optional() }),
  z.strictObject({ type: z.literal('invalid_tool_json') }),
  z.strictObject({ type: z.literal('prompt_too_long') }),
  z.strictObject({
    type: z.literal('slow'),
    delayMs: z.number().nonnegative(),
    perChunkDelayMs: z.number().nonnegative().optional(),
  }),
]);
export const ScriptedReplySchema = z
  .strictObject({
    content: z.array(BlockSchema).optional(),
    stop_reason: z.enum(['end_turn', 'tool_use', 'max_tokens', 'stop_sequence']).optional(),
    expect: z
      .strictObject({
        lastUserContains: z.string().optional(),
        toolResultContains: z.string().optional(),
        toolResultIsError: z.boolean().optional(),
      })
      .optional(),
    fault: FaultSchema.optional(),
    model: z.string().optional(),
  })
  .refine((r) => r.fault?.type !== 'invalid_tool_json' || r.content?.some((b) => b.type === 'tool_use'), {
    message: 'an invalid_tool_json fault needs a tool_use block to corrupt',
  });
const ThreadSchema = z.strictObject({
  firstUserContains: z.string().min(1),
  replies: z.array(ScriptedReplySchema),
});
export const ScenarioFileSchema = z.strictObject({
  name: z.string().optional(),
  replies: z.array(ScriptedReplySchema),
  onExhausted: z.enum(['error', 'repeat_last', 'echo']).optional(),
  threads: z.array(ThreadSchema).optional(),
});

/** Parses a JSON scenario (the file form: scripted replies only). Throws with the offending path. */
export function parseScenario(json: unknown): Scenario {
  const parsed = ScenarioFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid scenario at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
  }
  return parsed.data as Scenario;
}

export function loadScenarioFile(path: string): Scenario {
  const scenario = parseScenario(JSON.parse(readFileSync(path, 'utf8')));
  return { name: path, ...scenario };
}

/** Path of a bundled scenario, e.g. scenarioPath('demo') for the `--demo` run. */
export function scenarioPath(name: string): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'scenarios', `${name}.json`);
}

const ECHO_REPLY: ScriptedReply = { content: [{ type: 'text', text: 'OK' }] };

export type Pick =
  | { kind: 'reply'; reply: ScriptedReply; index: number; consume: () => void }
  | { kind: 'exhausted'; consumed: number };

export interface ReplyCursor {
  /** The reply for this request; it only counts as used once `consume` is called. */
  peek(req: MessagesRequest): Pick;
}

/** The text of a request's first user message: what tells one conversation (a sub-agent's) from another. */
export function firstUserText(req: MessagesRequest): string {
  const first = req.messages.find((m) => m.role === 'user');
  return first ? textOf(blocksOf(first.content)) : '';
}

export function createReplyCursor(scenario: Scenario | undefined): ReplyCursor {
  // Each thread (a conversation whose first user message contains its marker, e.g. a sub-agent's
  // task) has its own cursor; every other request takes the main replies.
  if (scenario && 'replies' in scenario && scenario.threads?.length) {
    const { threads, ...main } = scenario;
    const mainCursor = createReplyCursor(main);
    const cursors = threads.map((t) => ({
      marker: t.firstUserContains,
      cursor: createReplyCursor({
        name: `${scenario.name ?? 'scenario'} thread "${t.firstUserContains}"`,
        replies: t.replies,
      }),
    }));
    return {
      peek(req) {
        const first = firstUserText(req);
        const thread = cursors.find((c) => first.includes(c.marker));
        return (thread?.cursor ?? mainCursor).peek(req);
      },
    };
  }
  let next = 0;
  const consume = () => {
    next++;
  };
  return {
    peek(req) {
      if (!scenario) return { kind: 'reply', reply: ECHO_REPLY, index: next, consume };
      if ('respond' in scenario)
        return { kind: 'reply', reply: scenario.respond(req, next), index: next, consume };
      const reply = scenario.replies[next];
      if (reply) return { kind: 'reply', reply, index: next, consume };
      const last = scenario.replies.at(-1);
      switch (scenario.onExhausted ?? 'error') {
        case 'repeat_last':
          if (last) return { kind: 'reply', reply: stripOneShot(last), index: next, consume };
          return { kind: 'reply', reply: ECHO_REPLY, index: next, consume };
        case 'echo':
          return { kind: 'reply', reply: ECHO_REPLY, index: next, consume };
        default:
          return { kind: 'exhausted', consumed: next };
      }
    },
  };
}

// Repeating a fault or an expectation forever would turn one scripted failure into an endless one.
function stripOneShot(reply: ScriptedReply): ScriptedReply {
  const { fault: _fault, expect: _expect, ...rest } = reply;
  return rest;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b: { type?: unknown; text?: unknown; content?: unknown }) =>
      b?.type === 'text' && typeof b.text === 'string'
        ? b.text
        : b?.type === 'tool_result'
          ? textOf(b.content)
          : '',
    )
    .join('\n');
}

/** Returns why the request does not meet the scripted expectation, or undefined when it does. */
export function checkExpectation(
  expect: ReplyExpectation | undefined,
  req: MessagesRequest,
): string | undefined {
  if (!expect) return undefined;
  const lastUser = [...req.messages].reverse().find((m) => m.role === 'user');
  const blocks = lastUser ? blocksOf(lastUser.content) : [];
  const results = blocks.filter((b) => b.type === 'tool_result');
  if (expect.lastUserContains !== undefined) {
    const text = textOf(blocks);
    if (!text.includes(expect.lastUserContains)) {
      return `last user message does not contain ${JSON.stringify(expect.lastUserContains)}; it was ${JSON.stringify(text.slice(0, 500))}`;
    }
  }
  if (expect.toolResultContains !== undefined) {
    const texts = results.map((r) => textOf(r['content']));
    if (!texts.some((t) => t.includes(expect.toolResultContains!))) {
      return `no tool_result in the last user message contains ${JSON.stringify(expect.toolResultContains)}; results were ${JSON.stringify(texts.map((t) => t.slice(0, 300)))}`;
    }
  }
  if (expect.toolResultIsError !== undefined) {
    if (results.length === 0) return 'expected tool_result blocks in the last user message, found none';
    const wrong = results.filter((r) => (r['is_error'] === true) !== expect.toolResultIsError);
    if (wrong.length > 0) {
      return `expected tool_result is_error=${expect.toolResultIsError}, but ${wrong.length} of ${results.length} differ`;
    }
  }
  return undefined;
}
