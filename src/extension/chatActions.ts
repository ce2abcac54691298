import * as vscode from 'vscode';
import { contextMentionCompletions } from '../agent/context/mentionContext.ts';
import { enterSafeItems } from './approvalButtons.ts';
import { relativeTo } from './editReview/reviewManager.ts';
import { KEEP_REFUSED, RUN_OUTSIDE, runOutsideDialog } from './sandboxUi.ts';
import type { SessionController } from './sessionController.ts';

// What the chat panel's messages ask of the editor rather than of the session: the @-mention
// completions (workspace files and folders), inserting a code block, and re-running a command the
// sandbox refused outside it (after a modal).

export async function fileCompletions(query: string, roots: readonly string[]): Promise<string[]> {
  const safe = query.replace(/[[\]{}()*?!\\]/g, '');
  const pattern = safe ? `**/*${safe}*` : '**/*';
  const exclude = '{**/node_modules/**,**/.git/**,**/.keel/**}';
  const [uris, inFolders] = await Promise.all([
    vscode.workspace.findFiles(pattern, exclude, 50),
    vscode.workspace.findFiles(safe ? `**/*${safe}*/**` : '*/**', exclude, 50),
  ]);
  const files = uris
    .map((u) => relativeTo(roots, u.fsPath))
    .sort((a, b) => a.length - b.length || a.localeCompare(b));
  // Folders (`src/`): chosen, one becomes a listing of its entries (contextMentions.ts).
  const folders = new Set<string>();
  for (const u of [...inFolders, ...uris]) {
    const parts = relativeTo(roots, u.fsPath).split('/').slice(0, -1);
    parts.forEach((name, i) => {
      if (name.toLowerCase().includes(safe.toLowerCase())) folders.add(`${parts.slice(0, i + 1).join('/')}/`);
    });
  }
  const dirs = [...folders].sort((a, b) => a.length - b.length || a.localeCompare(b)).slice(0, 10);
  // The context mentions first: chosen, they become reminders (contextMentions.ts), not files.
  return [...contextMentionCompletions(query), ...dirs, ...files];
}

/** A code block's Insert button: into the active (else the first visible) editor's selections. */
export async function insertCode(code: string): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) {
    void vscode.window.showInformationMessage('Keel: open an editor to insert the code into.');
    return;
  }
  await editor.edit((b) => {
    for (const sel of editor.selections) b.replace(sel, code);
  });
}

/** A refused command's "Run outside the sandbox" button: asks in a modal, then runs it. */
export async function runOutsideSandbox(
  deps: {
    readonly controller: SessionController;
    readonly runOutsideSandbox?: (command: string) => Promise<void>;
  },
  toolUseId: string,
): Promise<void> {
  // The command comes from the session's own record of the refused call, never from the webview.
  const end = deps.controller.current
    ?.eventsSince(0)
    .find((e) => e.type === 'tool_end' && e.toolUseId === toolUseId);
  const result = end?.type === 'tool_end' ? end.result : undefined;
  const command = (result?.data as { command?: unknown } | undefined)?.command;
  if (result?.error?.code !== 'SANDBOX_DENIED' || typeof command !== 'string') {
    void vscode.window.showWarningMessage('Keel: that command is not one the sandbox refused.');
    return;
  }
  const dialog = runOutsideDialog(command, vscode.l10n);
  // The buttons in the user's language; which one was pressed is known by its English key.
  const items = enterSafeItems(RUN_OUTSIDE, KEEP_REFUSED).map((item) => ({
    ...item,
    key: item.title,
    title: vscode.l10n.t(item.title),
  }));
  const choice = await vscode.window.showWarningMessage(
    dialog.message,
    { modal: true, detail: dialog.detail },
    ...items,
  );
  if (choice?.key === RUN_OUTSIDE) await deps.runOutsideSandbox?.(command);
}
