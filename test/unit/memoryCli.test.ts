import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// Memory across sessions through the built `keel` command and the real SDK against the emulator:
// session 1 writes a MEMORY.md entry with `Memory` and mentions a fact; session 2 sees the entry in its
// system prompt and finds the fact with `MemorySearch` (the hit names session 1); rollback undoes it.

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

type Body = { system: Array<{ text: string }>; tools: Array<{ name: string }>; messages: unknown[] };
const prefix = (body: unknown) => {
  const b = body as Body;
  return JSON.stringify([b.system.map((s) => s.text), b.tools]);
};

test('a second keel run finds the first session through MemorySearch and sees its MEMORY.md entry; rollback undoes it', async () => {
  const ws = tempWorkspace({ 'README.md': '# Shop\n' });
  const env = cliEnv(emu.url, { HOME: home });
  const entry = 'Deploys go through scripts/bluegreen.sh, never kubectl apply';

  emu.setScenario({
    replies: [
      {
        content: [
          { type: 'tool_use', name: 'Memory', input: { action: 'add', heading: 'Deploy', text: entry } },
        ],
      },
      {
        content: [{ type: 'text', text: 'Noted.' }],
        expect: { toolResultContains: 'Saved to .keel/memory/MEMORY.md' },
      },
    ],
  });
  let from = emu.requests.length;
  const first = await runKeel(
    [
      'run',
      '--workspace',
      ws,
      'Remember: deploys go through scripts/bluegreen.sh. Also, the flaky checkout test fails because of clock skew on runner quokka-4711.',
    ],
    env,
  );
  assert.equal(first.code, 0, first.stderr);
  const firstId = sessionIdFrom(first.stderr);
  const firstRequests = emu.requests.slice(from);
  assert.equal(firstRequests.length, 2);
  assert.ok(firstRequests.every((r) => r.status === 200));
  assert.equal(
    prefix(firstRequests[0]!.body),
    prefix(firstRequests[1]!.body),
    'session 1: tools + system identical on every call',
  );
  assert.ok(
    !prefix(firstRequests[1]!.body).includes('bluegreen'),
    'the running session prefix does not change (P1)',
  );
  const memoryFile = path.join(ws, '.keel', 'memory', 'MEMORY.md');
  assert.match(
    fs.readFileSync(memoryFile, 'utf8'),
    /## Deploy\n- \d{4}-\d{2}-\d{2}: Deploys go through scripts\/bluegreen\.sh/,
  );

  emu.setScenario({
    replies: [
      { content: [{ type: 'tool_use', name: 'MemorySearch', input: { query: 'flaky checkout quokka' } }] },
      {
        content: [{ type: 'text', text: 'Clock skew on runner quokka-4711.' }],
        expect: { toolResultContains: `session ${firstId}` },
      },
    ],
  });
  from = emu.requests.length;
  const second = await runKeel(['run', '--workspace', ws, 'Why is the checkout test flaky?'], env);
  assert.equal(second.code, 0, second.stderr);
  const secondRequests = emu.requests.slice(from);
  assert.equal(secondRequests.length, 2, 'the hit named session 1 (the scripted expectation held)');
  assert.ok(secondRequests.every((r) => r.status === 200));
  const system = (secondRequests[0]!.body as Body).system.map((s) => s.text).join('\n');
  assert.ok(system.includes(entry), 'session 2 system prompt holds the entry session 1 wrote');
  assert.ok(system.indexOf('# Memory') > system.indexOf('# How to recover'));
  assert.equal(
    prefix(secondRequests[0]!.body),
    prefix(secondRequests[1]!.body),
    'session 2: tools + system identical',
  );
  const toolResult = JSON.stringify((secondRequests[1]!.body as Body).messages.at(-1));
  assert.match(toolResult, /clock skew on runner quokka-4711/);

  const search = await runKeel(['memory', 'search', 'quokka clock skew', '--workspace', ws, '--json'], env);
  assert.equal(search.code, 0, search.stderr);
  const found = JSON.parse(search.stdout) as {
    hits: Array<{ session: string; id: string; date: string; role: string }>;
  };
  const original = found.hits.find((h) => h.session === firstId);
  assert.ok(original, `a hit names session 1: ${search.stdout}`);
  assert.equal(original.role, 'user');
  assert.match(original.date, /^\d{4}-\d{2}-\d{2}$/);
  const byId = await runKeel(['memory', 'search', original.id, '--workspace', ws], env);
  assert.match(
    byId.stdout,
    /Remember: deploys go through scripts\/bluegreen\.sh\. Also, the flaky checkout test/,
  );

  const rollback = await runKeel(['memory', 'rollback', '--workspace', ws], env);
  assert.equal(rollback.code, 0, rollback.stderr);
  assert.match(rollback.stdout, /Rolled back: add: .*bluegreen/);
  assert.ok(!fs.existsSync(memoryFile), 'the file did not exist before the change: rollback removes it');
  const again = await runKeel(['memory', 'rollback', '--workspace', ws], env);
  assert.match(again.stdout, /No memory change to roll back/);
  const history = fs.readdirSync(path.join(ws, '.keel', 'memory', 'history'));
  assert.ok(
    history.some((n) => n.endsWith('-workspace.md')),
    'the version before the rollback is kept in history',
  );
});

test('keel memory: usage errors are specific', async () => {
  const ws = tempWorkspace();
  const bad = await runKeel(['memory', 'forget', '--workspace', ws], cliEnv(emu.url, { HOME: home }));
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /keel memory takes "search QUERY" or "rollback"/);
  const none = await runKeel(
    ['memory', 'search', 'nothing here', '--workspace', ws],
    cliEnv(emu.url, { HOME: home }),
  );
  assert.equal(none.code, 0);
  assert.match(none.stdout, /No matches for "nothing here"/);
});

test('after real work the session consolidates durable facts into MEMORY.md; a failed consolidation loses nothing', async () => {
  const ws = tempWorkspace({ 'src/a.ts': 'export const a = 1;\n' });
  const env = cliEnv(emu.url, { HOME: home });
  const readA = { content: [{ type: 'tool_use' as const, name: 'Read', input: { path: 'src/a.ts' } }] };
  emu.setScenario({
    replies: [
      readA,
      { content: [{ type: 'text', text: 'a is 1.' }] },
      {
        content: [
          { type: 'text', text: '- [Style] Indent with tabs, never spaces\n- [Style] \n- not a fact line' },
        ],
        expect: { lastUserContains: 'USER: What is a? By the way, we always indent with tabs' },
      },
    ],
  });
  const from = emu.requests.length;
  const run = await runKeel(
    ['run', '--workspace', ws, 'What is a? By the way, we always indent with tabs, never spaces.'],
    env,
  );
  assert.equal(run.code, 0, run.stderr);
  const mine = emu.requests.slice(from);
  assert.equal(mine.length, 3);
  assert.ok(mine.every((r) => r.status === 200));
  const consolidation = JSON.stringify((mine[2]!.body as Body).messages);
  assert.ok(
    !consolidation.includes('export const a = 1'),
    'tool output never reaches the consolidation prompt',
  );
  assert.deepEqual((mine[2]!.body as Body).tools ?? [], []);
  const memory = fs.readFileSync(path.join(ws, '.keel', 'memory', 'MEMORY.md'), 'utf8');
  assert.match(memory, /## Style\n- \d{4}-\d{2}-\d{2}: Indent with tabs, never spaces\n$/);
  const log = fs.readFileSync(
    path.join(ws, '.keel', 'sessions', `${sessionIdFrom(run.stderr)}.jsonl`),
    'utf8',
  );
  assert.match(log, /"type":"memory_changed".*"origin":"consolidation"/);

  // The model call fails (the scenario has no reply left): the run still succeeds, memory is untouched.
  emu.setScenario({ replies: [readA, { content: [{ type: 'text', text: 'still 1.' }] }] });
  const failed = await runKeel(
    ['run', '--workspace', ws, 'Again: what is a? Remember we prefer small PRs.'],
    env,
  );
  assert.equal(failed.code, 0, failed.stderr);
  assert.match(failed.stdout, /still 1\./);
  assert.match(failed.stderr, /Memory consolidation failed \(nothing lost/);
  assert.equal(fs.readFileSync(path.join(ws, '.keel', 'memory', 'MEMORY.md'), 'utf8'), memory);
});
