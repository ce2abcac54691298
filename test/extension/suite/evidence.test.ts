import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { openFromTrace } from '../../../src/extension/evidence.ts';
import type { KeelApi } from '../../../src/extension/extension.ts';
import type { Emulator } from '../../emulator/server.ts';
import { connectToEmulator, waitFor } from './helpers.ts';

// "Keel: Open Trace" and "Keel: Run Eval Suite…" in the real extension host.

const webviewTabs = (prefix: string) =>
  vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .filter((t) => t.input instanceof vscode.TabInputWebview && t.label.startsWith(prefix));

describe('Evidence commands', () => {
  let emulator: Emulator;
  let api: KeelApi;
  let disconnect: () => Promise<void>;

  before(async () => {
    ({ emulator, api, disconnect } = await connectToEmulator());
  });
  after(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    await disconnect();
  });

  it('the small context-window warning reaches the panel (the controller forwards it)', async () => {
    const config = vscode.workspace.getConfiguration('keel');
    await config.update('contextWindow', 20_000, vscode.ConfigurationTarget.Global);
    const notices: string[] = [];
    const listening = api.controller.onDidChange((e) => {
      if (e.type === 'event' && e.event.type === 'notice') notices.push(e.event.text);
    });
    try {
      api.controller.newChat();
      await api.controller.ensure();
      assert.ok(
        notices.some((t) => /Small context window \(20000 tokens\)/.test(t)),
        JSON.stringify(notices),
      );
    } finally {
      listening.dispose();
      await config.update('contextWindow', undefined, vscode.ConfigurationTarget.Global);
      api.controller.newChat();
    }
  });

  it('Open Trace shows the session trace in a webview', async () => {
    emulator.setScenario({ replies: [{ content: [{ type: 'text', text: 'traced reply' }] }] });
    const result = await api.controller.submit('say something', { idempotencyKey: `trace-${Date.now()}` });
    assert.ok(result.ok, JSON.stringify(result));
    await waitFor('the run to end', () => api.controller.current?.running === false, 30_000);
    const id = api.controller.current!.id;
    const opened = (await vscode.commands.executeCommand('keel.openTrace', id)) as
      | { title: string; logPath: string }
      | undefined;
    assert.ok(opened, 'the command opened a trace');
    assert.equal(opened.title, `Keel Trace ${id}`);
    await waitFor('the trace tab', () => webviewTabs('Keel Trace').length > 0, 10_000);
  });

  it('a file link on the trace page opens the workspace file at its line; anything else opens nothing', async () => {
    const root = vscode.workspace.workspaceFolders![0]!.uri.fsPath;
    const rel = `trace-link-${Date.now()}.txt`;
    fs.writeFileSync(path.join(root, rel), 'one\ntwo\nthree\n');
    const outside = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-ext-outside-')), 'secret.txt');
    fs.writeFileSync(outside, 'secret\n');
    fs.symlinkSync(outside, path.join(root, `${rel}.link`));
    const warnings: string[] = [];
    const log = (level: string, message: string) => void (level === 'warn' && warnings.push(message));
    try {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      assert.equal(await openFromTrace({ type: 'open', path: rel, line: 3 }, log), true);
      const editor = vscode.window.activeTextEditor;
      assert.equal(editor?.document.uri.fsPath, path.join(root, rel));
      assert.equal(editor?.selection.active.line, 2, 'the cursor is on line 3');
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      for (const refused of [
        { type: 'open', path: outside, line: 1 },
        { type: 'open', path: `${rel}.link` },
        { type: 'open', path: '../../etc/passwd' },
      ])
        assert.equal(await openFromTrace(refused, log), false, JSON.stringify(refused));
      for (const junk of [{ type: 'run', command: 'rm -rf /' }, { type: 'open', path: rel, line: -1 }, 'x'])
        assert.equal(await openFromTrace(junk, log), false);
      assert.equal(warnings.length, 3, 'each malformed message is logged');
      const opened = vscode.window.visibleTextEditors.map((e) => e.document.uri.fsPath);
      assert.ok(!opened.includes(outside), `nothing outside the workspace opened: ${opened.join(', ')}`);
    } finally {
      fs.rmSync(path.join(root, rel), { force: true });
      fs.rmSync(path.join(root, `${rel}.link`), { force: true });
      fs.rmSync(path.dirname(outside), { recursive: true, force: true });
    }
  });

  it('Run Eval Suite runs keel eval in the background and opens its report', async () => {
    const suite = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-ext-suite-'));
    fs.mkdirSync(path.join(suite, 'fixture'));
    fs.mkdirSync(path.join(suite, 'tasks'));
    fs.writeFileSync(path.join(suite, 'fixture', 'a.txt'), 'old\n');
    fs.writeFileSync(
      path.join(suite, 'suite.json'),
      JSON.stringify({ name: 'ext', defaults: { trials: 2 } }),
    );
    fs.writeFileSync(
      path.join(suite, 'tasks', 'edit.json'),
      JSON.stringify({
        id: 'edit',
        prompt: 'Replace old with new in a.txt.',
        fixture: 'fixture',
        graders: [{ type: 'file', path: 'a.txt', equals: 'new\n' }],
        emulator: {
          policy: 'succeeds',
          steps: [{ read: 'a.txt' }, { edit: { path: 'a.txt', old: 'old', new: 'new' } }],
        },
      }),
    );
    const result = (await vscode.commands.executeCommand('keel.runEvalSuite', suite, 'emulator')) as
      | { code: number; report?: string }
      | undefined;
    assert.ok(result?.report, JSON.stringify(result));
    assert.equal(result.code, 0);
    const report = JSON.parse(fs.readFileSync(result.report, 'utf8')) as {
      tasks: { id: string; passed: number; trials: number }[];
    };
    assert.deepEqual(
      report.tasks.map((t) => [t.id, t.trials, t.passed]),
      [['edit', 2, 2]],
    );
    await waitFor('the report tab', () => webviewTabs('Keel Eval').length > 0, 10_000);
  });
});
