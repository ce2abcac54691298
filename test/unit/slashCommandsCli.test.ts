import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type Emulator,
  type MessagesRequest,
  type ScriptedReply,
  startEmulator,
} from '../emulator/server.ts';
import { cliEnv, readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// Slash commands through the built `keel` command: what the emulator receives is the proof.

let emu: Emulator;
let home: string;
before(async () => {
  emu = await startEmulator({});
  // A home of its own: no user-level commands of the machine running the tests.
  home = tempWorkspace();
});
after(async () => {
  await emu.close();
});

const env = () => cliEnv(emu.url, { HOME: home });
const answer = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });
const use = (name: string, input: Record<string, unknown>): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
});
const sentSince = (from: number) => emu.requests.slice(from).flatMap((r) => (r.request ? [r.request] : []));
const lastUserText = (r: MessagesRequest): string => {
  const users = r.messages.filter((m) => m.role === 'user');
  return JSON.stringify(users.at(-1)?.content);
};

const COMMANDS = {
  '.claude/commands/frontend/greet.md':
    '---\ndescription: Greets people\nargument-hint: NAME OTHER\n---\nSay hello to $1, then to $2. All: $ARGUMENTS.\n',
  '.github/prompts/explain.prompt.md':
    '---\ndescription: Explains a file\n---\nExplain this file in two lines.\n',
  '.claude/commands/haiku.md':
    '---\ndescription: On another model\nmodel: claude-haiku-4-5\n---\nAnswer briefly.\n',
  '.claude/commands/look.md':
    '---\ndescription: Look only\nallowed-tools: Read, Grep\n---\nLook at $ARGUMENTS and do not change anything.\n',
};

describe('slash commands (keel run "/name args")', () => {
  test('a .claude/commands file (sub-folder = dir:name) expands $1, $2 and $ARGUMENTS under a header naming it', async () => {
    const ws = tempWorkspace(COMMANDS);
    emu.setScenario({ replies: [answer('Hello.')] });
    const from = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, '/frontend:greet Alice "Bob Smith"'], env());
    assert.equal(run.code, 0, run.stderr);
    const [request] = sentSince(from);
    assert.ok(request);
    const text = lastUserText(request);
    assert.match(
      text,
      /\[\/frontend:greet from \.claude\/commands\/frontend\/greet\.md: a prompt file from the repository/,
    );
    assert.match(text, /the user typed: \/frontend:greet Alice \\"Bob Smith\\"/);
    assert.match(text, /Say hello to Alice, then to Bob Smith\. All: Alice \\"Bob Smith\\"\./);
  });

  test('a .github/prompts file expands too; arguments it does not use are appended', async () => {
    const ws = tempWorkspace(COMMANDS);
    emu.setScenario({ replies: [answer('It does things.')] });
    const from = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, '/explain src/a.ts'], env());
    assert.equal(run.code, 0, run.stderr);
    const text = lastUserText(sentSince(from)[0]!);
    assert.match(text, /\[\/explain from \.github\/prompts\/explain\.prompt\.md/);
    assert.match(text, /Explain this file in two lines\.\\n\\nARGUMENTS: src\/a\.ts/);
  });

  test('an unknown /name is a usage error with close matches, and nothing is sent', async () => {
    const ws = tempWorkspace(COMMANDS);
    const from = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, '/explian x'], env());
    assert.equal(run.code, 2);
    assert.match(run.stderr, /Unknown command \/explian \(nothing was sent\)\. Did you mean \/explain\?/);
    assert.equal(emu.requests.length, from);
  });

  test('/model switches the model of the session: the next request (a resumed run) uses it', async () => {
    const ws = tempWorkspace();
    const switched = await runKeel(['run', '--workspace', ws, '/model claude-opus-4-5'], env());
    assert.equal(switched.code, 0, switched.stderr);
    const id = sessionIdFrom(switched.stderr);
    assert.match(switched.stdout, /Model for session \S+: claude-opus-4-5/);
    assert.ok(readLog(ws, id).some((e) => e.type === 'model_switch' && e.model === 'claude-opus-4-5'));
    emu.setScenario({ replies: [answer('On opus.')] });
    const from = emu.requests.length;
    const next = await runKeel(['run', '--workspace', ws, '--resume', id, 'hello'], env());
    assert.equal(next.code, 0, next.stderr);
    assert.equal(sentSince(from)[0]?.model, 'claude-opus-4-5');

    // The other session built-ins act on the resumed session and send nothing themselves.
    const before = emu.requests.length;
    const cost = await runKeel(['run', '--workspace', ws, '--resume', id, '/cost'], env());
    assert.equal(cost.code, 0, cost.stderr);
    assert.match(cost.stdout, new RegExp(`Session ${id}: \\$\\d+\\.\\d{4} over 1 model call`));
    const memory = await runKeel(['run', '--workspace', ws, '--resume', id, '/memory'], env());
    assert.match(memory.stdout, /# workspace memory: .*MEMORY\.md/);
    const clear = await runKeel(['run', '--workspace', ws, '/clear'], env());
    assert.equal(clear.code, 0);
    assert.match(clear.stderr, /every `keel run` without --resume already starts a new session/);
    assert.equal(emu.requests.length, before);
  });

  test("a prompt file's model holds for its turn; its allowed-tools refuse other tools, the tool list unchanged", async () => {
    const ws = tempWorkspace({ ...COMMANDS, 'a.txt': 'original\n' });
    emu.setScenario({ replies: [answer('Brief.')] });
    let from = emu.requests.length;
    const onHaiku = await runKeel(['run', '--workspace', ws, '/haiku'], env());
    assert.equal(onHaiku.code, 0, onHaiku.stderr);
    assert.equal(sentSince(from)[0]?.model, 'claude-haiku-4-5');

    emu.setScenario({
      replies: [use('Bash', { command: 'echo changed > a.txt' }), answer('Could not.')],
    });
    from = emu.requests.length;
    const look = await runKeel(['run', '--workspace', ws, '--approve', 'all', '/look a.txt'], env());
    assert.equal(look.code, 0, look.stderr);
    // The agent's own calls (memory consolidation afterwards sends one without tools).
    const sent = sentSince(from).filter((r) => (r.tools ?? []).length > 0);
    assert.equal(sent.length, 2);
    assert.notEqual(sent[0]!.model, 'claude-haiku-4-5', "the other command's model was for its turn only");
    assert.match(lastUserText(sent[0]!), /allows only these tools: Read, Grep/);
    assert.match(
      JSON.stringify(sent[1]!.messages.at(-1)),
      /BLOCKED_BY_POLICY.*Bash is not allowed here: the \/look command \(\.claude\/commands\/look\.md\) allows only Read, Grep/,
    );
    assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'original\n');
    const names = (r: MessagesRequest) => (r.tools ?? []).map((t) => t.name);
    assert.ok(names(sent[0]!).includes('Bash'), 'the frozen tool list is not narrowed (P1)');
  });

  test('keel commands lists name, file and description (and --json)', async () => {
    const ws = tempWorkspace({ ...COMMANDS, '.claude/commands/model.md': 'Shadow the built-in.\n' });
    const listed = await runKeel(['commands', '--workspace', ws], env());
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /\/frontend:greet\s+\.claude\/commands\/frontend\/greet\.md\s+Greets people/);
    assert.match(listed.stdout, /\/explain\s+\.github\/prompts\/explain\.prompt\.md\s+Explains a file/);
    assert.match(listed.stderr, /\.claude\/commands\/model\.md: \/model is a built-in command/);
    const json = await runKeel(['commands', '--workspace', ws, '--json'], env());
    const parsed = JSON.parse(json.stdout) as { commands: { name: string; allowedTools?: string[] }[] };
    assert.deepEqual(parsed.commands.find((c) => c.name === '/look')?.allowedTools, ['Read', 'Grep']);
  });

  test('attacker: a command file linked to a secret outside the workspace is never read or sent; the user is told', async () => {
    // The threat: a cloned repository ships `.claude/commands/x.md -> ~/.aws/credentials` (or a
    // linked commands folder); typing /x would send the user's secret to the model.
    const secretDir = tempWorkspace({ credentials: 'aws_secret_access_key = SECRET-LINKED-0042\n' });
    const ws = tempWorkspace(COMMANDS);
    fs.symlinkSync(path.join(secretDir, 'credentials'), path.join(ws, '.claude/commands/x.md'));
    fs.symlinkSync(secretDir, path.join(ws, '.claude/commands/linked'));
    // A link that stays inside the workspace keeps working.
    fs.writeFileSync(path.join(ws, 'shared.md'), 'Shared prompt text.\n');
    fs.symlinkSync(path.join(ws, 'shared.md'), path.join(ws, '.claude/commands/shared.md'));
    const from = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, '/x'], env());
    assert.equal(run.code, 2, run.stderr);
    assert.match(
      run.stderr,
      /\/x is not available \(nothing was sent\): \.claude\/commands\/x\.md links to a file outside the workspace; it is not read/,
    );
    assert.equal(emu.requests.length, from, 'nothing reached the model');
    const listed = await runKeel(['commands', '--workspace', ws, '--json'], env());
    const names = (JSON.parse(listed.stdout) as { commands: { name: string }[] }).commands.map((c) => c.name);
    assert.ok(
      names.includes('/shared') && !names.includes('/x') && !names.some((n) => n.startsWith('/linked')),
    );
    emu.setScenario({ replies: [answer('Done.')] });
    const ok = await runKeel(['run', '--workspace', ws, '/shared'], env());
    assert.equal(ok.code, 0, ok.stderr);
    const sent = JSON.stringify(sentSince(from));
    assert.match(sent, /Shared prompt text\./);
    assert.doesNotMatch(sent, /SECRET-LINKED-0042/);
  });
});
