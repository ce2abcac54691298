// `@keel` in VS Code's own Chat view, in the real workbench (code-server 4.139 = VS Code 1.139), for a
// user with only a Keel key: no Copilot sign-in, no other model. VS Code runs a participant only with a
// model selected in its picker; Keel offers its own (vendor "keel", keelChatProvider.ts), so the picker
// selects it and `@keel` answers through the same core as the panel (checked at the emulator: Keel's
// system prompt and tools). Its edit is reviewable from the Chat view: Reject puts the bytes back.
// Screenshots: test-artifacts/chat-view-{model,answer,rejected}.png.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import {
  type CodeServer,
  ensureCodeServer,
  launchBrowser,
  makeWorkspace,
  run,
  startCodeServer,
  WORK,
} from './codeServer.ts';
import { packageVsix } from './packageVsix.ts';
import { installVsix, workbenchReady, screenshot, until as untilWithin } from './workbench.ts';

const UI_TIMEOUT = 60_000;
const ORIGINAL = 'export function greet(name: string): string {\n  return "Hello, " + name;\n}\n';
const MODEL = 'claude-sonnet-4-6';

let emulator: Emulator;
let server: CodeServer;
let browser: BrowserContext;
let page: Page;
let workspace: string;

const shot = (name: string) => screenshot(page, name);

const until = <T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = UI_TIMEOUT) =>
  untilWithin(what, fn, ms);

/** The palette lists `title` (the workbench is ready: workbenchReady); Enter runs it. */
async function runCommand(title: string): Promise<void> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: UI_TIMEOUT });
  await input.fill(`>${title}`);
  await page
    .locator('.quick-input-list .monaco-list-row', { hasText: title })
    .first()
    .waitFor({ state: 'visible', timeout: UI_TIMEOUT });
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: UI_TIMEOUT });
}

describe("VS Code's Chat view: @keel with only a Keel key", { timeout: 10 * 60_000 }, () => {
  before(async () => {
    ensureCodeServer();
    run(process.execPath, ['scripts/build-ext.mjs', '--production', '--no-tests']);
    const vsix = path.join(WORK, 'keel-chat-view.vsix');
    fs.mkdirSync(WORK, { recursive: true });
    packageVsix(vsix);
    emulator = await startEmulator({ port: 0 });
    workspace = makeWorkspace('chat-view-ws', { 'src/app.ts': ORIGINAL, 'README.md': '# chat view\n' });
    server = await startCodeServer({
      name: 'chat-view',
      workspace,
      machineSettings: { 'keel.baseUrl': emulator.url },
      // VS Code's AI features on (the other E2E files turn them off); nothing else of Copilot's.
      settings: {
        'chat.disableAIFeatures': false,
        'workbench.secondarySideBar.defaultVisibility': 'hidden',
        'files.autoSave': 'off',
      },
      env: { ANTHROPIC_API_KEY: 'e2e-test-key' },
    });
    assert.match(installVsix(server, vsix), /was successfully installed/);
    browser = await launchBrowser(server.runDir);
    page = browser.pages()[0] ?? (await browser.newPage());
    await page.goto(`${server.base}/?folder=${encodeURIComponent(workspace)}`);
    await workbenchReady(page, UI_TIMEOUT);
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    server?.stop();
    await emulator?.close();
  });

  it('answers through the same core, and its edit is reviewable (Reject restores the bytes)', async () => {
    const file = path.join(workspace, 'src', 'app.ts');
    emulator.setScenario({
      name: 'chat-view',
      replies: [
        { content: [{ type: 'tool_use', name: 'Read', input: { path: 'src/app.ts' } }] },
        {
          content: [
            {
              type: 'tool_use',
              name: 'Edit',
              input: { path: 'src/app.ts', old_string: '"Hello, "', new_string: '"Good day, "' },
            },
          ],
        },
        { content: [{ type: 'text', text: 'Changed the greeting to Good day.' }] },
      ],
      onExhausted: 'repeat_last',
    });
    await runCommand('Chat: Open Chat');
    const chat = page.locator('.part.auxiliarybar');
    // The picker selects Keel's model: the user never chose one, and has no other.
    await chat
      .locator('.chat-input-toolbars, .interactive-input-part')
      .getByText(new RegExp(MODEL.slice(0, 12)))
      .first()
      .waitFor({ timeout: UI_TIMEOUT });
    await shot('chat-view-model');
    await chat.locator('.interactive-input-editor .view-lines').first().click();
    await page.keyboard.type('@keel Change the greeting to Good day');
    await page.keyboard.press('Enter');
    await chat.getByText('Changed the greeting to Good day.').first().waitFor({ timeout: UI_TIMEOUT });
    await until('the edit on disk', () => fs.readFileSync(file, 'utf8').includes('Good day'));

    // The same core: Keel's system prompt and tools carried the user's words, through Keel's client.
    const sent = emulator.requests.map(
      (r) => r.body as { model: string; system?: unknown; tools?: { name: string }[] },
    );
    assert.equal(sent.length, 3, 'Read, Edit, then the answer');
    assert.equal(sent[0]!.model, MODEL);
    assert.match(JSON.stringify(sent[0]!.system), /Keel/);
    assert.deepEqual(
      ['Bash', 'Edit', 'Read'].filter((t) => sent[0]!.tools?.some((x) => x.name === t)),
      ['Bash', 'Edit', 'Read'],
    );
    assert.match(JSON.stringify(emulator.requests[0]!.body), /Change the greeting to Good day/);

    // Reviewable from the Chat view: the file is referenced, and its buttons decide the edit.
    const reject = chat.getByRole('button', { name: 'Reject All Edits' }).first();
    await reject.waitFor({ timeout: UI_TIMEOUT });
    await chat.getByRole('button', { name: 'Accept All Edits' }).first().waitFor({ timeout: UI_TIMEOUT });
    await shot('chat-view-answer');
    await reject.click();
    await until('the original bytes back on disk', () => fs.readFileSync(file, 'utf8') === ORIGINAL);
    await shot('chat-view-rejected');
  });
});
