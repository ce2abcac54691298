import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { ToolFailure } from '../../agent/tools/protocol.ts';
import { decodeExact, encodeText, minimalLineEdit } from './hunks.ts';

// File I/O the way VS Code sees files. Reads prefer the open TextDocument when it holds unsaved
// edits (the user's buffer is the truth); every change is a WorkspaceEdit, then saved so commands,
// terminals and tests see it on disk.

const BOM = '\uFEFF';

export function findOpenDocument(path: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === path);
}

/** The document's text as the bytes it would be saved as (UTF-8 family only). */
function documentText(doc: vscode.TextDocument): string {
  return doc.encoding === 'utf8bom' ? BOM + doc.getText() : doc.getText();
}

function isUtf8Family(doc: vscode.TextDocument): boolean {
  return doc.encoding === 'utf8' || doc.encoding === 'utf8bom';
}

async function encodeDocument(doc: vscode.TextDocument): Promise<Uint8Array> {
  if (isUtf8Family(doc)) return encodeText(documentText(doc));
  return vscode.workspace.encode(doc.getText(), { uri: doc.uri });
}

/** Current bytes: the dirty buffer when there is one, else the disk. Undefined = no such file. */
export async function readCurrentBytes(path: string): Promise<Uint8Array | undefined> {
  const doc = findOpenDocument(path);
  if (doc?.isDirty) return encodeDocument(doc);
  try {
    return await vscode.workspace.fs.readFile(vscode.Uri.file(path));
  } catch (error) {
    if (error instanceof vscode.FileSystemError && error.code === 'FileNotFound') return undefined;
    throw error;
  }
}

/**
 * Current text for review purposes: the unsaved buffer when there is one, else the file decoded as
 * UTF-8. A saved document is NOT used: VS Code normalises a buffer to one EOL, so for a file with
 * mixed line endings its text differs from the bytes, and a hunk computed from it would rewrite
 * untouched lines. Line numbers agree either way. Undefined = missing or not text.
 */
export async function readCurrentText(path: string): Promise<string | undefined> {
  const doc = findOpenDocument(path);
  if (doc?.isDirty && isUtf8Family(doc)) return documentText(doc);
  const bytes = await readCurrentBytes(path);
  return bytes ? decodeExact(bytes) : undefined;
}

function mode(path: string): number | undefined {
  try {
    return fs.statSync(path).mode & 0o7777;
  } catch {
    return undefined;
  }
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function changedMeanwhile(path: string): ToolFailure {
  return new ToolFailure(
    'CONFLICT',
    `${path} changed (the user typed in it or another program wrote it) while Keel was writing; Keel's change was not applied and the user's text is kept.`,
    'Read the file again, then retry.',
  );
}

async function applyOrThrow(edit: vscode.WorkspaceEdit, what: string): Promise<void> {
  const applied = await vscode.workspace.applyEdit(edit);
  if (!applied) throw new Error(`VS Code refused the edit: ${what}`);
}

/**
 * Write `content` to `path` as a WorkspaceEdit. An open (or openable) text document gets the
 * smallest whole-line replacement and is saved; bytes a text document cannot represent exactly
 * (binary, mixed line endings, a BOM change, non-UTF-8) go through a file-level WorkspaceEdit.
 */
export async function writeContent(
  path: string,
  content: Uint8Array,
  options?: {
    mode?: number;
    /**
     * SHA-256 of the bytes this write was computed from; null = the file must not exist. Checked
     * right before the edit is applied: anything else there (the user typed since) fails with
     * CONFLICT instead of being overwritten. Omitted = no check (e.g. restoring a rejected hunk).
     */
    expectedSha256?: string | null;
  },
): Promise<void> {
  const uri = vscode.Uri.file(path);
  const previousMode = mode(path);
  const existed = previousMode !== undefined;
  const next = decodeExact(content);
  let done = false;
  if (existed && next !== undefined) {
    const doc = findOpenDocument(path) ?? (await vscode.workspace.openTextDocument(uri));
    const current = documentText(doc);
    const sameBom = current.startsWith(BOM) === next.startsWith(BOM);
    // VS Code normalises a buffer to one EOL; only edit through it when it mirrors the bytes.
    const diskText = doc.isDirty ? current : decodeExact(await vscode.workspace.fs.readFile(uri));
    if (isUtf8Family(doc) && sameBom && (doc.isDirty || diskText === current)) {
      // Everything from here to applyEdit is synchronous, so the buffer checked is the buffer
      // diffed; VS Code then refuses the edit if the document's version moved on in between.
      const expected = options?.expectedSha256;
      if (expected !== undefined && expected !== sha256(encodeText(documentText(doc))))
        throw changedMeanwhile(path);
      // The buffer holds no BOM (its encoding does); diff without it on both sides.
      const change = minimalLineEdit(doc.getText(), next.startsWith(BOM) ? next.slice(1) : next);
      if (change) {
        const edit = new vscode.WorkspaceEdit();
        edit.replace(
          uri,
          new vscode.Range(doc.positionAt(change.start), doc.positionAt(change.end)),
          change.text,
        );
        const version = doc.version;
        const applied = await vscode.workspace.applyEdit(edit);
        if (!applied && doc.version !== version) throw changedMeanwhile(path);
        if (!applied) throw new Error(`VS Code refused the edit: edit ${path}`);
      }
      if (doc.isDirty && !(await doc.save())) throw new Error(`Could not save ${path}`);
      done = true;
    }
  }
  if (!done) {
    const expected = options?.expectedSha256;
    if (expected !== undefined) {
      const now = await readCurrentBytes(path);
      if ((now === undefined ? null : sha256(now)) !== expected) throw changedMeanwhile(path);
    }
    const edit = new vscode.WorkspaceEdit();
    edit.createFile(uri, { overwrite: true, contents: content });
    await applyOrThrow(edit, `write ${path}`);
    // A file-level overwrite is delete+create underneath; keep the executable bit and friends.
    const wanted = options?.mode ?? previousMode;
    if (wanted !== undefined && mode(path) !== wanted) fs.chmodSync(path, wanted);
  } else if (options?.mode !== undefined && mode(path) !== options.mode) {
    fs.chmodSync(path, options.mode);
  }
}

export async function deletePath(path: string): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  edit.deleteFile(vscode.Uri.file(path), { recursive: false, ignoreIfNotExists: false });
  await applyOrThrow(edit, `delete ${path}`);
}

export async function renamePath(from: string, to: string): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  edit.renameFile(vscode.Uri.file(from), vscode.Uri.file(to), { overwrite: false });
  await applyOrThrow(edit, `rename ${from} → ${to}`);
  // A renamed open document is re-opened under the new name; make sure nothing is left dirty.
  const doc = findOpenDocument(to);
  if (doc?.isDirty) await doc.save();
}
