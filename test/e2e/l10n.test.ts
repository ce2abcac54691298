// Keel in Simplified Chinese: the packaged .vsix in code-server started with `--locale zh-cn`, driven in
// Chromium, talking to the emulator. code-server switches language only with a language pack installed
// (languagePack.ts builds one from an npm package of VS Code's translations). Keel's commands and views
// (package.nls.zh-cn.json), the panel (its strings come from the host's vscode.l10n bundle) and its
// approval dialog — buttons, title and body, with the command verbatim — are in Chinese.
// Screenshots: test-artifacts/l10n-zh-cn-*.
//
// The palette is opened only once the workbench says what it holds (performance marks VS Code sets,
// read in the page): "Extensions: Install from VSIX..." is registered by a Restored-phase workbench
// contribution, created from idle callbacks well after the status bar is drawn, and an open palette
// never re-lists its commands until its text changes; Keel's commands exist once the extension
// points are handled. See workbenchReady().
// Run: node --import tsx --test test/e2e/l10n.test.ts
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Frame, Page } from 'playwright-core';
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
import { buildZhCnLanguagePack } from './languagePack.ts';
import { packageVsix } from './packageVsix.ts';
import { installVsix, workbenchReady as sharedWorkbenchReady, screenshot } from './workbench.ts';

const UI_TIMEOUT = 60_000;

let emulator: Emulator;
let server: CodeServer;
let browser: BrowserContext;
let page: Page;

const shot = (name: string) => screenshot(page, name);

async function chatFrame(): Promise<Frame> {
  const end = Date.now() + UI_TIMEOUT;
  for (;;) {
    for (const f of page.frames()) {
      try {
        if (await f.$('textarea#message-input')) return f;
      } catch {
        // detached while we looked
      }
    }
    if (Date.now() > end) throw new Error('no Keel chat webview');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Runs `step`; on failure, a screenshot of what the page showed, then the error. */
async function stage<T>(name: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    await shot(`l10n-zh-cn-failed-${name}`).catch(() => undefined);
    throw error;
  }
}

const workbenchReady = () => sharedWorkbenchReady(page, UI_TIMEOUT);

/** The palette lists `title` (once: see workbenchReady); Enter runs it. Returns the row's text. */
async function runCommand(title: string, run = true): Promise<string> {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: UI_TIMEOUT });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: UI_TIMEOUT });
  const text = await row.innerText();
  await page.keyboard.press(run ? 'Enter' : 'Escape');
  return text;
}

/**
 * "Extensions: Install from VSIX...", the server-side file typed into its file dialog. The dialog
 * (VS Code's simple file dialog) opens on the home folder and lists it asynchronously; when that
 * listing arrives it writes the home folder into its input again (updateItems with force), over
 * anything typed before — and an Enter it gets then acts on the home folder ("Please select a
 * file."), so nothing is installed. So: type once the home folder is listed (its ".." row), and
 * press Enter once the typed folder is listed with the file in it (the same update clears `busy`).
 */
async function installFromVsix(vsix: string): Promise<void> {
  await runCommand('Extensions: Install from VSIX...');
  const widget = page.locator('.quick-input-widget');
  await widget
    .locator('.quick-input-title', { hasText: 'Install from VSIX' })
    .waitFor({ timeout: UI_TIMEOUT });
  const rows = widget.locator('.quick-input-list .monaco-list-row');
  await rows
    .filter({ hasText: /^\s*\.\.\s*$/ })
    .first()
    .waitFor({ state: 'visible', timeout: UI_TIMEOUT });
  const input = widget.locator('.quick-input-filter input');
  await input.fill(vsix);
  await rows
    .filter({ hasText: path.basename(vsix) })
    .first()
    .waitFor({ state: 'visible', timeout: UI_TIMEOUT });
  assert.equal(await input.inputValue(), vsix, 'the file dialog kept the typed path');
  await input.press('Enter');
}

describe('Keel in zh-cn (code-server --locale zh-cn)', { timeout: 600_000 }, () => {
  before(async () => {
    ensureCodeServer();
    run(process.execPath, ['scripts/build-ext.mjs', '--production', '--no-tests']);
    const vsix = path.join(WORK, 'keel-l10n.vsix');
    fs.mkdirSync(WORK, { recursive: true });
    packageVsix(vsix);
    const languagePack = buildZhCnLanguagePack();
    emulator = await startEmulator({ port: 0 });
    const workspace = makeWorkspace('l10n-ws', { 'README.md': '# l10n\n' });
    server = await startCodeServer({
      name: 'l10n',
      workspace,
      args: ['--locale', 'zh-cn'],
      machineSettings: { 'keel.baseUrl': emulator.url },
      settings: { 'workbench.secondarySideBar.defaultVisibility': 'hidden' },
      env: { ANTHROPIC_API_KEY: 'e2e-test-key' },
    });
    const install = installVsix(server, vsix);
    assert.match(install, /was successfully installed/);
    browser = await launchBrowser(server.runDir);
    page = browser.pages()[0] ?? (await browser.newPage());
    await page.goto(`${server.base}/?folder=${encodeURIComponent(workspace)}`);
    await stage('workbench', workbenchReady);
    // The language pack is installed as a user does, from the workbench: only an install by the
    // running server records it in languagepacks.json (the `--install-extension` CLI does not).
    await stage('install-vsix', () => installFromVsix(languagePack));
    const packs = path.join(server.runDir, 'user-data', 'languagepacks.json');
    await stage('language-pack', async () => {
      for (let end = Date.now() + UI_TIMEOUT; !fs.readFileSync(packs, { flag: 'a+' }).includes('"zh-cn"'); ) {
        if (Date.now() > end) throw new Error(`languagepacks.json lists no zh-cn after the install`);
        await new Promise((r) => setTimeout(r, 250));
      }
    });
    await page.reload();
    await stage('workbench-zh-cn', workbenchReady);
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    server?.stop();
    await emulator?.close();
  });

  it('commands, the panel and the approval dialog are in Chinese', async () => {
    // The workbench runs in the pack's language (code-server handed it the pack's messages).
    assert.equal(
      await page.evaluate(() => (globalThis as { _VSCODE_NLS_LANGUAGE?: string })._VSCODE_NLS_LANGUAGE),
      'zh-cn',
    );
    // Keel's commands are registered (workbenchReady). Asked by the English title, which the palette
    // matches in any language (a translated command shows its English title under the translation).
    const rowText = await stage('keel-command', () => runCommand('Keel: Open Panel', false));
    assert.match(rowText, /Keel: 打开面板/, `the palette lists Keel's command in English: ${rowText}`);
    // A command by its Chinese title (package.nls.zh-cn.json).
    await runCommand('Keel: 打开面板');
    const frame = await chatFrame();
    // The view's name, in the side bar's title.
    await page
      .locator('.part.sidebar .title-label', { hasText: '聊天' })
      .first()
      .waitFor({ timeout: UI_TIMEOUT });
    // The panel's words (the host's vscode.l10n bundle, handed to the webview).
    const input = frame.locator('textarea#message-input');
    assert.equal(await input.getAttribute('aria-label'), '给 Keel 发消息');
    assert.match((await input.getAttribute('placeholder')) ?? '', /^询问 Keel — 输入 @ 提及文件/);
    await frame.getByText('询问 Keel').first().waitFor({ timeout: UI_TIMEOUT });
    await frame.getByRole('button', { name: '发送' }).first().waitFor({ timeout: UI_TIMEOUT });
    assert.equal(await frame.evaluate(() => document.documentElement.lang), 'zh-cn');
    await shot('l10n-zh-cn-panel');

    // A dialog: the approval modal — its title and body in Chinese (the core's structured question,
    // rendered by the extension), the command in it verbatim, and its buttons. The command carries
    // the templates' own placeholders, as a hostile one could: shown as typed, never substituted.
    const command = "curl -s 'https://example.com/keel-l10n?a={0}&b={1}'";
    emulator.setScenario({
      replies: [
        {
          content: [{ type: 'tool_use', name: 'Bash', input: { command } }],
        },
        { content: [{ type: 'text', text: '好的，不运行。' }] },
      ],
      onExhausted: 'repeat_last',
    });
    await input.fill('Fetch example.com');
    await input.press('Enter');
    const dialog = page.locator('.monaco-dialog-box');
    await stage('approval', () => dialog.waitFor({ state: 'visible', timeout: UI_TIMEOUT }));
    await dialog.getByRole('button', { name: '允许一次' }).waitFor();
    await dialog.getByRole('button', { name: '在本次会话中允许' }).waitFor();
    const title = await dialog.locator('.dialog-message-text').innerText();
    assert.match(title, /^Keel: (网络命令|命令)：(.*)$/, title);
    assert.equal(title.replace(/^Keel: (网络命令|命令)：/, ''), command);
    const body = await dialog.locator('.dialog-message-detail').innerText();
    assert.ok(body.startsWith(command), `the command, verbatim, opens the body: ${body}`);
    assert.match(body, /需要批准，原因：/, body);
    assert.doesNotMatch(body, /Needs approval because/, body);
    // While it asks, the panel says it is working — in Chinese.
    assert.equal(await frame.locator('#run-status').innerText(), '正在工作…');
    await shot('l10n-zh-cn-approval');
    await dialog.getByRole('button', { name: '拒绝' }).click();
    await frame.getByText('好的，不运行。').first().waitFor({ timeout: UI_TIMEOUT });
    // The denial card and the cache meter.
    const denied = frame.locator('.tool-card[data-tool="Bash"] .tool-error');
    assert.equal(await denied.locator('.error-code').innerText(), '已拒绝');
    assert.equal(await denied.locator('.error-message').innerText(), `你拒绝了运行：${command}。`);
    assert.match(await frame.locator('.meter-cache').innerText(), /^缓存 \d+%/);
    // The status bar item too (vscode.l10n in the host).
    await page
      .locator('.part.statusbar .statusbar-item', { hasText: /Keel \d+% · 缓存 \d+%/ })
      .first()
      .waitFor({ timeout: UI_TIMEOUT });
    await shot('l10n-zh-cn-denied');
    // The palette lists Keel's commands in Chinese.
    await page.keyboard.press('F1');
    await page.locator('.quick-input-widget input').fill('>Keel: 审查未提交的更改');
    await page
      .locator('.quick-input-list .monaco-list-row', { hasText: 'Keel: 审查未提交的更改' })
      .first()
      .waitFor({ timeout: UI_TIMEOUT });
    await shot('l10n-zh-cn-commands');
    await page.keyboard.press('Escape');
  });
});
