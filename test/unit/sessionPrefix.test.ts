import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { rgPath } from '@vscode/ripgrep';
import type { AgentEvent } from '../../src/agent/events.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { loadSession } from '../../src/agent/session/log.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { initialState } from '../../webview-ui/src/model.ts';
import { reduce } from '../../webview-ui/src/reducer.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// The session log holds the frozen prefix (system + tools) so a trace or replay can rebuild every
// request; warnings raised while a session is built reach the CLI and the panel.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

function open(workspace: string, extra: { resumeId?: string; contextWindow?: number } = {}) {
  const host = createNodeHost({ workspace, approvals: createPolicyApprovals('never'), ripgrepPath: rgPath });
  return createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
    ...extra,
  });
}

test('the prefix is logged once, before the first call, with the hash every call reports', async () => {
  const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
  const s = open(ws);
  await s.prompt('one');
  await s.prompt('two');
  const loaded = loadSession(s.logPath);
  assert.equal(loaded.prefixes.length, 1, 'one prefix record for an unchanged prefix');
  const prefix = loaded.prefixes[0]!;
  const calls = loaded.events.flatMap((e) => (e.type === 'model_call' ? [e] : []));
  assert.equal(calls.length, 2);
  for (const call of calls) assert.equal(call.record.prefix_hash, prefix.hash);
  assert.ok(prefix.seq < calls[0]!.seq, 'the prefix precedes the first call');
  // It is the prefix as sent: the request the emulator received carries the same system and tools.
  const sent = emu.requests.at(-1)!.body as { system: unknown; tools: unknown };
  assert.deepEqual(prefix.system, sent.system);
  assert.deepEqual(prefix.tools, sent.tools);
  const text = JSON.stringify(prefix.system);
  assert.match(text, /./);
  assert.ok((prefix.tools as { name: string }[]).some((t) => t.name === 'Read'));
  // Seqs stay unique across events and the prefix record.
  const seqs = [...loaded.events.map((e) => e.seq), prefix.seq];
  assert.equal(new Set(seqs).size, seqs.length);
});

test('a resumed session logs the prefix again only when it changed (and with the new hash)', async () => {
  const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
  const first = open(ws);
  await first.prompt('one');
  const id = first.id;
  const same = open(ws, { resumeId: id });
  await same.prompt('two');
  assert.equal(loadSession(first.logPath).prefixes.length, 1, 'unchanged prefix: no second record');
  fs.writeFileSync(path.join(ws, 'AGENTS.md'), '# Rules\nAlways answer in French.\n');
  const changed = open(ws, { resumeId: id });
  await changed.prompt('three');
  const loaded = loadSession(first.logPath);
  assert.equal(loaded.prefixes.length, 2);
  assert.notEqual(loaded.prefixes[0]!.hash, loaded.prefixes[1]!.hash);
  assert.match(JSON.stringify(loaded.prefixes[1]!.system), /Always answer in French/);
  const last = loaded.events.filter((e) => e.type === 'model_call').at(-1);
  assert.equal(last?.type === 'model_call' && last.record.prefix_hash, loaded.prefixes[1]!.hash);
});

test('the small-window warning reaches a subscriber that attaches after the session is built, and the panel shows it', async () => {
  const s = open(tempWorkspace(), { contextWindow: 20_000 });
  const seen: AgentEvent[] = [];
  s.subscribe((e) => seen.push(e));
  const notice = seen.find((e) => e.type === 'notice');
  assert.ok(notice?.type === 'notice' && /Small context window \(20000 tokens\)/.test(notice.text));
  // The panel renders the event the controller forwards.
  let state = initialState();
  for (const e of seen) state = reduce(state, e);
  const item = state.items.find((i) => i.kind === 'notice');
  assert.ok(
    item && item.kind === 'notice' && item.level === 'warn' && /Small context window/.test(item.text),
  );
  // A second, later subscriber sees it too; a large window raises nothing.
  const again: AgentEvent[] = [];
  s.subscribe((e) => again.push(e));
  assert.equal(again.filter((e) => e.type === 'notice').length, 1);
  const big: AgentEvent[] = [];
  open(tempWorkspace()).subscribe((e) => big.push(e));
  assert.equal(big.filter((e) => e.type === 'notice' && /Small context/.test(e.text)).length, 0);
});

test('keel run prints the small-window warning on stderr', async () => {
  const run = await runKeel(
    ['run', '--workspace', tempWorkspace(), '--context-window', '20000', 'hi'],
    cliEnv(emu.url),
  );
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /Small context window \(20000 tokens\)/);
});
