import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { KeelApi } from '../../../src/extension/extension.ts';
import type { Emulator } from '../../emulator/server.ts';
import { connectToEmulator, waitFor } from './helpers.ts';

// Background jobs and sub-agents in the extension host, against the emulator: a job outlives its run
// (a dev server), Stop ends the running run's jobs, New Chat ends every job of the session, and a
// Task's sub-agent reaches the model with its own conversation.

function sleeping(marker: string): number {
  let found = 0;
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(`sleep\0${marker}`)) found++;
    } catch {
      // gone
    }
  }
  return found;
}

const bg = (command: string) => ({
  content: [{ type: 'tool_use' as const, name: 'Bash', input: { command, run_in_background: true } }],
});
const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

describe('Background jobs and sub-agents in VS Code', () => {
  let emulator: Emulator;
  let api: KeelApi;
  let disconnect: () => Promise<void>;

  before(async () => {
    ({ emulator, api, disconnect } = await connectToEmulator());
    api.controller.newChat();
  });
  after(async () => {
    await disconnect();
  });

  it('a job outlives its run; Stop ends only the running run’s jobs; New Chat ends the rest', async () => {
    const server = `611.${process.pid}1`;
    const build = `612.${process.pid}2`;
    emulator.setScenario({
      replies: [
        bg(`sleep ${server}`),
        text('The server is running.'),
        bg(`sleep ${build}`),
        { ...text('late'), fault: { type: 'slow', delayMs: 30_000 } },
      ],
    });
    const first = await api.controller.submit('start the dev server');
    assert.equal(first.ok, true);
    await waitFor('the first run to end', () => !api.controller.current?.running, 30_000);
    // The job's process may still be starting (the OS sandbox takes a moment) when the run ends.
    await waitFor('the job running after its run ended', () => sleeping(server) > 0 || undefined, 10_000);
    assert.equal(api.controller.current?.jobs[0]?.status, 'running', 'the job outlived its run');

    void api.controller.submit('start a build');
    await waitFor('the second job', () => sleeping(build) > 0, 30_000);
    await vscode.commands.executeCommand('keel.stop');
    await waitFor("Stop to end the run's job", () => sleeping(build) === 0, 10_000);
    assert.ok(sleeping(server) > 0, "Stop leaves an earlier run's job running");

    await vscode.commands.executeCommand('keel.newChat');
    await waitFor('New Chat to end every job', () => sleeping(server) === 0, 10_000);
  });

  it('a Task runs a sub-agent whose requests carry none of the chat', async () => {
    emulator.setScenario({
      replies: [
        {
          content: [
            { type: 'tool_use', name: 'Task', input: { description: 'Look', prompt: 'EXT-CHILD: list' } },
          ],
        },
        text('Done with the sub-agent.'),
      ],
      threads: [
        {
          firstUserContains: 'EXT-CHILD',
          replies: [
            { content: [{ type: 'tool_use', name: 'LS', input: {} }] },
            text('## Summary\nThe folder has a README.'),
          ],
        },
      ],
    });
    const before = emulator.requests.length;
    const result = await api.controller.submit('EXT-PARENT: use a sub-agent');
    assert.equal(result.ok, true);
    const session = api.controller.current;
    assert.ok(session);
    await waitFor('the run to end', () => !api.controller.current?.running, 30_000);
    const sent = emulator.requests.slice(before).map((r) => JSON.stringify(r.body));
    const child = sent.filter((b) => b.includes('EXT-CHILD: list') && !b.includes('EXT-PARENT'));
    assert.equal(child.length, 2, 'two sub-agent requests, without the parent transcript');
    assert.match(sent.at(-1) ?? '', /The folder has a README/);
    assert.ok(
      session.eventsSince(0).some((e) => e.type === 'subagent_end' && e.status === 'finished'),
      'the session recorded the sub-agent',
    );
    api.controller.newChat();
  });
});
