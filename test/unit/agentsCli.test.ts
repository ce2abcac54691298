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
import { cliEnv, readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// Custom agents (agent files) and plan mode through the built `keel` command. The emulator scripts
// the forbidden calls; the requests it received and the files on disk are the proof.

let emu: Emulator;
let home: string;
before(async () => {
  emu = await startEmulator({});
  home = tempWorkspace();
});
after(async () => {
  await emu.close();
});

const env = () => cliEnv(emu.url, { HOME: home });
const use = (name: string, input: Record<string, unknown>): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
});
const answer = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });
const sentSince = (from: number) =>
  emu.requests
    .slice(from)
    .flatMap((r) => (r.request ? [r.request] : []))
    .filter((r) => (r.tools ?? []).length > 0);
const toolNames = (r: MessagesRequest) => (r.tools ?? []).map((t) => t.name);
const systemText = (r: MessagesRequest) => JSON.stringify(r.system);
const prefixOf = (r: MessagesRequest) =>
  JSON.stringify({ tools: r.tools, system: r.system }, (k, v) => (k === 'cache_control' ? undefined : v));
const toolResults = (r: MessagesRequest) => JSON.stringify(r.messages.at(-1));

const READER =
  '---\nname: reader\ndescription: Reads and reports; never edits\ntools: Read, Grep\n---\nREADER-PROMPT: you only read and report.\n';

describe('custom agents', () => {
  test('an agent file restricted to Read, Grep cannot edit as the main agent (offered tools narrowed, forced Edit refused)', async () => {
    const ws = tempWorkspace({ '.claude/agents/reader.md': READER, 'a.txt': 'original\n' });
    emu.setScenario({
      replies: [
        use('Read', { path: 'a.txt' }),
        use('Edit', { path: 'a.txt', old_string: 'original', new_string: 'changed' }),
        answer('I cannot edit.'),
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(
      ['run', '--workspace', ws, '--approve', 'all', '--agent', 'reader', 'change a.txt'],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    const sent = sentSince(from);
    assert.equal(sent.length, 3);
    assert.deepEqual(toolNames(sent[0]!), ['Grep', 'Read']);
    assert.match(
      systemText(sent[0]!),
      /# Agent \\"reader\\" \(\.claude\/agents\/reader\.md: the repository's agent file/,
    );
    assert.match(systemText(sent[0]!), /READER-PROMPT/);
    assert.match(toolResults(sent[2]!), /Edit is not allowed here: the agent \\"reader\\"/);
    assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'original\n');
    assert.equal(prefixOf(sent[0]!), prefixOf(sent[2]!), 'the prefix is frozen for the session');

    // Resumed, the session is still the reader (its log says so): the same prefix; another agent is refused.
    const id = sessionIdFrom(run.stderr);
    emu.setScenario({ replies: [answer('Still reading.')] });
    const next = emu.requests.length;
    const resumed = await runKeel(['run', '--workspace', ws, '--resume', id, 'and now?'], env());
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(prefixOf(sentSince(next)[0]!), prefixOf(sent[0]!));
    const other = await runKeel(['run', '--workspace', ws, '--resume', id, '--plan', 'plan it'], env());
    assert.equal(other.code, 1);
    assert.match(other.stderr, /runs as the agent "reader"; it cannot change/);
  });

  test('as a sub-agent kind: Task offers it by name; its prompt and narrowed tools stay in its own prefix', async () => {
    const ws = tempWorkspace({ '.claude/agents/reader.md': READER, 'a.txt': 'original\n' });
    emu.setScenario({
      replies: [
        use('Task', { description: 'Check a.txt', prompt: 'CHILD-R: change a.txt', mode: 'reader' }),
        answer('The reader could not change it.'),
      ],
      threads: [
        {
          firstUserContains: 'CHILD-R',
          replies: [
            use('Edit', { path: 'a.txt', old_string: 'original', new_string: 'changed' }),
            use('Write', { path: 'a.txt', content: 'changed\n' }),
            answer('## Summary\nRefused.\n## Evidence\nnone\n## Open questions\nNone'),
          ],
        },
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'PARENT: delegate it'], env());
    assert.equal(run.code, 0, run.stderr);
    const sent = sentSince(from);
    const child = sent.filter((r) => firstUserText(r).includes('CHILD-R'));
    const parent = sent.filter((r) => firstUserText(r).includes('PARENT'));
    assert.equal(child.length, 3);
    assert.deepEqual(toolNames(child[0]!), ['Grep', 'Read']);
    assert.match(systemText(child[0]!), /READER-PROMPT/);
    assert.match(toolResults(child[1]!), /NOT_FOUND|not allowed/);
    assert.match(toolResults(child[2]!), /NOT_FOUND|not allowed/);
    assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'original\n');
    // The parent's prefix holds the agent's one-line index entry, never its prompt.
    assert.match(JSON.stringify(parent[0]!.tools), /\\"reader\\": Reads and reports; never edits/);
    assert.ok(!JSON.stringify(parent[0]).includes('READER-PROMPT'));
    assert.match(run.stderr, /↳ sub-agent \S+ \(reader\): Check a\.txt/);
  });

  test('keel agents lists the built-in plan and the files found', async () => {
    const ws = tempWorkspace({
      '.claude/agents/reader.md': READER,
      '.github/agents/docs.agent.md': '---\ndescription: Writes docs\n---\nDocs.\n',
    });
    const listed = await runKeel(['agents', '--workspace', ws], env());
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /plan\s+built-in\s+Read-only planning/);
    assert.match(listed.stdout, /reader\s+\.claude\/agents\/reader\.md\s+Reads and reports/);
    assert.match(listed.stdout, /docs\s+\.github\/agents\/docs\.agent\.md\s+Writes docs/);
    const unknown = await runKeel(['run', '--workspace', ws, '--agent', 'nobody', 'hi'], env());
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No agent named "nobody" \(found: plan, docs, reader\)/);
  });
});

describe('custom agents: the repository as an attacker', () => {
  test('an agent file linked outside the workspace is never read: listed as a problem, not offered, nothing sent', async () => {
    // The threat: `.claude/agents/spy.md -> ~/private/agent.md` (or any file with a frontmatter) would
    // put a file of the user's into the agent's prompt, which the model then sees.
    const outside = tempWorkspace({
      'agent.md': '---\ndescription: Private\n---\nPRIVATE-AGENT-TEXT-0042\n',
    });
    const ws = tempWorkspace({});
    fs.mkdirSync(path.join(ws, '.claude/agents'), { recursive: true });
    fs.symlinkSync(path.join(outside, 'agent.md'), path.join(ws, '.claude/agents/spy.md'));
    const listed = await runKeel(['agents', '--workspace', ws], env());
    assert.equal(listed.code, 0, listed.stderr);
    assert.doesNotMatch(listed.stdout, /spy/);
    assert.match(
      listed.stderr,
      /\.claude\/agents\/spy\.md: links to a file outside the workspace; it is not read/,
    );
    const from = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, '--agent', 'spy', 'hi'], env());
    assert.equal(run.code, 1);
    assert.match(run.stderr, /No agent named "spy"/);
    assert.equal(emu.requests.length, from);
  });
});

describe('plan mode (--plan)', () => {
  const PLAN = '## Plan\n1. Change a.txt to say planned\n2. Run the tests\n## Notes\n- none';

  test('no write, no command; prints the plan, writes .keel/plans/<session>.md; --json has a plan event; --from-plan starts it with the steps as todos', async () => {
    const ws = tempWorkspace({ 'a.txt': 'original\n' });
    emu.setScenario({
      replies: [
        use('Write', { path: 'a.txt', content: 'changed\n' }),
        use('Bash', { command: 'echo changed > a.txt' }),
        answer(PLAN),
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(
      ['run', '--workspace', ws, '--approve', 'all', '--plan', 'make a.txt planned'],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), PLAN);
    const sent = sentSince(from);
    assert.equal(sent.length, 3);
    for (const name of toolNames(sent[0]!))
      assert.ok(!['Write', 'Edit', 'MultiEdit', 'Bash'].includes(name), name);
    assert.match(systemText(sent[0]!), /You are in plan mode/);
    assert.match(toolResults(sent[1]!), /Write is not allowed here: plan mode/);
    assert.match(toolResults(sent[2]!), /Bash is not allowed here: plan mode/);
    assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'original\n');
    const id = sessionIdFrom(run.stderr);
    const file = path.join(ws, '.keel', 'plans', `${id}.md`);
    assert.match(run.stderr, new RegExp(`plan \\(2 steps\\) written to \\.keel/plans/${id}\\.md`));
    assert.match(fs.readFileSync(file, 'utf8'), /## Task\nmake a\.txt planned[\s\S]*1\. Change a\.txt/);

    emu.setScenario({ replies: [answer(PLAN)] });
    const json = await runKeel(['run', '--workspace', ws, '--plan', '--json', 'again'], env());
    assert.equal(json.code, 0, json.stderr);
    const events = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const plan = events.find((e) => e.type === 'plan');
    assert.deepEqual(plan?.steps, ['Change a.txt to say planned', 'Run the tests']);

    // The user edits the plan, then starts it: the default agent, the steps as its first todo list.
    fs.writeFileSync(
      file,
      fs.readFileSync(file, 'utf8').replace('2. Run the tests', '2. Run the unit tests'),
    );
    emu.setScenario({ replies: [answer('Done.')] });
    const started = emu.requests.length;
    const go = await runKeel(['run', '--workspace', ws, '--from-plan', file], env());
    assert.equal(go.code, 0, go.stderr);
    const first = sentSince(started)[0]!;
    assert.ok(toolNames(first).includes('Write'), 'the default agent, not plan mode');
    assert.match(JSON.stringify(first.messages), /1\. Change a\.txt to say planned\\n2\. Run the unit tests/);
    const todo = readLog(ws, sessionIdFrom(go.stderr)).find((e) => e.type === 'todo');
    assert.deepEqual(
      ((todo?.todos ?? []) as { content: string; status: string }[]).map((t) => [t.content, t.status]),
      [
        ['Change a.txt to say planned', 'pending'],
        ['Run the unit tests', 'pending'],
      ],
    );
  });
});
