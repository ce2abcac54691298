import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { type CodeServer, codeServerEntry, node24, run } from './codeServer.ts';

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
