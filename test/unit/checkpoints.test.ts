import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { planRestore } from '../../src/agent/checkpoints/restore.ts';
import { applyRestore } from '../../src/agent/checkpoints/restoreApply.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { tempWorkspace } from './helpers/cli.ts';

// Checkpoints in a real session (real SDK, emulator over HTTP): what the user saves while Keel works
// is never recorded as Keel's, so a restore never reverts it; ignored folders are watched but not copied.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const bash = (command: string): ScriptedReply => ({
  content: [{ type: 'tool_use', name: 'Bash', input: { command } }],
});
const done: ScriptedReply = { content: [{ type: 'text', text: 'done' }] };

function session(ws: string) {
  return createAgentSession({
    host: createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all') }),
    model: 'claude-sonnet-4-6',
    apiKey: 'test',
    baseURL: emu.url,
    userSkillsDir: null,
  });
}

test('a file the user saves between two of Keel’s commands is not Keel’s change and is never restored', async () => {
  const ws = tempWorkspace({ 'a.txt': 'a0\n', 'user.txt': 'u0\n', 'keep.txt': 'k0\n' });
  emu.setScenario({
    respond: (_req, index) => {
      if (index === 1) fs.writeFileSync(path.join(ws, 'user.txt'), 'the user saved this\n');
      return [bash('echo a1 > a.txt'), bash('echo b1 > b.txt'), done][index] ?? done;
    },
  });
  const s = session(ws);
  const outcome = await s.prompt('go');
  assert.equal(outcome.status, 'finished', outcome.error);
  const stateDir = path.join(ws, '.keel');
  const plan = planRestore({ stateDir, root: ws, sessionId: s.id, beforePrompt: 1 });
  assert.deepEqual(
    plan.items.map((i) => [i.path, i.action, i.status]),
    [
      ['a.txt', 'write', 'ok'],
      ['b.txt', 'delete', 'ok'],
    ],
  );
  applyRestore(plan, { stateDir, root: ws, now: () => Date.now() });
  assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'a0\n');
  assert.ok(!fs.existsSync(path.join(ws, 'b.txt')));
  assert.equal(fs.readFileSync(path.join(ws, 'user.txt'), 'utf8'), 'the user saved this\n');
  assert.equal(fs.readFileSync(path.join(ws, 'keep.txt'), 'utf8'), 'k0\n');
  s.dispose();
});

test('inside an ignored folder: created files are removed, modified ones are reported without a copy', async () => {
  const ws = tempWorkspace({ '.gitignore': 'build/\n', 'build/old.js': 'old\n', 'src.txt': 's0\n' });
  emu.setScenario({
    replies: [bash('echo new > build/new.js && echo changed > build/old.js && echo s1 > src.txt'), done],
  });
  const s = session(ws);
  const outcome = await s.prompt('build it');
  assert.equal(outcome.status, 'finished', outcome.error);
  const stateDir = path.join(ws, '.keel');
  const plan = planRestore({ stateDir, root: ws, sessionId: s.id, beforePrompt: 1 });
  assert.deepEqual(
    plan.items.map((i) => [i.path, i.status]),
    [
      ['build/new.js', 'ok'],
      ['build/old.js', 'unrecoverable'],
      ['src.txt', 'ok'],
    ],
  );
  // Nothing from build/ was copied (by the session; the restore keeps what it removes, for undo) into the checkpoint store.
  const blobs = fs.readdirSync(path.join(stateDir, 'checkpoints', s.id, 'blobs'), { recursive: true });
  const stored = blobs
    .map((b) => path.join(stateDir, 'checkpoints', s.id, 'blobs', String(b)))
    .filter((p) => fs.statSync(p).isFile())
    .map((p) => fs.readFileSync(p, 'utf8'));
  assert.ok(!stored.includes('old\n') && !stored.includes('new\n'));
  const result = applyRestore(plan, { stateDir, root: ws, now: () => Date.now() });
  assert.equal(result.unrecoverable, 1);
  assert.ok(!fs.existsSync(path.join(ws, 'build/new.js')));
  assert.equal(fs.readFileSync(path.join(ws, 'build/old.js'), 'utf8'), 'changed\n', 'no copy: left as it is');
  assert.equal(fs.readFileSync(path.join(ws, 'src.txt'), 'utf8'), 's0\n');
  s.dispose();
});

test('the recording shell keeps the host shell’s OS sandbox visible to Bash', async () => {
  const { createCheckpointRecorder } = await import('../../src/agent/checkpoints/recorder.ts');
  const ws = tempWorkspace({ 'a.txt': 'a\n' });
  const recorder = createCheckpointRecorder({
    stateDir: path.join(ws, '.keel'),
    sessionId: 's',
    root: ws,
    now: () => Date.now(),
  });
  const sandbox = { info: { tier: 'bwrap' } } as never;
  const inner = { run: async () => ({}) as never, sandbox };
  assert.equal(recorder.wrapShell(inner).sandbox, sandbox);
});
