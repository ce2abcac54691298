import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { Emulator } from '../../emulator/server.ts';
import { connectToEmulator, waitFor } from './helpers.ts';

// The other direction of vscodeLm.test.ts: Keel offers its own model to VS Code (vendor "keel"), served
// with Keel's key through Keel's client. A request through `vscode.lm` reaches the emulator with exactly
// what the caller sent (its messages and its tool, none of Keel's prompt or tools), and the streamed
// text and the tool call come back. Another extension (the lm-provider fixture, as any third party)
// needs the user's consent first: VS Code asks, and without a yes nothing reaches the model. Without a
// key Keel offers nothing.

interface Asker {
  ask(
    vendor: string,
    prompt: string,
    tools?: vscode.LanguageModelChatTool[],
  ): Promise<{ model: string; text: string; calls: { name: string; input: unknown }[] }>;
}

const keelModels = async () => (await vscode.lm.selectChatModels({ vendor: 'keel' })).map((m) => m.id);

describe("Keel's models in VS Code (vscode.lm provider)", () => {
  let connection: Awaited<ReturnType<typeof connectToEmulator>>;
  let emulator: Emulator;
  let asker: Asker;
  before(async function () {
    this.timeout(60_000);
    connection = await connectToEmulator();
    emulator = connection.emulator;
    const fixture = vscode.extensions.getExtension<Asker>('keel-test.lm-provider');
    assert.ok(fixture, 'the third-party test extension is loaded');
    asker = await fixture.activate();
  });
  after(async () => {
    await connection.disconnect();
  });

  it('offers the configured model with a key; a request gets its streamed answer and tool call', async function () {
    this.timeout(60_000);
    const configured = vscode.workspace.getConfiguration('keel').get<string>('model')!;
    await waitFor("VS Code to list Keel's model", async () =>
      (await keelModels()).includes(configured) ? true : undefined,
    );
    emulator.setScenario({
      replies: [
        {
          content: [
            { type: 'text', text: 'Looking it up. ' },
            { type: 'tool_use', name: 'lookup', input: { term: 'keel' } },
          ],
        },
      ],
      onExhausted: 'repeat_last',
    });
    const start = emulator.requests.length;
    const tool: vscode.LanguageModelChatTool = {
      name: 'lookup',
      description: 'Looks a term up.',
      inputSchema: { type: 'object', properties: { term: { type: 'string' } }, required: ['term'] },
    };
    const [chat] = await vscode.lm.selectChatModels({ vendor: 'keel', id: configured });
    assert.ok(chat);
    assert.equal(chat.name, `${configured} (Keel)`);
    const response = await chat.sendRequest(
      [
        vscode.LanguageModelChatMessage.User('What is a keel? CALLER_PROMPT'),
        vscode.LanguageModelChatMessage.Assistant('Noted.'),
        vscode.LanguageModelChatMessage.User('Go on.'),
      ],
      { tools: [tool] },
    );
    let text = '';
    const calls: { name: string; input: unknown }[] = [];
    for await (const part of response.stream) {
      if (part instanceof vscode.LanguageModelTextPart) text += part.value;
      else if (part instanceof vscode.LanguageModelToolCallPart)
        calls.push({ name: part.name, input: part.input });
    }
    assert.equal(text, 'Looking it up. ');
    assert.deepEqual(calls, [{ name: 'lookup', input: { term: 'keel' } }]);

    const sent = emulator.requests.slice(start);
    assert.equal(sent.length, 1, 'one request reached the model');
    const body = sent[0]!.body as {
      model: string;
      system?: unknown;
      tools: { name: string }[];
      messages: { role: string; content: { type: string; text?: string }[] }[];
    };
    assert.equal(body.model, configured);
    assert.deepEqual(
      body.messages.map((m) => [m.role, m.content.map((c) => c.text).join('')]),
      [
        ['user', 'What is a keel? CALLER_PROMPT'],
        ['assistant', 'Noted.'],
        ['user', 'Go on.'],
      ],
    );
    // Only the caller's tool and no system prompt: nothing of Keel's own sessions crosses over.
    assert.deepEqual(
      body.tools.map((t) => t.name),
      ['lookup'],
    );
    assert.ok(!body.system || (Array.isArray(body.system) && body.system.length === 0));
  });

  it("another extension cannot spend Keel's key unless the user allows it: nothing reaches the model", async function () {
    this.timeout(60_000);
    const start = emulator.requests.length;
    // VS Code asks the user (a modal; declined here, as the smoke-test driver answers every dialog).
    await assert.rejects(
      asker.ask('keel', 'THIRD_PARTY_PROMPT'),
      /cannot be used by 'keel-test\.lm-provider'/,
    );
    assert.equal(emulator.requests.length, start, 'no request reached the model');
  });

  it('offers nothing without a key', async function () {
    this.timeout(60_000);
    const saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    const config = vscode.workspace.getConfiguration('keel');
    try {
      // A settings change makes VS Code ask again (the key is read then).
      await config.update('fallbackModels', ['claude-haiku-4-5'], vscode.ConfigurationTarget.Global);
      await waitFor('Keel to withdraw its models', async () =>
        (await keelModels()).length === 0 ? true : undefined,
      );
      await assert.rejects(asker.ask('keel', 'hello'), /no keel model/);
      assert.deepEqual(await keelModels(), []);
    } finally {
      process.env.ANTHROPIC_API_KEY = saved;
      await config.update('fallbackModels', undefined, vscode.ConfigurationTarget.Global);
    }
    await waitFor('Keel to offer its model again', async () =>
      (await keelModels()).length > 0 ? true : undefined,
    );
  });
});
