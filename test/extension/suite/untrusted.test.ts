import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { KeelApi } from '../../../src/extension/extension.ts';
import { type Emulator, startEmulator } from '../../emulator/server.ts';
import { waitFor } from './helpers.ts';

// Runs in its own window (test/extension/run.ts, second pass): code-server started WITHOUT
// --disable-workspace-trust, on a folder nobody trusted, so VS Code itself puts the window in
// restricted mode. No stub: the extension reads vscode.workspace.isTrusted like it does for users.

const WRITE_TOOLS = ['Bash', 'Edit', 'MultiEdit', 'Write'];

describe('Keel in an untrusted workspace (restricted mode)', () => {
  let emulator: Emulator;
  let api: KeelApi;
  const savedKey = process.env.ANTHROPIC_API_KEY;
  const keel = () => vscode.workspace.getConfiguration('keel');

  before(async () => {
    emulator = await startEmulator({ port: 0 });
    process.env.ANTHROPIC_API_KEY = 'test-key';
    await keel().update('baseUrl', emulator.url, vscode.ConfigurationTarget.Global);
  });
  after(async () => {
    await keel().update('baseUrl', undefined, vscode.ConfigurationTarget.Global);
    if (savedKey === undefined) delete process.env.ANTHROPIC_API_KEY;
    else process.env.ANTHROPIC_API_KEY = savedKey;
    api?.controller.newChat();
    await emulator.close();
  });

  it('VS Code reports the folder as untrusted, and Keel still activates (limited support)', async () => {
    assert.equal(vscode.workspace.isTrusted, false);
    const ext = vscode.extensions.getExtension<KeelApi>('keel-dev.keel');
    assert.ok(ext, 'Keel is enabled in restricted mode');
    api = await ext.activate();
    assert.equal(ext.isActive, true);
  });

  it('a prompt offers the model no Bash/Edit/Write/MultiEdit, only read-only tools', async () => {
    emulator.setScenario({ replies: [{ content: [{ type: 'text', text: 'Read-only here.' }] }] });
    await waitFor('the emulator URL in the settings', () => (keel().get('baseUrl') ? true : undefined));
    const result = await api.controller.submit('What can you do here?', {
      idempotencyKey: `untrusted-${Date.now()}`,
    });
    assert.ok(result.ok && result.outcome, result.error);
    const outcome = await result.outcome;
    assert.equal(outcome.status, 'finished', outcome.error);
    assert.equal(emulator.requests.length, 1);
    const body = emulator.requests[0]!.body as { tools?: { name: string }[] };
    const tools = (body.tools ?? []).map((t) => t.name).sort();
    console.log(`[keel] tools offered in an untrusted workspace: ${tools.join(', ')}`);
    for (const name of WRITE_TOOLS) assert.ok(!tools.includes(name), `${name} offered: ${tools}`);
    assert.ok(tools.includes('Read') && tools.includes('Grep'), `${tools}`);
  });
});
