import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RestoreCommandResult } from '../../../src/extension/checkpointCommands.ts';
import type { KeelApi } from '../../../src/extension/extension.ts';
import type { Emulator, ScriptedReply } from '../../emulator/server.ts';
import { connectToEmulator, waitFor } from './helpers.ts';

// A two-folder workspace in the running extension (real VS Code, a real session against the
// emulator): Read, Edit (reviewable: Reject puts it back) and a command in the second folder, reached
// by its folder name; then "Restore to before this" puts back the files of both folders.

describe('Multi-root workspace in the running extension', () => {
  let emulator: Emulator;
  let api: KeelApi;
  let disconnect: () => Promise<void>;
  let second: string;
  const first = () => vscode.workspace.workspaceFolders![0]!.uri.fsPath;

  // run.ts opens this suite's window on a `.code-workspace` of two folders (the second holds b.txt).
  before(async () => {
    ({ emulator, api, disconnect } = await connectToEmulator());
    assert.equal(vscode.workspace.workspaceFolders?.length, 2, 'a two-folder workspace');
    second = vscode.workspace.workspaceFolders![1]!.uri.fsPath;
    fs.writeFileSync(path.join(second, 'b.txt'), 'second folder b\n');
  });
  after(async () => {
    await vscode.commands.executeCommand('keel.acceptAllEdits');
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

  /** The tool results of the last request the model was sent. */
  function toolResults(): string[] {
    const body = emulator.requests.at(-1)?.body as {
      messages: { content: string | { type: string; content?: unknown }[] }[];
    };
    return body.messages.flatMap((m) =>
      typeof m.content === 'string'
        ? []
        : m.content.filter((b) => b.type === 'tool_result').map((b) => JSON.stringify(b.content)),
    );
  }

  it('reads, edits (Reject restores) and runs a command in the second folder; restore puts back both', async () => {
    api.controller.newChat();
    const name = path.basename(second);
    const b2 = path.join(second, 'b.txt');
    const dir = `multi${Date.now().toString(36)}`;
    fs.mkdirSync(path.join(first(), dir));
    const a1 = path.join(first(), dir, 'a.txt');
    fs.writeFileSync(a1, 'first folder a\n');

    await prompt('one', [
      call('Read', { path: `${name}/b.txt` }),
      call('Edit', { path: `${name}/b.txt`, old_string: 'second folder b', new_string: 'REJECT ME' }),
      say('done 1'),
    ]);
    const one = toolResults();
    assert.match(one[0]!, /second folder b/);
    assert.match(one[1]!, new RegExp(`Edited ${name}/b\\.txt`));
    assert.equal(fs.readFileSync(b2, 'utf8'), 'REJECT ME\n');
    await vscode.commands.executeCommand('keel.rejectAllEdits');
    await waitFor(
      'Reject to restore the file',
      () => fs.readFileSync(b2, 'utf8') === 'second folder b\n',
      10_000,
    );

    await prompt('two', [
      call('Read', { path: `${name}/b.txt` }),
      call('Edit', { path: `${name}/b.txt`, old_string: 'second folder b', new_string: 'KEPT' }),
      call('Bash', { command: 'printf "made here\\n" > made.txt && pwd', cwd: name }),
      call('Read', { path: `${dir}/a.txt` }),
      call('Edit', { path: `${dir}/a.txt`, old_string: 'first folder a', new_string: 'FIRST EDITED' }),
      say('done 2'),
    ]);
    const two = toolResults().slice(-5);
    assert.match(two[2]!, new RegExp(second), `the command ran in the second folder: ${two[2]}`);
    await vscode.commands.executeCommand('keel.acceptAllEdits');
    assert.equal(fs.readFileSync(b2, 'utf8'), 'KEPT\n');
    assert.equal(fs.readFileSync(path.join(second, 'made.txt'), 'utf8'), 'made here\n');
    assert.equal(fs.readFileSync(a1, 'utf8'), 'FIRST EDITED\n');

    const sessionId = api.controller.current!.id;
    const result = (await vscode.commands.executeCommand('keel.restoreBeforePrompt', sessionId, 2, {
      answer: 'Restore',
    })) as RestoreCommandResult;
    assert.ok(result.result, result.message);
    assert.equal(fs.readFileSync(b2, 'utf8'), 'second folder b\n', 'the second folder’s edit is undone');
    assert.ok(!fs.existsSync(path.join(second, 'made.txt')), 'the command’s file in folder 2 is removed');
    assert.equal(fs.readFileSync(a1, 'utf8'), 'first folder a\n', 'the first folder’s edit is undone');
    fs.rmSync(path.join(first(), dir), { recursive: true, force: true });
  });
});
