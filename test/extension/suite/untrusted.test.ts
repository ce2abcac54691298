import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
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

  it('Run Eval Suite refuses to run anything (a suite names commands)', async () => {
    const root = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    const suite = path.join(root, 'eval', 'untrusted');
    // Written by the test (Keel itself writes nothing here): a grader that would leave a mark.
    fs.mkdirSync(path.join(suite, 'tasks'), { recursive: true });
    fs.mkdirSync(path.join(suite, 'fixture'), { recursive: true });
    fs.writeFileSync(path.join(suite, 'fixture', 'a.txt'), 'x\n');
    fs.writeFileSync(path.join(suite, 'suite.json'), JSON.stringify({ name: 'untrusted' }));
    const mark = path.join(root, 'eval-ran.txt');
    fs.writeFileSync(
      path.join(suite, 'tasks', 't.json'),
      JSON.stringify({
        id: 't',
        prompt: 'x',
        fixture: 'fixture',
        graders: [{ type: 'command', run: `touch ${mark}` }],
        emulator: { policy: 'succeeds', steps: [] },
      }),
    );
    const result = await vscode.commands.executeCommand('keel.runEvalSuite', suite, 'emulator');
    assert.equal(result, undefined);
    assert.ok(!fs.existsSync(mark), 'no grader ran');
  });
});
