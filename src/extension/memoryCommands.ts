import * as vscode from 'vscode';
import { MEMORY_TITLE } from '../agent/memory/document.ts';
import { memoryPaths, readMemoryFile, writeMemory } from '../agent/memory/store.ts';
import type { AgentSession } from '../agent/session/types.ts';

// "Keel: Open Memory" and the memory diff card's Undo. Edits the user makes to MEMORY.md by hand are
// theirs; Keel shows them to the model from the next session on, like its own changes.

export const MEMORY_COMMANDS = { open: 'keel.openMemory', undo: 'keel.undoMemoryChange' } as const;

export function registerMemoryCommands(deps: {
  readonly stateDir: () => string;
  readonly session: () => AgentSession | undefined;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
}): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand(MEMORY_COMMANDS.open, async () => {
      const paths = memoryPaths(deps.stateDir());
      try {
        if (readMemoryFile(paths.workspace) === undefined)
          writeMemory(paths, 'workspace', `${MEMORY_TITLE}\n`, {
            origin: 'user',
            summary: 'created',
            now: Date.now(),
          });
      } catch (error) {
        void vscode.window.showErrorMessage(`Keel: cannot open memory: ${(error as Error).message}`);
        return;
      }
      await vscode.window.showTextDocument(vscode.Uri.file(paths.workspace), { preview: false });
    }),
    vscode.commands.registerCommand(MEMORY_COMMANDS.undo, (changeId: string) => {
      const session = deps.session();
      if (!session) {
        void vscode.window.showWarningMessage(
          'Keel: that memory change belongs to a session that is closed.',
        );
        return false;
      }
      try {
        session.undoMemoryChange(changeId);
        deps.log('info', `memory change ${changeId} undone`);
        return true;
      } catch (error) {
        void vscode.window.showErrorMessage(
          `Keel: could not undo the memory change: ${(error as Error).message}`,
        );
        return false;
      }
    }),
  ];
}
