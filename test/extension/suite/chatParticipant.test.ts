import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { workspaceRoots } from '../../../src/extension/vscodeHost.ts';
import type { Emulator } from '../../emulator/server.ts';
import { connectToEmulator, waitFor } from './helpers.ts';

// `@keel` in VS Code's Chat view. code-server has no language model (no Copilot), so VS Code's chat UI
// does not run third-party participants here: the test calls the participant's own handler, as VS Code
// would, with a response stream that records what the Chat view would show. The answer comes from the
// same session as the panel (at the emulator), and its edit waits in the same pending review.

interface Recorded {
  markdown: string;
  progress: string[];
  buttons: string[];
  references: string[];
}

function recordingStream(): { stream: vscode.ChatResponseStream; seen: Recorded } {
  const seen: Recorded = { markdown: '', progress: [], buttons: [], references: [] };
  const stream = {
    markdown(value: string | vscode.MarkdownString) {
      seen.markdown += typeof value === 'string' ? value : value.value;
    },
    progress(value: string) {
      seen.progress.push(value);
    },
    button(command: vscode.Command) {
      seen.buttons.push(command.command);
    },
    reference(value: vscode.Uri | vscode.Location) {
      seen.references.push(value instanceof vscode.Uri ? value.fsPath : value.uri.fsPath);
    },
    anchor() {},
    filetree() {},
    push() {},
  } as unknown as vscode.ChatResponseStream;
  return { stream, seen };
}

describe('Editor context: @keel chat participant', () => {
  let connection: Awaited<ReturnType<typeof connectToEmulator>>;
  let emulator: Emulator;
  before(async () => {
    connection = await connectToEmulator();
    emulator = connection.emulator;
  });
  after(async () => {
    await connection.disconnect();
  });

  it('answers through the same session (streamed markdown) and its edit is pending review', async function () {
    this.timeout(120_000);
    const root = workspaceRoots()[0]!;
    const rel = `chat-${Date.now().toString(36)}.txt`;
    emulator.setScenario({
      replies: [
        {
          content: [
            { type: 'tool_use', name: 'Write', input: { path: rel, content: 'from the chat view\n' } },
          ],
        },
        { content: [{ type: 'text', text: 'I wrote the file from **Chat**.' }] },
      ],
      onExhausted: 'repeat_last',
    });
    const before = emulator.requests.length;
    const { stream, seen } = recordingStream();
    const tokens = new vscode.CancellationTokenSource();
    const request = {
      prompt: 'Write a file',
      references: [],
      command: undefined,
    } as unknown as vscode.ChatRequest;
    const context = { history: [] } as unknown as vscode.ChatContext;
    const result = await connection.api.chatRequestHandler(request, context, stream, tokens.token);
    assert.ok(result && !('errorDetails' in result && result.errorDetails), JSON.stringify(result));
    assert.match(seen.markdown, /I wrote the file from \*\*Chat\*\*\./);
    assert.ok(
      seen.progress.some((p) => p.startsWith('Write')),
      seen.progress.join(),
    );
    // The request reached the model as the user's prompt, in the panel's session.
    const sent = emulator.requests.slice(before);
    assert.equal(sent.length, 2);
    assert.match(JSON.stringify((sent[0]!.body as { messages: unknown }).messages), /Write a file/);
    const session = connection.api.controller.current;
    assert.ok(session?.messages.some((m) => m.role === 'user' && m.text === 'Write a file'));
    // The edit: on disk, pending review, with the review buttons in the answer.
    const file = path.join(root, rel);
    assert.equal(fs.readFileSync(file, 'utf8'), 'from the chat view\n');
    assert.ok(seen.references.includes(fs.realpathSync(file)), seen.references.join());
    assert.deepEqual(seen.buttons, ['keel.openDiff', 'keel.acceptAllEdits', 'keel.rejectAllEdits']);
    // Reject All (the answer's button) takes the created file away again: the same review.
    await vscode.commands.executeCommand('keel.rejectAllEdits');
    await waitFor('the rejected file to be gone', () => !fs.existsSync(file) || undefined, 10_000);
  });
});
