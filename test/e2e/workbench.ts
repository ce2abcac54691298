import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { type CodeServer, codeServerEntry, node24, REPO, run } from './codeServer.ts';

// What every E2E file does with its code-server: install the packaged Keel the way a user would (the
// same code-server's CLI), and wait until the workbench can run commands.

/** Installs a .vsix into the server's extensions dir; returns the CLI's output. */
export function installVsix(server: CodeServer, vsix: string): string {
  // code-server keeps its config.yaml under XDG_CONFIG_HOME: in the run dir, never in ~/.config.
  const xdg = path.join(server.runDir, 'tmp');
  return run(
    node24(),
    [
      codeServerEntry(),
      '--config',
      path.join(server.runDir, 'config.yaml'),
      '--user-data-dir',
      path.join(server.runDir, 'user-data'),
      '--extensions-dir',
      path.join(server.runDir, 'extensions'),
      '--install-extension',
      vsix,
    ],
    {
      env: {
        ...process.env,
        XDG_CONFIG_HOME: path.join(xdg, 'xdg-config'),
        XDG_DATA_HOME: path.join(xdg, 'xdg-data'),
        XDG_CACHE_HOME: path.join(xdg, 'xdg-cache'),
      },
    },
  );
}

/**
 * The workbench can list every command. Two marks VS Code records in the page's performance
 * timeline: `code/didCreateWorkbenchContributions/3` (the components created at idle time, which
 * register commands such as "Install from VSIX…", exist — a palette opened earlier never lists them:
 * it computes its list when its text changes) and `code/didHandleExtensionPoints` (the installed
 * extensions' contributions, Keel's commands, are registered).
 */
export async function workbenchReady(page: Page, timeout: number): Promise<void> {
  await page.waitForSelector('.monaco-workbench .part.statusbar', { timeout });
  await page.waitForFunction(
    () =>
      ['code/didCreateWorkbenchContributions/3', 'code/didHandleExtensionPoints'].every(
        (mark) => performance.getEntriesByName(mark).length > 0,
      ),
    undefined,
    { timeout, polling: 100 },
  );
}

/** Where every E2E file leaves its screenshots. */
export const ARTIFACTS = path.join(REPO, 'test-artifacts');

export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
}

/** Polls `fn` until it gives something (not undefined/false); fails after `ms` naming `what`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  ms: number,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
