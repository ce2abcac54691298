import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { planRestore } from '../../src/agent/checkpoints/restore.ts';
import { applyRestore } from '../../src/agent/checkpoints/restoreApply.ts';
import { openCheckpointStore } from '../../src/agent/checkpoints/store.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { tempWorkspace, waitFor } from './helpers/cli.ts';

// With the kept-up-to-date scan (only what the kernel reported is looked at again between commands),
// what others change between prompts — the user saving in an editor, a separate process, a background
// job — must still be the exact "before" a restore puts back. Both detectors must agree byte for byte.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const bash = (command: string, background = false): ScriptedReply => ({
  content: [
    {
      type: 'tool_use',
      name: 'Bash',
      input: { command, ...(background ? { run_in_background: true } : {}) },
    },
  ],
});
const done: ScriptedReply = { content: [{ type: 'text', text: 'done' }] };

function session(ws: string, detector: 'watch' | 'full') {
  return createAgentSession({
    host: createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all') }),
    model: 'claude-sonnet-4-6',
    apiKey: 'test',
    baseURL: emu.url,
    userSkillsDir: null,
    checkpoints: { detector },
  });
}

const read = (ws: string, rel: string) => fs.readFileSync(path.join(ws, rel), 'utf8');

for (const detector of ['watch', 'full'] as const) {
  test(`${detector}: files others changed between prompts are restored to exactly those bytes`, async () => {
    const ws = tempWorkspace({
      'a.txt': 'a0\n',
      'editor.txt': 'e0\n',
      'nested/proc.txt': 'p0\n',
      'untouched.txt': 'u0\n',
    });
    const untouchedMtime = fs.statSync(path.join(ws, 'untouched.txt')).mtimeMs;
    emu.setScenario({
      replies: [
        bash('echo a1 > a.txt'),
        done,
        bash('echo e2 > editor.txt && echo p2 > nested/proc.txt && mkdir -p made && echo m > made/new.txt'),
        done,
        bash('echo a3 > a.txt && rm nested/proc.txt'),
        done,
      ],
    });
    const s = session(ws, detector);
    try {
      assert.equal((await s.prompt('one')).status, 'finished');
      // Between prompts: the user saves in the editor (temp file renamed over), another process writes.
      fs.writeFileSync(path.join(ws, '.editor.txt.swp'), 'saved by the user\n');
      fs.renameSync(path.join(ws, '.editor.txt.swp'), path.join(ws, 'editor.txt'));
      execFileSync(process.execPath, [
        '-e',
        `require('fs').writeFileSync(${JSON.stringify(path.join(ws, 'nested/proc.txt'))}, 'written by another process\\n')`,
      ]);
      assert.equal((await s.prompt('two')).status, 'finished');
      assert.equal((await s.prompt('three')).status, 'finished');

      const stateDir = path.join(ws, '.keel');
      const plan = planRestore({ stateDir, root: ws, sessionId: s.id, beforePrompt: 2 });
      assert.deepEqual(
        plan.items.map((i) => [i.path, i.action, i.status]),
        [
          ['a.txt', 'write', 'ok'],
          ['editor.txt', 'write', 'ok'],
          ['made/new.txt', 'delete', 'ok'],
          ['nested/proc.txt', 'write', 'ok'],
        ],
      );
      applyRestore(plan, { stateDir, root: ws, now: () => Date.now() });
      assert.equal(read(ws, 'a.txt'), 'a1\n', 'prompt 1 keeps its change');
      assert.equal(read(ws, 'editor.txt'), 'saved by the user\n');
      assert.equal(read(ws, 'nested/proc.txt'), 'written by another process\n');
      assert.ok(!fs.existsSync(path.join(ws, 'made/new.txt')));
      assert.equal(read(ws, 'untouched.txt'), 'u0\n');
      assert.equal(fs.statSync(path.join(ws, 'untouched.txt')).mtimeMs, untouchedMtime);
      assert.deepEqual(plan.notes, []);
    } finally {
      s.dispose();
    }
  });
}

test('a background job that writes while no prompt runs: its bytes are the next prompt’s baseline, and restore names the job', async () => {
  const ws = tempWorkspace({ 'src.txt': 's0\n' });
  const marker = path.join(ws, 'job.txt');
  emu.setScenario({
    replies: [
      bash(`sleep 0.3 && echo from the job > job.txt`, true),
      done,
      bash('echo changed by prompt 2 > job.txt && echo s2 > src.txt'),
      done,
    ],
  });
  const s = session(ws, 'watch');
  try {
    assert.equal((await s.prompt('start the job')).status, 'finished');
    await waitFor(() => fs.existsSync(marker), 30_000, "the job's file");
    await waitFor(() => !s.jobs.some((j) => j.status === 'running'), 30_000, 'the job to end');
    // The job's end record is written once its process wrapper settles, a moment after its status
    // flips: wait for it, as a user's next prompt (seconds later) would.
    const ended = () =>
      openCheckpointStore(path.join(ws, '.keel'), s.id)
        .jobs()
        .some((j) => j.event === 'end');
    await waitFor(ended, 30_000, "the job's end record");
    assert.equal(read(ws, 'job.txt'), 'from the job\n');
    assert.equal((await s.prompt('edit')).status, 'finished');

    const stateDir = path.join(ws, '.keel');
    const plan = planRestore({ stateDir, root: ws, sessionId: s.id, beforePrompt: 2 });
    assert.deepEqual(plan.notes, [], 'the job had ended before prompt 2');
    applyRestore(plan, { stateDir, root: ws, now: () => Date.now() });
    assert.equal(read(ws, 'job.txt'), 'from the job\n', 'back to what the job left, not deleted');
    assert.equal(read(ws, 'src.txt'), 's0\n');

    const whole = planRestore({ stateDir, root: ws, sessionId: s.id, beforePrompt: 1 });
    assert.equal(whole.notes.length, 1);
    assert.match(
      whole.notes[0]!,
      /Background job `sleep 0\.3 && echo from the job > job\.txt` \(started in prompt 1\)/,
    );
    assert.match(whole.notes[0]!, /not checkpointed/);
  } finally {
    s.dispose();
  }
});
