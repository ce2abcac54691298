import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { processesWith, waitFor } from './helpers/cli.ts';

// Background jobs and the session's lifecycle, as the extension drives it: jobs outlive the run that
// started them (a dev server), Stop ends only the current run's jobs, and disposing the session (New
// Chat, another session, window close) ends every job.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const bg = (command: string): ScriptedReply => ({
  content: [{ type: 'tool_use', name: 'Bash', input: { command, run_in_background: true } }],
});
const text = (t: string): ScriptedReply => ({ content: [{ type: 'text', text: t }] });
const uniqueSleep = (n: number) => `${300 + n}.${process.pid}${Math.floor(Math.random() * 99)}`;

test('Stop ends the jobs of the current run only; disposing the session ends the rest', async () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-jobs-')));
  const first = uniqueSleep(1);
  const second = uniqueSleep(2);
  emu.setScenario({
    replies: [
      bg(`sleep ${first}`),
      text('the server runs'),
      bg(`sleep ${second}`),
      { fault: { type: 'slow', delayMs: 30_000 }, content: [{ type: 'text', text: 'late' }] },
    ],
  });
  const session = createAgentSession({
    host: createNodeHost({ workspace: ws, approvals: { ask: async () => 'deny' } }),
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
  });
  const one = await session.prompt('start the server');
  assert.equal(one.status, 'finished');
  assert.equal(processesWith(`sleep ${first}`).length, 1, 'a job outlives the run that started it');
  assert.deepEqual(
    session.jobs.map((j) => j.status),
    ['running'],
  );

  const two = session.prompt('start another');
  await waitFor(() => processesWith(`sleep ${second}`).length > 0, 10_000, 'the second job');
  session.abort('stopped by the user');
  assert.equal((await two).status, 'aborted');
  await waitFor(() => processesWith(`sleep ${second}`).length === 0, 10_000, "the stopped run's job to end");
  assert.equal(processesWith(`sleep ${first}`).length, 1, "an earlier run's job keeps running");

  session.dispose();
  await waitFor(() => processesWith(`sleep ${first}`).length === 0, 10_000, 'every job to end on dispose');
});
