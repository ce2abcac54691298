import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { KeelApi } from '../../../src/extension/extension.ts';
import { type Emulator, startEmulator } from '../../emulator/server.ts';
import { createHarness, disk, type Harness, waitFor } from './helpers.ts';

// No API key, no base URL: Keel answers through `vscode.lm` with a model another extension provides
// (test/extension/fixtures/lm-provider, which forwards to the emulator as a third-party provider or a
// key the user added to VS Code would reach a real model). The edit it makes is reviewable as always.

interface LmFixture {
  setTarget(value: { url: string; model: string } | undefined): void;
  readonly requests: { modelId: string; messages: number }[];
}

describe('VS Code language models (no API key)', () => {
  let emulator: Emulator;
  let api: KeelApi;
  let fixture: LmFixture;
  let h: Harness;
  const savedKey = process.env.ANTHROPIC_API_KEY;

  before(async function () {
    this.timeout(60_000);
    emulator = await startEmulator({ port: 0 });
    delete process.env.ANTHROPIC_API_KEY;
    const provider = vscode.extensions.getExtension<LmFixture>('keel-test.lm-provider');
    assert.ok(provider, 'the test language-model provider extension is loaded');
    fixture = await provider.activate();
    fixture.setTarget({ url: emulator.url, model: 'claude-sonnet-4-5' });
    await waitFor('VS Code to list the test model', async () =>
      (await vscode.lm.selectChatModels({ vendor: 'keel-test' })).length > 0 ? true : undefined,
    );
    const ext = vscode.extensions.getExtension<KeelApi>('keel-dev.keel');
    assert.ok(ext);
    api = await ext.activate();
    api.controller.newChat();
  });
  after(async () => {
    fixture.setTarget(undefined);
    if (savedKey !== undefined) process.env.ANTHROPIC_API_KEY = savedKey;
    api.controller.newChat();
    await emulator.close();
  });
  beforeEach(() => {
    h = createHarness();
  });
  afterEach(async () => {
    await waitFor('the run to end', () => !api.controller.current?.running, 30_000);
    await vscode.commands.executeCommand('keel.rejectAllEdits');
    await h.dispose();
  });

  it('answers through vscode.lm, says which model, and its edit is reviewable (Reject restores the file)', async function () {
    this.timeout(120_000);
    const p = h.file('lm-edit.txt');
    fs.writeFileSync(p, 'alpha\nbeta\n');
    const rel = path.relative(h.root, p);
    emulator.setScenario({
      replies: [
        { content: [{ type: 'tool_use', name: 'Read', input: { path: rel } }] },
        {
          content: [
            { type: 'tool_use', name: 'Edit', input: { path: rel, old_string: 'beta', new_string: 'gamma' } },
          ],
        },
        { content: [{ type: 'text', text: 'Changed beta to gamma.' }] },
      ],
      onExhausted: 'repeat_last',
    });
    const start = emulator.requests.length;
    const result = await api.controller.submit('Change beta to gamma', {
      idempotencyKey: `lm-${Date.now()}`,
    });
    assert.ok(result.ok && result.outcome, result.error);
    assert.match(result.notice ?? '', /vscode:keel-test\/emu-model/, 'the user is told which model answers');
    const outcome = await result.outcome;
    assert.equal(outcome.status, 'finished', JSON.stringify(outcome));

    // What the model received, through VS Code: Keel's tools, and its system text opening the chat.
    const sent = emulator.requests.slice(start);
    assert.equal(sent.length, 3);
    const body = sent[0]!.body as {
      messages: { content: { type: string; text?: string }[] }[];
      tools: { name: string }[];
    };
    assert.ok(body.tools.some((t) => t.name === 'Edit'));
    assert.match(body.messages[0]!.content[0]!.text ?? '', /Keel/);
    const prefix = (r: (typeof sent)[number]) =>
      JSON.stringify((r.body as { messages: { content: unknown[] }[] }).messages[0]!.content[0]);
    assert.equal(prefix(sent[2]!), prefix(sent[0]!), 'the system text is the same bytes on every call');
    assert.equal(fixture.requests.at(-1)?.modelId, 'emu-model');

    // The edit is on disk and under review: Reject puts the file back.
    assert.equal(disk(p), 'alpha\ngamma\n');
    await vscode.commands.executeCommand('keel.rejectAllEdits');
    await waitFor('the file restored', () => (disk(p) === 'alpha\nbeta\n' ? true : undefined));

    // The session log names the model that answered each turn.
    const session = api.controller.current;
    assert.ok(session);
    const models = session
      .eventsSince(0)
      .flatMap((e) =>
        e.type === 'message_appended' && e.message.role === 'assistant' ? [e.message.model] : [],
      );
    assert.ok(models.length >= 3 && models.every((m) => m === 'vscode:keel-test/emu-model'), String(models));
  });

  it("a command asks through VS Code's own modal, as with a key; once allowed it runs and its output reaches the model", async function () {
    this.timeout(120_000);
    emulator.setScenario({
      replies: [
        {
          content: [
            {
              type: 'tool_use',
              name: 'Bash',
              input: { command: 'curl -s https://example.com/keel-lm || echo lm-approved-output' },
            },
          ],
        },
        { content: [{ type: 'text', text: 'Ran it.' }] },
      ],
      onExhausted: 'repeat_last',
    });
    // The modal itself cannot be clicked from the extension host (the E2E suite clicks it with a key);
    // here the test answers VS Code's showWarningMessage the way the user would, and records the ask.
    const asked: { message: string; modal: boolean; detail: string }[] = [];
    const real = vscode.window.showWarningMessage;
    (vscode.window as { showWarningMessage: unknown }).showWarningMessage = async (
      message: string,
      options: vscode.MessageOptions,
      ...items: vscode.MessageItem[]
    ) => {
      asked.push({ message, modal: options?.modal === true, detail: options?.detail ?? '' });
      return items.find((i) => i.title === 'Allow once');
    };
    try {
      const start = emulator.requests.length;
      const result = await api.controller.submit('Run the echo', { idempotencyKey: `lm-cmd-${Date.now()}` });
      assert.ok(result.ok && result.outcome, result.error);
      assert.equal((await result.outcome).status, 'finished');
      // The command's own dialog first (a network command is not confined by the sandbox, so it asks);
      // the sandbox's domain proxy may ask about example.com after it, through the same modal.
      assert.ok(asked.length >= 1, 'Keel asked');
      assert.ok(
        asked.every((a) => a.modal),
        'every ask is a modal dialog',
      );
      assert.match(`${asked[0]!.message}\n${asked[0]!.detail}`, /curl -s https:\/\/example\.com\/keel-lm/);
      const last = JSON.stringify(emulator.requests.at(-1)?.body);
      assert.ok(emulator.requests.length - start >= 2);
      assert.match(last, /lm-approved-output/);
    } finally {
      (vscode.window as { showWarningMessage: unknown }).showWarningMessage = real;
    }
  });
});
