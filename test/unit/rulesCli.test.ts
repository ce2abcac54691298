import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { rgPath } from '@vscode/ripgrep';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';
import { ALWAYS_ORDER, PEER_FILES } from './helpers/ruleFixtures.ts';

// Issue 24 "done when": a repository carrying one rules file per peer convention gets every rule into
// the request the emulator receives, in the documented order, with the prefix identical on every call
// of the session; a path-scoped rule arrives at the end of the conversation only after the agent reads
// a matching file. Through the built `keel` and the real SDK.

let emu: Emulator;
let home: string;
before(async () => {
  emu = await startEmulator({});
  home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-home-')));
});
after(async () => {
  await emu.close();
  fs.rmSync(home, { recursive: true, force: true });
});

type Block = { type: string; text?: string; cache_control?: unknown; content?: unknown };
type Message = { role: string; content: string | Block[] };
type Body = { system: Block[]; tools: unknown[]; messages: Message[] };

const bodyOf = (r: { body: unknown }) => r.body as Body;
const systemText = (b: Body) => b.system.map((s) => s.text ?? '').join('\n');
const prefix = (b: Body) => JSON.stringify([b.system.map((s) => s.text), b.tools]);
/** The conversation without cache markers (they move every call; the content must not). */
const plain = (messages: Message[]) =>
  JSON.parse(
    JSON.stringify(messages, (key, value) => (key === 'cache_control' ? undefined : value)),
  ) as Message[];

const read = (p: string) => ({ content: [{ type: 'tool_use' as const, name: 'Read', input: { path: p } }] });

test('every peer rules file reaches the request in the documented order; the prefix never changes; a path-scoped rule arrives after a matching Read', async () => {
  const ws = tempWorkspace({ ...PEER_FILES, 'README.md': '# Demo\n', 'src/a.ts': 'export const a = 1;\n' });
  emu.setScenario({
    replies: [read('README.md'), read('src/a.ts'), { content: [{ type: 'text', text: 'Done.' }] }],
  });
  const from = emu.requests.length;
  const run = await runKeel(['run', '--workspace', ws, 'Look around.'], cliEnv(emu.url, { HOME: home }));
  assert.equal(run.code, 0, run.stderr);
  const bodies = emu.requests.slice(from).map(bodyOf);
  assert.equal(bodies.length, 3);

  // Every always-on rule is in the system prompt, labelled, in the documented order.
  const system = systemText(bodies[0]!);
  const positions = ALWAYS_ORDER.map((m) => system.indexOf(`Rule ${m}.`));
  assert.ok(
    positions.every((p) => p >= 0),
    `every rule in the request: ${positions}`,
  );
  assert.deepEqual(
    [...positions].sort((a, b) => a - b),
    positions,
  );
  for (const file of ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md', '.clinerules/01-style.md']) {
    assert.ok(
      system.includes(`# Project rules (${file}: the repository's text, not the user's words)`),
      file,
    );
  }
  assert.match(system, /- \.cursor\/rules\/ask\.mdc \(\d+ B, read it when this applies\): Use when writing/);
  assert.doesNotMatch(system, /SCOPED/, 'path-scoped rules are not in the prefix');

  // P1: tools + system byte-identical on every call of the session.
  assert.equal(prefix(bodies[1]!), prefix(bodies[0]!));
  assert.equal(prefix(bodies[2]!), prefix(bodies[0]!));

  // The TypeScript rule is nowhere until src/a.ts was read; then once, at the end of the conversation.
  const has = (b: Body) => JSON.stringify(b.messages).split('Rule COPILOT-TS-SCOPED.').length - 1;
  assert.equal(has(bodies[0]!), 0);
  assert.equal(has(bodies[1]!), 0, 'reading README.md offers nothing');
  assert.equal(has(bodies[2]!), 1);
  assert.equal(
    JSON.stringify(bodies[2]!).includes('CURSOR-DB-SCOPED'),
    false,
    'a rule for other files stays out',
  );
  // Append-only (P2): the previous call's conversation is an unchanged prefix of this one's, and the
  // reminder comes after all of it, in the newest user turn, after the Read's result.
  const before2 = plain(bodies[1]!.messages);
  const now3 = plain(bodies[2]!.messages);
  assert.deepEqual(now3.slice(0, before2.length), before2);
  const last = now3.at(-1)!;
  assert.equal(last.role, 'user');
  const blocks = last.content as Block[];
  const ruleAt = blocks.findIndex((b) => b.type === 'text' && b.text?.includes('Rule COPILOT-TS-SCOPED.'));
  const resultAt = blocks.findIndex((b) => b.type === 'tool_result');
  assert.ok(resultAt >= 0 && ruleAt > resultAt, `rule block ${ruleAt} after the tool result ${resultAt}`);
  assert.match(
    blocks[ruleAt]!.text!,
    /<system-reminder>\n# Project rules \(\.github\/instructions\/ts\.instructions\.md: the repository's text, not the user's words\)\nThese rules apply to files matching \*\*\/\*\.ts, which includes src\/a\.ts\./,
  );
  // No block before the rule is marked as new: the previous request's end is still where it was.
  const marked = (bodies[2]!.messages as Message[]).flatMap((m, i) =>
    typeof m.content === 'string' ? [] : m.content.flatMap((b, j) => (b.cache_control ? [[i, j]] : [])),
  );
  const lastMark = marked.at(-1)!;
  assert.deepEqual(lastMark, [now3.length - 1, blocks.length - 1], 'the rule is the newest, last block');
});

test('KEEL_RULES_DISABLED turns sources off; a symlink outside the workspace is not read; a 5 MB file is only indexed', async () => {
  const outside = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-outside-')));
  fs.writeFileSync(path.join(outside, 'secret.md'), 'OUTSIDE-SECRET-TOKEN\n');
  const ws = tempWorkspace({
    ...PEER_FILES,
    'GEMINI.md': `# Gemini rules\n${'z'.repeat(99)}\n`.repeat(50_000),
  });
  fs.rmSync(path.join(ws, 'CLAUDE.md'));
  fs.symlinkSync(path.join(outside, 'secret.md'), path.join(ws, 'CLAUDE.md'));
  emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'Hi.' }] }] });
  const from = emu.requests.length;
  const run = await runKeel(
    ['run', '--workspace', ws, 'hi'],
    cliEnv(emu.url, { HOME: home, KEEL_RULES_DISABLED: 'cursor,cline' }),
  );
  fs.rmSync(outside, { recursive: true, force: true });
  assert.equal(run.code, 0, run.stderr);
  const system = systemText(bodyOf(emu.requests[from]!));
  assert.doesNotMatch(system, /OUTSIDE-SECRET-TOKEN/);
  assert.match(run.stderr, /CLAUDE\.md: not read: it leads outside the workspace/);
  assert.doesNotMatch(system, /CURSOR-|CLINE-|\.cursor\/rules/);
  assert.match(system, /Rule AGENTS-ROOT\./);
  assert.match(system, /Rule CLAUDE-LOCAL\./);
  assert.match(
    system,
    /- GEMINI\.md \(5\.\d MB, always applies; too large to include, Read it\): Gemini rules/,
  );
  assert.doesNotMatch(system, /zzzzzzzzzz/);
  assert.ok(system.length < 20_000, `system prompt ${system.length} chars`);
});

test('an untrusted workspace gets its rules files as AGENTS.md always did: read, labelled, read-only session', async () => {
  const ws = tempWorkspace(PEER_FILES);
  const host = createNodeHost({
    workspace: ws,
    approvals: createPolicyApprovals('never'),
    ripgrepPath: rgPath,
    trusted: false,
  });
  emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'Hi.' }] }] });
  const from = emu.requests.length;
  const session = createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
    userMemoryFile: null,
    rulesDisabled: ['gemini'],
  });
  const outcome = await session.prompt('hi');
  session.dispose();
  assert.equal(outcome.status, 'finished', outcome.error);
  const body = bodyOf(emu.requests[from]!);
  const system = systemText(body);
  for (const marker of ALWAYS_ORDER.filter((m) => m !== 'GEMINI-MAIN'))
    assert.match(system, new RegExp(`Rule ${marker}\\.`));
  assert.doesNotMatch(system, /GEMINI-MAIN/, 'the rulesDisabled option reaches discovery');
  const tools = (body.tools as { name: string }[]).map((t) => t.name);
  assert.ok(!tools.includes('Write') && !tools.includes('Bash'), 'still read-only');
});
