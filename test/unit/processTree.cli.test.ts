import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { probeProcessTree } from '../../src/agent/node/processTree.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, processesWith, runKeel, tempWorkspace } from './helpers/cli.ts';

// Without the OS sandbox (`--sandbox off`), a command's whole process tree still ends with it: a
// grandchild that left the process group (setsid) and dropped Keel's environment marker (env -i)
// does not outlive `keel tool Bash` or `keel run`, on every tier this machine offers (a cgroup, a
// PID namespace). Only the process-group tier (macOS, Windows, locked-down containers) cannot.

let emu: Emulator;
const markers: string[] = [];
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
  // Whatever escaped is killed by PID, so a failing run leaves nothing behind.
  for (const marker of markers) for (const pid of processesWith(marker)) process.kill(pid, 'SIGKILL');
});

function marker(): string {
  const m = `keel-escape-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  markers.push(m);
  return m;
}

/** A grandchild in its own session with an empty environment: neither the group nor the marker finds it. */
const escapee = (m: string) => `setsid sh -c 'exec env -i sh -c "sleep 300; echo ${m}"' > /dev/null 2>&1 &`;

const tiers = (['cgroup', 'pidns'] as const).filter(
  (tier) => probeProcessTree({ fresh: true, env: { ...process.env, KEEL_PROCESS_TREE: tier } }).tier === tier,
);

async function survivors(m: string): Promise<number[]> {
  // The kernel may take a moment to tear a namespace down after keel exits.
  for (let i = 0; i < 10; i++) {
    const left = processesWith(m);
    if (left.length === 0) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
  return processesWith(m);
}

describe('process-tree cleanup with --sandbox off', {
  skip: tiers.length === 0 && 'no cgroup or PID namespace here',
}, () => {
  for (const tier of tiers) {
    test(`${tier}: a setsid + env -i grandchild does not outlive keel tool Bash`, async () => {
      const ws = tempWorkspace();
      const m = marker();
      const run = await runKeel(
        [
          'tool',
          'Bash',
          JSON.stringify({ command: escapee(m) }),
          '--workspace',
          ws,
          '--approve',
          'all',
          '--sandbox',
          'off',
        ],
        cliEnv(emu.url, { KEEL_PROCESS_TREE: tier }),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(JSON.parse(run.stdout).status, 'success', run.stdout);
      assert.deepEqual(await survivors(m), [], 'the grandchild survived keel');
    });

    test(`${tier}: a timed-out command's escaped grandchild is stopped with it`, async () => {
      const ws = tempWorkspace();
      const m = marker();
      const run = await runKeel(
        [
          'tool',
          'Bash',
          JSON.stringify({ command: `${escapee(m)} sleep 30`, timeout_ms: 500 }),
          '--workspace',
          ws,
          '--approve',
          'all',
          '--sandbox',
          'off',
        ],
        cliEnv(emu.url, { KEEL_PROCESS_TREE: tier }),
      );
      assert.match(run.stdout, /TIMEOUT/);
      assert.deepEqual(await survivors(m), [], 'the grandchild survived the timeout');
    });

    test(`${tier}: the same through a keel run session (foreground and background commands)`, async () => {
      const ws = tempWorkspace();
      const fg = marker();
      const bg = marker();
      const call = (input: Record<string, unknown>): ScriptedReply => ({
        content: [{ type: 'tool_use', name: 'Bash', input }],
      });
      emu.setScenario({
        replies: [
          call({ command: escapee(fg) }),
          call({ command: `${escapee(bg)} sleep 60`, run_in_background: true }),
          { content: [{ type: 'text', text: 'done' }] },
        ],
      });
      const run = await runKeel(
        ['run', '--workspace', ws, '--approve', 'all', '--sandbox', 'off', '--job-wait', '0', 'go'],
        cliEnv(emu.url, { KEEL_PROCESS_TREE: tier }),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(await survivors(fg), [], 'a foreground command left a process behind');
      assert.deepEqual(await survivors(bg), [], 'a background job left a process behind');
    });
  }
});
