import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { isCompactionRequest } from '../../src/agent/context/summarizeRequest.ts';
import { SUMMARY_SYSTEM } from '../../src/agent/model/ask.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import type { MessagesRequest, ScriptedReply } from '../emulator/types.ts';
import { cliEnv, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// The last rung of the recovery ladder (seed 002 P4), through the built CLI against the emulator: a
// run that drives its session past three compactions does not fail — the session ends its log with a
// `session_reset`, goes on as a new session seeded with a handoff, and the run completes there. The
// new session's prefix is the old one's, byte for byte (P1); the old log is only appended to (P2).

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const GOAL = 'Port every module to the new API. Do not touch src/legacy.ts.';
const HANDOFF = '<session-handoff';

const firstUserText = (req: MessagesRequest): string => JSON.stringify(req.messages[0]?.content ?? '');
/** A compaction's summary call (in the conversation, or the standalone prompt). */
const isSummaryCall = (req: unknown): boolean =>
  isCompactionRequest(req as Parameters<typeof isCompactionRequest>[0]) ||
  JSON.stringify((req as { system?: unknown }).system ?? '').includes(SUMMARY_SYSTEM);

/** Big reasoning each turn (never pruned: it is what fills the window), then one cheap call. */
function scripted(req: MessagesRequest, turn: number): ScriptedReply {
  if (isSummaryCall(req))
    return {
      content: [
        {
          type: 'text',
          text: `## Decisions\n- Port module by module (summary at turn ${turn}).\n## Progress\n- Modules up to ${turn} ported.`,
        },
      ],
    };
  if (firstUserText(req).includes(HANDOFF))
    return { content: [{ type: 'text', text: 'finished after the reset' }] };
  const reasoning = `Turn ${turn}: porting the next module because ${'the old API is going away and '.repeat(240)}it is safe.`;
  if (turn === 0)
    return {
      content: [
        { type: 'text', text: 'Planning.' },
        {
          type: 'tool_use',
          name: 'TodoWrite',
          input: {
            todos: [
              { id: '1', content: 'port module alpha', status: 'completed' },
              { id: '2', content: 'port module omega', status: 'pending' },
            ],
          },
        },
      ],
    };
  if (turn === 1)
    return {
      content: [
        { type: 'text', text: 'Writing the first port.' },
        {
          type: 'tool_use',
          name: 'Write',
          input: { path: 'src/alpha.ts', content: 'export const alpha = 1;\n' },
        },
      ],
    };
  return {
    content: [
      { type: 'text', text: reasoning },
      { type: 'tool_use', name: 'Read', input: { path: 'notes.md' } },
    ],
  };
}

test('a session driven past three compactions resets itself, completes, and both sessions are listed, linked', async () => {
  const ws = tempWorkspace({ 'notes.md': 'module list: alpha, beta, gamma\n' });
  let mainTurns = 0;
  emu.setScenario({
    respond: (req) => {
      const summary = isSummaryCall(req);
      const reply = scripted(req, mainTurns);
      if (!summary && !firstUserText(req).includes(HANDOFF)) mainTurns++;
      return reply;
    },
  });
  const first = emu.requests.length;
  const run = await runKeel(
    [
      'run',
      '--workspace',
      ws,
      '--context-window',
      '16000',
      '--approve',
      'all',
      '--max-turns',
      '60',
      '--json',
      GOAL,
    ],
    cliEnv(emu.url),
  );
  assert.equal(run.code, 0, run.stderr.slice(-3000));
  const events = run.stdout
    .trim()
    .split('\n')
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  const reset = events.find((e) => e.type === 'session_reset') as
    | { oldSessionId: string; newSessionId: string; reason: string; compactions: number }
    | undefined;
  assert.ok(reset, `a session_reset event in --json output (${run.stderr.slice(-1500)})`);
  assert.equal(reset.compactions, 4, 'the fourth compaction is the one that reset the session');
  assert.match(reset.reason, /past 3 compactions/);
  const end = events.findLast((e) => e.type === 'agent_end') as { status: string; sessionId: string };
  assert.equal(end.status, 'finished');
  assert.equal(end.sessionId, reset.newSessionId, 'the run completed in the new session');
  assert.equal(sessionIdFrom(run.stderr), reset.oldSessionId);

  // The old log: append-only, ends with the reset; the new log's header names the old session.
  const sessions = path.join(ws, '.keel', 'sessions');
  const oldLines = fs
    .readFileSync(path.join(sessions, `${reset.oldSessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; seq?: number });
  assert.equal(oldLines.at(-1)?.type, 'session_reset', 'the old log ends with the reset line');
  const seqs = oldLines.slice(1).map((l) => l.seq!);
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
    'the old log only grew',
  );
  const newLines = fs
    .readFileSync(path.join(sessions, `${reset.newSessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(newLines[0]!.continuedFrom, reset.oldSessionId);
  assert.ok(
    (newLines[1]!.seq as number) > (oldLines.at(-1)!.seq as number),
    'the sequence goes on across the reset',
  );

  // The requests: the new session's first call has the same tools + system bytes as the old one's,
  // and the handoff after the prefix's breakpoint, in the messages.
  const sent = emu.requests.slice(first).map((r) => r.body as Record<string, unknown>);
  const agentCalls = sent.filter((b) => !isSummaryCall(b));
  // Thinking is on (the default): a summary asked in the conversation sends the agent's thinking
  // parameters, or the API would drop the cached messages and the whole conversation be paid again.
  const inContext = emu.requests
    .slice(first)
    .filter((r) => isCompactionRequest(r.body as Parameters<typeof isCompactionRequest>[0]));
  assert.ok(inContext.length >= 3, `summaries asked in the conversation (${inContext.length})`);
  for (const r of inContext) {
    const body = r.body as { thinking?: unknown };
    assert.deepEqual(body.thinking, agentCalls[0]!.thinking, 'the same thinking as the agent calls');
    assert.ok((r.usage?.cache_read_input_tokens ?? 0) > 8000, 'the conversation is read from cache');
  }
  const firstNew = agentCalls.findIndex((b) =>
    JSON.stringify((b.messages as unknown[])[0]).includes(HANDOFF),
  );
  assert.ok(firstNew > 0, 'the new session made a call');
  const oldCall = agentCalls[firstNew - 1]!;
  const newCall = agentCalls[firstNew]!;
  assert.equal(JSON.stringify(newCall.tools), JSON.stringify(oldCall.tools), 'tools: the same bytes (P1)');
  assert.equal(JSON.stringify(newCall.system), JSON.stringify(oldCall.system), 'system: the same bytes (P1)');
  const system = newCall.system as { cache_control?: unknown }[];
  assert.ok(system.at(-1)!.cache_control, 'the prefix ends with its breakpoint');
  const messages = newCall.messages as { role: string; content: { type: string; text?: string }[] }[];
  assert.equal(messages.length, 1, 'the new session starts from the handoff alone');
  const handoff = messages[0]!.content.map((b) => b.text ?? '').join('\n');
  assert.ok(handoff.includes(GOAL), 'the goal, verbatim');
  assert.ok(handoff.includes('Do not touch src/legacy.ts.'), 'the red line, verbatim');
  const todos = /## Open TODOs\n([\s\S]*?)\n\n/.exec(handoff)?.[1] ?? '';
  assert.equal(todos, '- [ ] port module omega', 'the open todo, not the done one');
  assert.match(handoff, /src\/alpha\.ts \(Write\)/, 'the file changed');
  assert.match(handoff, /<session-summary n="4"/, 'the last summary');
  assert.ok(handoff.includes(reset.oldSessionId), 'where the old session is');
  // The new session's cache: the prefix was read from the old session's cache.
  const newRecord = emu.requests.slice(first).find((r) => r.body === newCall)!;
  assert.ok((newRecord.usage?.cache_read_input_tokens ?? 0) > 1000, 'the prefix is read from cache');

  // `keel sessions` shows both, linked both ways.
  const list = await runKeel(['sessions', '--workspace', ws], cliEnv(emu.url));
  assert.equal(list.code, 0, list.stderr);
  assert.ok(
    list.stdout.includes(reset.oldSessionId) && list.stdout.includes(reset.newSessionId),
    list.stdout,
  );
  assert.match(
    list.stdout,
    new RegExp(
      `${reset.newSessionId}.*Port every module[^\\n]*\\n  ↳ continued from ${reset.oldSessionId} \\(reset: driven past 3 compactions\\)`,
    ),
  );
  assert.match(list.stdout, new RegExp(`${reset.oldSessionId}.*\\n  ↳ went on as ${reset.newSessionId}`));

  // Resuming the old session resumes the new one, and says so.
  emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'resumed' }] }] });
  const resumed = await runKeel(
    ['run', '--workspace', ws, '--resume', reset.oldSessionId, 'and now?'],
    cliEnv(emu.url),
  );
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal(sessionIdFrom(resumed.stderr), reset.newSessionId);
  assert.match(
    resumed.stderr,
    new RegExp(`Session ${reset.oldSessionId} was reset and went on as ${reset.newSessionId}`),
  );
  const last = emu.requests.at(-1)!.body as { messages: unknown[] };
  assert.ok(
    JSON.stringify(last.messages[0]).includes(HANDOFF),
    'the resumed conversation is the new session',
  );
  const oldAfter = fs
    .readFileSync(path.join(sessions, `${reset.oldSessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n');
  assert.equal(oldAfter.length, oldLines.length, 'resuming did not write to the old log');
});

// Threat: a session log that came with the repository (not made by Keel here) names a "successor" to
// steer `--resume` into a conversation the user did not have, or a Keel log is edited to point at one.
// Only logs Keel created here are followed, both ends of every hop.
test('resume never follows a reset line into, or out of, a log Keel did not create here', async () => {
  const ws = tempWorkspace();
  emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'mine' }] }] });
  const mine = await runKeel(['run', '--workspace', ws, 'hello'], cliEnv(emu.url));
  assert.equal(mine.code, 0, mine.stderr);
  const own = sessionIdFrom(mine.stderr);
  const sessions = path.join(ws, '.keel', 'sessions');
  const resetLine = (from: string, to: string) =>
    `${JSON.stringify({ type: 'session_reset', oldSessionId: from, newSessionId: to, reason: 'x', compactions: 4, logPath: 'x', sessionId: from, seq: 99, ts: 1 })}\n`;
  // A committed log that claims it went on as the user's own session.
  const header = (id: string) =>
    `${JSON.stringify({ type: 'session', version: 1, id, createdAt: 1, model: 'm', workspace: ws })}\n`;
  fs.writeFileSync(path.join(sessions, 'planted.jsonl'), header('planted') + resetLine('planted', own));
  let run = await runKeel(['run', '--workspace', ws, '--resume', 'planted', 'go'], cliEnv(emu.url));
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /was not created by Keel on this machine/);
  // The user's own log, edited to point at the planted one: resumed as itself.
  fs.appendFileSync(path.join(sessions, `${own}.jsonl`), resetLine(own, 'planted'));
  emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'still mine' }] }] });
  run = await runKeel(['run', '--workspace', ws, '--resume', own, 'go'], cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  assert.equal(sessionIdFrom(run.stderr), own);
  assert.doesNotMatch(run.stderr, /went on as/);
});
