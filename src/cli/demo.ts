import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentEvent } from '../agent/events.ts';

// `keel run --demo`: the bundled API emulator with its scripted answers, and a scratch git repo to
// work in, removed when the run ends (after its diff is shown) — or the user's `--workspace`, kept.

/** The demo's scratch repo, committed by git in the background (on another core) while the agent loads. */
export async function startDemoWorkspace(): Promise<{ committed: Promise<string> }> {
  const { createDemoWorkspaceInBackground } = await import('../../test/emulator/demo/workspace.ts');
  const committed = createDemoWorkspaceInBackground(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-demo-')));
  committed.catch(() => {}); // awaited by startDemo; a failure must not count as unhandled meanwhile
  return { committed };
}

/**
 * The emulator, working in the scratch repo (`committed`) or in the user's own folder (`--workspace`):
 * the banner says which, and only the scratch repo is removed at the end.
 */
export async function startDemo(
  where: { committed: Promise<string> } | { workspace: string },
): Promise<{ baseURL: string; workspace: string; close: () => Promise<void> }> {
  const committed = 'committed' in where ? where.committed : undefined;
  let emulator: Awaited<ReturnType<typeof import('../../test/emulator/server.ts').startEmulator>>;
  try {
    const { startEmulator } = await import('../../test/emulator/server.ts');
    const { demoScenario } = await import('../../test/emulator/demo/scenario.ts');
    emulator = await startEmulator({ scenario: demoScenario });
  } catch (error) {
    // No demo without its emulator: the scratch repo made for it goes too.
    await committed?.then((dir) => fs.rmSync(dir, { recursive: true, force: true })).catch(() => {});
    throw error;
  }
  const workspace = committed ? await committed : (where as { workspace: string }).workspace;
  process.stderr.write(
    `\n*** DEMO MODE: no real model. Keel is talking to its bundled API emulator at ${emulator.url}\n` +
      (committed
        ? `*** with scripted answers, in a scratch git repo ${workspace} (removed when the run ends).\n`
        : `*** with scripted answers, in YOUR folder ${workspace}: its edits stay there, nothing is removed.\n` +
          "*** The script expects the demo's sample project (src/greet.js); without --workspace it makes one.\n") +
      '*** Try: "explain src/greet.js", "add a farewell function", "delete the build folder".\n\n',
  );
  return {
    baseURL: emulator.url,
    workspace,
    close: async () => {
      await Promise.all([
        emulator.close(),
        committed ? fs.promises.rm(workspace, { recursive: true, force: true }) : undefined,
      ]);
    },
  };
}

/**
 * The demo's script goes wrong when a tool fails (a Read of a file the folder lacks, an Edit that did
 * not apply): its answer says so, and the run must not look successful either (exit 1). A refusal
 * (DENIED_BY_USER) is part of the script ("delete the build folder"), not a failure.
 */
export function demoFailures(): { onEvent: (event: AgentEvent) => void; failed: () => string[] } {
  const failed: string[] = [];
  return {
    onEvent(event) {
      if (event.type !== 'tool_end' || event.result.status !== 'error') return;
      const code = event.result.error?.code;
      if (code !== 'DENIED_BY_USER') failed.push(`${event.name} failed (${code ?? 'error'})`);
    },
    failed: () => failed,
  };
}

/** The workspace's uncommitted changes as a diff (what the demo's edits did), or '' without git. */
export function workspaceDiff(workspace: string): string {
  const result = spawnSync('git', ['diff', '--no-color'], { cwd: workspace, encoding: 'utf8' });
  return result.status === 0 ? result.stdout : '';
}
