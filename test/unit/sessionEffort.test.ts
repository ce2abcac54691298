import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { rgPath } from '@vscode/ripgrep';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import type { AgentSessionOptions } from '../../src/agent/session/types.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { tempWorkspace } from './helpers/cli.ts';

// The panel's effort picker drives `session.setEffort`: the chat's next runs think at that level, and
// the choice is in the session's log, so a reopened chat keeps it (over the setting's default).

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const answers = (n: number) =>
  emu.setScenario({
    replies: Array.from({ length: n }, () => ({ content: [{ type: 'text', text: 'ok' }] })),
  });
const lastBody = () => emu.requests.at(-1)!.body as { thinking?: unknown; output_config?: unknown };

test("the effort picker's level applies to the next runs and is stored with the session", async () => {
  const workspace = tempWorkspace({ 'a.txt': 'alpha\n' });
  const open = (extra: Partial<AgentSessionOptions> = {}) =>
    createAgentSession({
      host: createNodeHost({ workspace, approvals: createPolicyApprovals('never'), ripgrepPath: rgPath }),
      model: 'claude-sonnet-4-6',
      apiKey: 'k',
      baseURL: emu.url,
      effort: 'medium',
      ...extra,
    });
  const s = open();
  answers(3);
  await s.prompt('one');
  assert.deepEqual(lastBody().output_config, { effort: 'medium' }, 'the setting until the chat picks one');
  s.setEffort('off');
  assert.equal(s.effort, 'off');
  await s.prompt('two');
  assert.equal(lastBody().thinking, undefined, 'no thinking from the next run on');
  s.setEffort('high');
  await s.prompt('three');
  assert.deepEqual(lastBody().output_config, { effort: 'high' });
  const id = s.id;
  s.dispose();

  // Reopened (the setting says low): the chat's own choice wins.
  const again = open({ resumeId: id, effort: 'low' });
  assert.equal(again.effort, 'high');
  answers(1);
  await again.prompt('four');
  assert.deepEqual(lastBody().output_config, { effort: 'high' });
  assert.ok(
    again.eventsSince(0).some((e) => e.type === 'effort_change' && e.effort === 'high'),
    'the change is an event in the log',
  );
  again.dispose();
});
