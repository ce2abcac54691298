import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AgentEvent } from '../../../src/agent/events.ts';
import type { KeelApi } from '../../../src/extension/extension.ts';
import type { Emulator } from '../../emulator/server.ts';
import { connectToEmulator, waitFor } from './helpers.ts';

// Memory in the running extension: a `Memory` call during a session is on disk at once and reaches the
// panel as a memory_changed event (the diff card); the card's Undo (keel.undoMemoryChange, what the
// panel posts) restores the previous version and tells the model; "Keel: Open Memory" opens the file.

describe('Memory in the running extension', () => {
  let emulator: Emulator;
  let api: KeelApi;
  let disconnect: () => Promise<void>;
  let memoryFile: string;

  before(async () => {
    ({ emulator, api, disconnect } = await connectToEmulator());
    memoryFile = path.join(api.host().stateDir, 'memory', 'MEMORY.md');
    fs.rmSync(path.join(api.host().stateDir, 'memory'), { recursive: true, force: true });
  });
  after(async () => {
    await disconnect();
  });

  it('a Memory call shows as a memory change the user can undo; Open Memory opens MEMORY.md', async () => {
    api.controller.newChat();
    emulator.setScenario({
      replies: [
        {
          content: [
            {
              type: 'tool_use',
              name: 'Memory',
              input: { action: 'add', heading: 'Style', text: 'Indent with tabs' },
            },
          ],
        },
        { content: [{ type: 'text', text: 'Saved.' }] },
      ],
      onExhausted: 'echo',
    });
    const result = await api.controller.submit('Remember: we indent with tabs.', {
      idempotencyKey: `mem-${Date.now()}`,
    });
    assert.ok(result.ok && result.outcome, result.error);
    assert.equal((await result.outcome).status, 'finished');
    assert.match(fs.readFileSync(memoryFile, 'utf8'), /## Style\n- \d{4}-\d{2}-\d{2}: Indent with tabs\n/);
    const session = api.controller.current!;
    const changed = session
      .eventsSince(0)
      .filter((e): e is Extract<AgentEvent, { type: 'memory_changed' }> => e.type === 'memory_changed');
    assert.equal(changed.length, 1, 'the panel gets one memory card');
    assert.equal(changed[0]!.change.before, null);
    assert.match(changed[0]!.change.after ?? '', /Indent with tabs/);

    const undone = await vscode.commands.executeCommand<boolean>(
      'keel.undoMemoryChange',
      changed[0]!.change.id,
    );
    assert.equal(undone, true);
    assert.ok(!fs.existsSync(memoryFile), 'undo restores the version before the change (none)');
    const undoEvent = await waitFor('the undo event', () =>
      session
        .eventsSince(0)
        .find((e) => e.type === 'memory_changed' && e.change.undoes === changed[0]!.change.id),
    );
    assert.ok(undoEvent);

    await vscode.commands.executeCommand('keel.openMemory');
    const editor = await waitFor('MEMORY.md in an editor', () =>
      vscode.window.activeTextEditor?.document.uri.fsPath === memoryFile
        ? vscode.window.activeTextEditor
        : undefined,
    );
    assert.match(editor.document.getText(), /^# Memory/);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
