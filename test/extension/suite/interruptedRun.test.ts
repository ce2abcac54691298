import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import type * as vscode from 'vscode';
import type { AgentEvent } from '../../../src/agent/events.ts';
import { createAgentSession } from '../../../src/agent/session/session.ts';
import { closeInterruptedRun, INTERRUPTED_MESSAGE } from '../../../src/extension/interruptedRun.ts';
import { createSessionController, type SessionController } from '../../../src/extension/sessionController.ts';
import { readSettings } from '../../../src/extension/settings.ts';
import { type Emulator, startEmulator } from '../../emulator/server.ts';
import { createHarness, type Harness, waitFor } from './helpers.ts';

// A run cut off by a window reload: the extension host dies mid-stream, so the session log holds an
// `agent_start` with no end. Reopening that session (what the panel does after the reload) must
// record the run as ended — aborted — and leave a session that takes the next prompt.

function logEvents(file: string): AgentEvent[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .slice(1)
    .map((l) => JSON.parse(l) as AgentEvent);
}

function memento(): vscode.Memento {
  const values = new Map<string, unknown>();
  return {
    keys: () => [...values.keys()],
    get: <T>(key: string, fallback?: T) => (values.has(key) ? (values.get(key) as T) : fallback),
    update: async (key, value) => {
      values.set(key, value);
    },
  };
}

describe('A run cut off by a window reload', () => {
  let emulator: Emulator;
  let h: Harness;
  let controller: SessionController | undefined;
  beforeEach(async () => {
    h = createHarness();
    emulator = await startEmulator({ port: 0 });
  });
  afterEach(async () => {
    controller?.dispose();
    controller = undefined;
    await emulator.close();
    await h.dispose();
  });

  /** Starts a slow run and returns the session log as it stood mid-stream (the "killed" state). */
  async function cutRun(): Promise<{ id: string; logPath: string; cut: string }> {
    emulator.setScenario({
      replies: [
        {
          content: [{ type: 'text', text: 'A long answer that never gets to finish. '.repeat(20) }],
          fault: { type: 'slow', delayMs: 0, perChunkDelayMs: 100 },
        },
      ],
    });
    const session = createAgentSession({
      host: h.host,
      model: 'claude-sonnet-4-6',
      apiKey: 'test-key',
      baseURL: emulator.url,
    });
    const deltas: string[] = [];
    session.subscribe((e) => e.type === 'message_delta' && deltas.push(e.delta));
    const run = session.prompt('Tell me something long');
    await waitFor('the reply streaming', () => deltas.length >= 3);
    const cut = fs.readFileSync(session.logPath, 'utf8');
    session.abort('test over');
    await run;
    session.dispose();
    // The extension host was killed here: nothing after `cut` reached the log.
    fs.writeFileSync(session.logPath, cut);
    return { id: session.id, logPath: session.logPath, cut };
  }

  it('reopening the session records the run as aborted, and the next prompt works', async () => {
    const { id, logPath } = await cutRun();
    const before = logEvents(logPath);
    const start = before.find((e) => e.type === 'agent_start');
    assert.ok(start && start.type === 'agent_start');
    assert.ok(!before.some((e) => e.type === 'agent_end'), 'the cut log has no end');

    controller = createSessionController({
      host: () => h.host,
      settings: () => ({ ...readSettings(), baseUrl: emulator.url }),
      apiKey: async () => 'test-key',
      log: () => undefined,
      memento: memento(),
    });
    assert.equal(await controller.restore(id), true);
    const end = logEvents(logPath).find((e) => e.type === 'agent_end');
    assert.ok(end && end.type === 'agent_end', 'an end was logged');
    assert.equal(end.runId, start.runId);
    assert.equal(end.status, 'aborted');
    assert.equal(end.error, INTERRUPTED_MESSAGE);
    assert.ok(end.seq > Math.max(...before.map((e) => e.seq)), 'seq keeps increasing');
    // The panel's catch-up sees it too, and the session is idle.
    assert.ok(
      controller.current?.eventsSince(0).some((e) => e.type === 'agent_end' && e.runId === start.runId),
    );
    assert.equal(controller.current?.running, false);

    emulator.setScenario({ replies: [{ content: [{ type: 'text', text: 'Back after the reload.' }] }] });
    const result = await controller.submit('Are you there?');
    assert.equal(result.ok, true);
    assert.equal((await result.outcome)?.status, 'finished');
    const last = emulator.requests.at(-1);
    assert.ok(last);
    const sent = JSON.stringify((last.body as { messages: unknown }).messages);
    assert.match(sent, /Tell me something long/);
    assert.match(sent, /Are you there\?/);
    assert.equal(
      logEvents(logPath).filter((e) => e.type === 'agent_end').length,
      2,
      'one end per run, nothing added twice',
    );
  });

  it('a prompt sent while the panel restores the last session goes into that session and is answered', async () => {
    const { id, logPath } = await cutRun();
    const state = memento();
    await state.update('keel.lastSessionId', id);
    controller = createSessionController({
      host: () => h.host,
      settings: () => ({ ...readSettings(), baseUrl: emulator.url }),
      apiKey: async () => 'test-key',
      log: () => undefined,
      memento: state,
    });
    emulator.setScenario({
      replies: [{ content: [{ type: 'text', text: 'Answered in the restored chat.' }] }],
    });
    // After a reload the panel's `ready` restores the last session; the user's Enter comes meanwhile.
    const [, result] = await Promise.all([controller.restore(id), controller.submit('Typed right away')]);
    assert.equal(result.ok, true);
    assert.equal((await result.outcome)?.status, 'finished', 'the prompt ran to its answer');
    assert.equal(controller.current?.id, id, 'the restored chat is the current one, not replaced');
    assert.equal(controller.current?.logPath, logPath);
    const last = emulator.requests.at(-1);
    assert.ok(last);
    const sent = JSON.stringify((last.body as { messages: unknown }).messages);
    assert.match(sent, /Tell me something long/, 'the prompt went into the restored conversation');
    assert.match(sent, /Typed right away/);
  });

  it('leaves a session alone while another live extension host holds it', async () => {
    const { id, logPath, cut } = await cutRun();
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      fs.writeFileSync(`${logPath}.lock`, JSON.stringify({ pid: other.pid, since: Date.now() }));
      assert.equal(closeInterruptedRun(h.host.storage, h.host.stateDir, id, Date.now()), undefined);
      assert.equal(fs.readFileSync(logPath, 'utf8'), cut, 'its run may still be going: not touched');
    } finally {
      other.kill();
    }
    if (other.exitCode === null && other.signalCode === null) await new Promise((r) => other.once('exit', r));
    // Once that process is gone, the lock is stale and the run is closed.
    assert.ok(closeInterruptedRun(h.host.storage, h.host.stateDir, id, Date.now()));
    fs.rmSync(`${logPath}.lock`, { force: true });
  });
});
