import * as vscode from 'vscode';
import { resolveWorkspaceFile } from './openFileTarget.ts';

// "Open src/greet.js at line 3" from the chat panel: file links in answers, path chips, tool cards.
// The path is checked against the workspace (openFileTarget.ts) before anything is opened; a bare
// name the model wrote relative to a sub-folder (`greet.js:3`) is looked up when it is unambiguous.

export interface OpenFileRequest {
  readonly path: string;
  /** 1-based. */
  readonly line?: number;
  readonly column?: number;
}

const EXCLUDE = '{**/node_modules/**,**/.git/**}';

async function findUnique(roots: readonly string[], requested: string): Promise<string | undefined> {
  if (requested.startsWith('/') || requested.split(/[\\/]/).includes('..')) return undefined;
  const glob = requested.replace(/^\.\//, '').replace(/[[\]{}()*?!\\]/g, '');
  const found = await vscode.workspace.findFiles(`**/${glob}`, EXCLUDE, 2);
  if (found.length !== 1) return undefined;
  const target = resolveWorkspaceFile(roots, found[0]!.fsPath);
  return target.ok ? target.path : undefined;
}

/** Opens the file at the line; false (and a message) when it is outside the workspace or missing. */
export async function openWorkspaceFile(
  roots: readonly string[],
  request: OpenFileRequest,
): Promise<boolean> {
  const target = resolveWorkspaceFile(roots, request.path);
  let file = target.ok ? target.path : undefined;
  if (!target.ok && target.reason === 'missing') file = await findUnique(roots, request.path);
  if (!file) {
    const why =
      !target.ok && target.reason === 'outside'
        ? 'is outside the workspace'
        : 'was not found in the workspace';
    void vscode.window.showWarningMessage(`Keel: ${request.path} ${why}; not opened.`);
    return false;
  }
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  const line = Math.max(0, Math.min((request.line ?? 1) - 1, doc.lineCount - 1));
  const column = Math.max(0, Math.min((request.column ?? 1) - 1, doc.lineAt(line).text.length));
  const at = new vscode.Position(line, column);
  const editor = await vscode.window.showTextDocument(doc, {
    selection: new vscode.Range(at, at),
    preview: true,
  });
  editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return true;
}
