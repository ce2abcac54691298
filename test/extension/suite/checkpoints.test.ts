import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RestoreCommandResult } from '../../../src/extension/checkpointCommands.ts';
import type { KeelApi } from '../../../src/extension/extension.ts';
import type { ForkCommandResult } from '../../../src/extension/forkCommand.ts';
import type { Emulator, ScriptedReply } from '../../emulator/server.ts';
import { connectToEmulator, waitFor } from './helpers.ts';

// Per-prompt checkpoints and the long-task view in the running extension (real VS Code, real
// session against the emulator): "Restore to before this" confirms with the list of files and
// conflicts, restores, and clears the restored files' pending review; the feature tree shows the list.

describe('Checkpoints and long tasks in the running extension', () => {
  let emulator: Emulator;
  let api: KeelApi;
  let disconnect: () => Promise<void>;
  const root = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;

  before(async () => {
    ({ emulator, api, disconnect } = await connectToEmulator());
  });
  after(async () => {
    await disconnect();
  });

  const call = (name: string, input: unknown): ScriptedReply => ({
    content: [{ type: 'tool_use', name, input }],
  });
  const say = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });

  async function prompt(text: string, replies: ScriptedReply[]) {
    emulator.setScenario({ replies });
    const result = await api.controller.submit(text, { idempotencyKey: `${text}-${Date.now()}` });
    assert.ok(result.ok, result.error);
    await waitFor('the run to end', () => !api.controller.current?.running, 30_000);
  }

  it('"Restore to before this" lists files and conflicts in its confirmation, restores, and undoes', async () => {
    api.controller.newChat();
    const dir = `ckpt${Date.now().toString(36)}`;
    const abs = (p: string) => path.join(root(), dir, p);
    fs.mkdirSync(path.join(root(), dir));
    fs.writeFileSync(abs('u.txt'), 'u0\n');
    await prompt('one', [call('Write', { path: `${dir}/p1.txt`, content: 'one\n' }), say('done 1')]);
    await prompt('two', [
      call('Write', { path: `${dir}/c2.txt`, content: 'created in prompt 2\n' }),
      call('Read', { path: `${dir}/u.txt` }),
      call('Write', { path: `${dir}/u.txt`, content: 'keel wrote this\n' }),
      call('Write', { path: `${dir}/m2.txt`, content: 'also created\n' }),
      say('done 2'),
    ]);
    assert.equal(fs.readFileSync(abs('u.txt'), 'utf8'), 'keel wrote this\n');
    // The user changes one of the files Keel changed in prompt 2.
    fs.writeFileSync(abs('m2.txt'), 'the user rewrote this\n');
    const sessionId = api.controller.current!.id;

    const result = (await vscode.commands.executeCommand('keel.restoreBeforePrompt', sessionId, 2, {
      answer: 'Restore',
    })) as RestoreCommandResult;
    assert.match(result.message, /before prompt 2\? 3 file\(s\), 1 conflict/);
    assert.match(result.detail, new RegExp(`${dir}/c2\\.txt: remove \\(Keel created it\\)`));
    assert.match(result.detail, new RegExp(`${dir}/u\\.txt: restore earlier content`));
    assert.match(result.detail, new RegExp(`${dir}/m2\\.txt: CONFLICT`));
    assert.ok(!result.detail.includes('p1.txt'), 'prompt 1’s file is not part of it');

    assert.ok(!fs.existsSync(abs('c2.txt')));
    assert.equal(fs.readFileSync(abs('u.txt'), 'utf8'), 'u0\n');
    assert.equal(
      fs.readFileSync(abs('m2.txt'), 'utf8'),
      'the user rewrote this\n',
      'the conflict is untouched',
    );
    assert.equal(fs.readFileSync(abs('p1.txt'), 'utf8'), 'one\n');
    // The undo puts Keel's prompt-2 state back.
    const undo = (await vscode.commands.executeCommand('keel.undoRestore', sessionId, {
      answer: 'Restore',
    })) as RestoreCommandResult;
    assert.ok(undo.result && undo.result.conflicts === 0);
    assert.equal(fs.readFileSync(abs('u.txt'), 'utf8'), 'keel wrote this\n');
    assert.ok(fs.existsSync(abs('c2.txt')));
    // A cancelled confirmation writes nothing.
    const cancelled = (await vscode.commands.executeCommand('keel.restoreBeforePrompt', sessionId, 2, {
      answer: undefined,
    })) as RestoreCommandResult;
    assert.equal(cancelled.result, undefined);
    assert.equal(fs.readFileSync(abs('u.txt'), 'utf8'), 'keel wrote this\n');
    await vscode.commands.executeCommand('keel.acceptAllEdits');
    fs.rmSync(path.join(root(), dir), { recursive: true, force: true });
  });

  it('"Restore and edit this message" restores the files and continues in a new chat from before that message', async () => {
    api.controller.newChat();
    const dir = `fork${Date.now().toString(36)}`;
    const abs = (p: string) => path.join(root(), dir, p);
    fs.mkdirSync(path.join(root(), dir));
    await prompt('first ask', [call('Write', { path: `${dir}/one.txt`, content: 'one\n' }), say('done 1')]);
    await prompt('second ask, to be reworded', [
      call('Write', { path: `${dir}/two.txt`, content: 'two\n' }),
      say('done 2'),
    ]);
    const original = api.controller.current!.id;
    const logPath = path.join(root(), '.keel', 'sessions', `${original}.jsonl`);
    const oldLog = fs.readFileSync(logPath);

    const cancelled = (await vscode.commands.executeCommand('keel.forkBeforePrompt', original, 2, {
      answer: undefined,
    })) as ForkCommandResult;
    assert.match(cancelled.message, /Edit prompt 2/);
    assert.match(cancelled.detail, new RegExp(`${dir}/two\\.txt: remove \\(Keel created it\\)`));
    assert.equal(api.controller.current!.id, original, 'cancelled: same chat');
    assert.ok(fs.existsSync(abs('two.txt')), 'cancelled: nothing restored');

    const result = (await vscode.commands.executeCommand('keel.forkBeforePrompt', original, 2, {
      answer: 'Restore Files and Edit',
    })) as ForkCommandResult;
    assert.ok(result.forkId && result.forkId !== original);
    assert.equal(api.controller.current!.id, result.forkId, 'the panel now shows the new branch');
    assert.equal(result.restored, 1);
    assert.ok(!fs.existsSync(abs('two.txt')), 'prompt 2’s file is gone');
    assert.equal(fs.readFileSync(abs('one.txt'), 'utf8'), 'one\n', 'prompt 1’s file stays');
    assert.deepEqual(fs.readFileSync(logPath), oldLog, 'the old chat’s log is untouched (P2)');
    const texts = api.controller
      .current!.eventsSince(0)
      .flatMap((e) => (e.type === 'user_message' ? [e.message.text] : []));
    assert.deepEqual(texts, ['first ask'], 'the new branch holds the history before the message');
    assert.ok(
      (await api.controller.list()).some((s) => s.id === original),
      'the old chat stays in the history',
    );

    // The edited message goes on in the new branch.
    await prompt('second ask, better worded', [say('done in the branch')]);
    assert.equal(api.controller.current!.id, result.forkId);
    await vscode.commands.executeCommand('keel.acceptAllEdits');
    fs.rmSync(path.join(root(), dir), { recursive: true, force: true });
  });

  it('the long-task view lists the features with their pass state and the session that passed each', async () => {
    const taskDir = path.join(root(), 'keel-task');
    fs.mkdirSync(taskDir, { recursive: true });
    const feature = (id: string, passes: boolean) => ({
      id,
      category: 'functional',
      description: `feature ${id}`,
      steps: ['do it'],
      verify: 'true',
      passes,
    });
    fs.writeFileSync(
      path.join(taskDir, 'feature_list.json'),
      `${JSON.stringify({ features: [feature('F1', true), feature('F2', false)] }, null, 2)}\n`,
    );
    fs.writeFileSync(
      path.join(taskDir, 'sessions.jsonl'),
      `${JSON.stringify({ type: 'flip', session: 'sess-1', id: 'F1', ts: 1 })}\n`,
    );
    try {
      api.longTask.refresh();
      const nodes = await api.longTask.nodes();
      const items = nodes.map((n) => api.longTask.treeItem(n));
      assert.deepEqual(
        items.map((i) => [i.label, i.description]),
        [
          ['F1  feature F1', 'passes · sess-1'],
          ['F2  feature F2', 'failing'],
        ],
      );
      const commands = await vscode.commands.getCommands(true);
      for (const id of [
        'keel.startLongTask',
        'keel.continueLongTask',
        'keel.restoreBeforePrompt',
        'keel.undoRestore',
        'keel.forkBeforePrompt',
      ])
        assert.ok(commands.includes(id), `${id} is registered`);
      // A broken list says why instead of showing nothing.
      fs.writeFileSync(path.join(taskDir, 'feature_list.json'), '{"features": [}');
      const broken = await api.longTask.nodes();
      assert.equal(broken[0]?.kind, 'message');
    } finally {
      fs.rmSync(taskDir, { recursive: true, force: true });
    }
  });
});
