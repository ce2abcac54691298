import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { firstUserText } from '../emulator/scenario.ts';
import {
  type Emulator,
  type MessagesRequest,
  type ScriptedReply,
  startEmulator,
} from '../emulator/server.ts';
import {
  cliEnv,
  processesWith,
  readLog,
  runKeel,
  sessionIdFrom,
  startKeel,
  tempWorkspace,
  waitFor,
} from './helpers/cli.ts';

// Sub-agents (Task) through the built `keel` command against the emulator. The emulator tells the
// parent's conversation from each sub-agent's by the first user message (scenario threads), so every
// assertion below is about the real requests Keel sent.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const use = (name: string, input: Record<string, unknown>): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
});
const answer = (text: string, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'text', text }],
  ...(expect ? { expect } : {}),
});
const report = (summary: string) =>
  answer(`## Summary\n${summary}\n## Evidence\nnotes/secret.txt:1\n## Open questions\nNone`);

const sentSince = (from: number) => emu.requests.slice(from).flatMap((r) => (r.request ? [r.request] : []));
const ofThread = (requests: MessagesRequest[], marker: string) =>
  requests.filter((r) => firstUserText(r).includes(marker));
const toolNames = (r: MessagesRequest) => (r.tools ?? []).map((t) => t.name);
const prefixOf = (r: MessagesRequest) =>
  JSON.stringify({ tools: r.tools, system: r.system }, (k, v) => (k === 'cache_control' ? undefined : v));

describe('Task: sub-agents (keel run)', () => {
  test('isolation: the sub-agent sees none of the parent, is not offered Task, and only its summary comes back', async () => {
    const ws = tempWorkspace({ 'notes/secret.txt': 'SECRET-FILE-CONTENT launch code 7731\n' });
    emu.setScenario({
      replies: [
        use('Task', { description: 'Find the code', prompt: 'CHILD-A: find the launch code in notes/' }),
        answer('The code is 7731.', { toolResultContains: 'The launch code is 7731.' }),
      ],
      threads: [
        {
          firstUserContains: 'CHILD-A',
          replies: [
            use('Read', { path: 'notes/secret.txt' }),
            { ...report('The launch code is 7731.'), expect: { toolResultContains: 'SECRET-FILE-CONTENT' } },
          ],
        },
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(
      ['run', '--workspace', ws, 'PARENT-PROMPT-XYZ: what is the code?'],
      cliEnv(emu.url),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'The code is 7731.');

    const sent = sentSince(from);
    const child = ofThread(sent, 'CHILD-A');
    const parent = ofThread(sent, 'PARENT-PROMPT-XYZ');
    assert.equal(child.length, 2);
    assert.equal(parent.length, 2);
    for (const r of child) {
      assert.ok(
        !JSON.stringify(r).includes('PARENT-PROMPT-XYZ'),
        'no parent transcript in a sub-agent request',
      );
      assert.deepEqual(toolNames(r), ['Glob', 'Grep', 'LS', 'Read'], 'explore: read-only tools, no Task');
      assert.ok(!JSON.stringify(r.system).includes('# Skills'), 'no skill index in the minimal prompt');
    }
    assert.equal(prefixOf(child[0]!), prefixOf(child[1]!), "the sub-agent's prefix is byte-stable");
    assert.ok(toolNames(parent[0]!).includes('Task'), 'the parent is offered Task');
    const parentNext = JSON.stringify(parent[1]!.messages);
    assert.match(parentNext, /The launch code is 7731\./, "the parent gets the sub-agent's summary");
    assert.match(parentNext, /Files it looked at: notes\/secret\.txt/);
    assert.ok(!parentNext.includes('SECRET-FILE-CONTENT'), 'nothing the sub-agent read enters the parent');

    // The CLI shows the sub-agent's activity indented under the Task call.
    assert.match(run.stderr, /\n {2}↳ sub-agent \S+ \(explore\): Find the code/);
    assert.match(run.stderr, /\n {4}▸ Read \{"path":"notes\/secret.txt"\}/);

    // Its own log, linked from the parent's; its tokens count in the parent's totals.
    const parentLog = readLog(ws, sessionIdFrom(run.stderr));
    const start = parentLog.find((e) => e.type === 'subagent_start');
    assert.ok(start, 'the parent log links the sub-agent');
    const childLog = fs
      .readFileSync(path.join(ws, start.logPath as string), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(childLog[0]?.parent, sessionIdFrom(run.stderr));
    assert.ok(
      childLog.some(
        (e) => e.type === 'message_appended' && JSON.stringify(e).includes('SECRET-FILE-CONTENT'),
      ),
    );
    const calls = parentLog.filter((e) => e.type === 'model_call');
    assert.equal(calls.length, 4, "the parent log counts the sub-agent's two calls");
    assert.equal(calls.filter((e) => (e.record as { agent?: string }).agent === start.agentId).length, 2);
    const trace = await runKeel(['trace', sessionIdFrom(run.stderr), '--workspace', ws], cliEnv(emu.url));
    const metrics = JSON.parse(trace.stdout) as {
      calls: number;
      subagents: number;
      prefix_stability_ratio: number;
    };
    assert.equal(metrics.subagents, 1);
    assert.equal(metrics.calls, 4, "the trace counts the sub-agent's calls");
    assert.equal(metrics.prefix_stability_ratio, 1, 'each agent kept its own prefix');
  });

  test('two Task calls in one reply run at the same time and share one prefix', async () => {
    const ws = tempWorkspace({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' });
    emu.setScenario({
      replies: [
        {
          content: [
            {
              type: 'tool_use',
              name: 'Task',
              input: { description: 'Read a', prompt: 'CHILD-A: read a.txt' },
            },
            {
              type: 'tool_use',
              name: 'Task',
              input: { description: 'Read b', prompt: 'CHILD-B: read b.txt' },
            },
          ],
        },
        answer('both done', { toolResultContains: 'B says beta' }),
      ],
      threads: [
        {
          firstUserContains: 'CHILD-A',
          replies: [
            { ...use('Read', { path: 'a.txt' }), fault: { type: 'slow', delayMs: 300 } },
            report('A says alpha'),
          ],
        },
        { firstUserContains: 'CHILD-B', replies: [use('Read', { path: 'b.txt' }), report('B says beta')] },
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, 'read both'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    const sent = sentSince(from);
    const index = (marker: string) => sent.flatMap((r, i) => (firstUserText(r).includes(marker) ? [i] : []));
    const a = index('CHILD-A');
    const b = index('CHILD-B');
    assert.equal(a.length, 2);
    assert.equal(b.length, 2);
    // Overlap: each sub-agent's first call was sent before the other's conversation ended.
    assert.ok(Math.max(a[0]!, b[0]!) < Math.min(a[1]!, b[1]!), `A at ${a}, B at ${b}`);
    assert.equal(prefixOf(sent[a[0]!]!), prefixOf(sent[b[0]!]!), 'sub-agents of one mode share the prefix');
    const last = JSON.stringify(sent.at(-1)?.messages);
    assert.ok(last.indexOf('A says alpha') < last.indexOf('B says beta'), 'results in the order asked');
  });

  test('a forged Task call inside a sub-agent is refused (depth limit 1)', async () => {
    const ws = tempWorkspace();
    emu.setScenario({
      replies: [
        use('Task', { description: 'Nest', prompt: 'CHILD-N: try to nest' }),
        answer('done', { toolResultContains: 'refused' }),
      ],
      threads: [
        {
          firstUserContains: 'CHILD-N',
          replies: [
            use('Task', { description: 'deeper', prompt: 'CHILD-DEEPER' }),
            {
              ...report('Nesting was refused.'),
              expect: { toolResultContains: 'depth limit 1', toolResultIsError: true },
            },
          ],
        },
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, 'nest'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    assert.equal(ofThread(sentSince(from), 'CHILD-DEEPER').length, 0, 'no grandchild ever ran');
  });

  test('Ctrl-C during a sub-agent: exit 130, and its command is gone', async () => {
    const ws = tempWorkspace();
    const sleep = `${300 + Math.floor(Math.random() * 600)}.${process.pid}7`;
    emu.setScenario({
      replies: [
        use('Task', { description: 'Run it', prompt: 'CHILD-S: run the slow thing', mode: 'general' }),
        answer('x'),
      ],
      threads: [
        { firstUserContains: 'CHILD-S', replies: [use('Bash', { command: `sleep ${sleep}` }), report('x')] },
      ],
    });
    const child = startKeel(['run', '--workspace', ws, '--approve', 'all', 'go'], cliEnv(emu.url));
    await waitFor(() => processesWith(`sleep ${sleep}`).length > 0, 10_000, "the sub-agent's command");
    child.kill('SIGINT');
    const run = await child.result;
    assert.equal(run.code, 130, run.stderr);
    await waitFor(() => processesWith(`sleep ${sleep}`).length === 0, 10_000, 'no process left');
    const parentLog = readLog(ws, sessionIdFrom(run.stderr));
    assert.equal(parentLog.find((e) => e.type === 'subagent_end')?.status, 'aborted');
  });
});
