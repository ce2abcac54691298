import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// `keel run --demo`: the bundled API emulator with its scripted answers, and a scratch git repo to
// work in, removed when the run ends (after its diff is shown).

/** The demo's scratch repo, committed by git in the background (on another core) while the agent loads. */
export async function startDemoWorkspace(): Promise<{ committed: Promise<string> }> {
  const { createDemoWorkspaceInBackground } = await import('../../test/emulator/demo/workspace.ts');
  const committed = createDemoWorkspaceInBackground(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-demo-')));
  committed.catch(() => {}); // awaited by startDemo; a failure must not count as unhandled meanwhile
  return { committed };
}

export async function startDemo({
  committed,
}: {
  committed: Promise<string>;
}): Promise<{ baseURL: string; workspace: string; close: () => Promise<void> }> {
  let emulator: Awaited<ReturnType<typeof import('../../test/emulator/server.ts').startEmulator>>;
  try {
    const { startEmulator } = await import('../../test/emulator/server.ts');
    const { demoScenario } = await import('../../test/emulator/demo/scenario.ts');
    emulator = await startEmulator({ scenario: demoScenario });
  } catch (error) {
    // No demo without its emulator: the scratch repo made for it goes too.
    await committed.then((dir) => fs.rmSync(dir, { recursive: true, force: true })).catch(() => {});
    throw error;
  }
  const workspace = await committed;
  process.stderr.write(
    `\n*** DEMO MODE: no real model. Keel is talking to its bundled API emulator at ${emulator.url}\n` +
      `*** with scripted answers, in a scratch git repo ${workspace} (removed when the run ends).\n` +
      '*** Try: "explain src/greet.js", "add a farewell function", "delete the build folder".\n\n',
  );
  return {
    baseURL: emulator.url,
    workspace,
    close: async () => {
      await Promise.all([emulator.close(), fs.promises.rm(workspace, { recursive: true, force: true })]);
    },
  };
}

/** The workspace's uncommitted changes as a diff (what the demo's edits did), or '' without git. */
export function workspaceDiff(workspace: string): string {
  const result = spawnSync('git', ['diff', '--no-color'], { cwd: workspace, encoding: 'utf8' });
  return result.status === 0 ? result.stdout : '';
}
