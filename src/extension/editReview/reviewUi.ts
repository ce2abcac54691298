import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { readCurrentText } from './fileOps.ts';
import { ORIGINAL_SCHEME, PROPOSED_SCHEME, type Proposals } from './proposals.ts';
import type { ReviewHunkView, ReviewManager } from './reviewManager.ts';

// What the user sees of pending agent edits: green added lines, a red marker where lines were
// removed, CodeLens "Accept | Reject | Open diff" per hunk, the original as a read-only virtual
// document for `vscode.diff`, and context keys that drive the editor-title buttons.

const BOM = '\uFEFF';
const stripBom = (text: string) => (text.startsWith(BOM) ? text.slice(1) : text);

export const COMMANDS = {
  acceptHunk: 'keel.acceptHunk',
  rejectHunk: 'keel.rejectHunk',
  openDiff: 'keel.openDiff',
} as const;

export function originalUri(p: string, reviewId: string): vscode.Uri {
  return vscode.Uri.from({ scheme: ORIGINAL_SCHEME, path: p, query: `review=${reviewId}` });
}

/**
 * Opens the "before Keel ↔ now" diff of a pending file. With nothing pending any more (accepted or
 * rejected) it opens the file as it is now and says so, so "Open diff" never silently does nothing;
 * false only when the file does not exist either.
 */
export async function openReviewDiff(review: ReviewManager, p: string): Promise<boolean> {
  const file = review.get(p);
  if (!file) {
    if (!fs.existsSync(p)) return false;
    await vscode.window.showTextDocument(vscode.Uri.file(p), { preview: true });
    const decided = review.decisions().get(p);
    const what = decided
      ? `${decided.accepted} change(s) accepted, ${decided.rejected} rejected`
      : 'nothing pending';
    vscode.window.setStatusBarMessage(`Keel: ${path.basename(p)} has no pending changes (${what})`, 5000);
    return true;
  }
  const right = file.kind === 'delete' ? originalUri(p, 'deleted') : vscode.Uri.file(p);
  await vscode.commands.executeCommand(
    'vscode.diff',
    originalUri(p, file.reviewId),
    right,
    `${path.basename(p)} (before Keel) ↔ ${file.kind === 'delete' ? 'deleted' : 'now'}`,
  );
  return true;
}

interface VirtualDocs extends vscode.TextDocumentContentProvider, vscode.Disposable {
  /** Tells VS Code to re-read every open "before Keel" / proposal document. */
  refresh(): void;
}

/**
 * One provider (and emitter) per scheme: VS Code drops, with a warning, every change event whose URI
 * scheme is not the one its provider was registered for.
 */
function originalProvider(review: ReviewManager, proposals: Proposals, scheme: string): VirtualDocs {
  const emitter = new vscode.EventEmitter<vscode.Uri>();
  return {
    onDidChange: emitter.event,
    refresh() {
      for (const doc of vscode.workspace.textDocuments) if (doc.uri.scheme === scheme) emitter.fire(doc.uri);
    },
    dispose: () => emitter.dispose(),
    async provideTextDocumentContent(uri) {
      const query = new URLSearchParams(uri.query);
      const proposalId = query.get('proposal');
      if (proposalId) {
        const proposal = proposals.pending().find((x) => x.id === proposalId);
        // Decided (accepted, rejected, stopped): both sides show the file as it is, an empty diff.
        if (!proposal) return stripBom((await readCurrentText(uri.fsPath)) ?? '');
        const text = uri.scheme === PROPOSED_SCHEME ? proposal.after : proposal.before;
        return text.startsWith(BOM) ? text.slice(1) : text;
      }
      if (query.get('review') === 'deleted') return '';
      const file = review.pending().find((f) => f.path === uri.path || f.path === uri.fsPath);
      // Nothing pending any more (all accepted or rejected): the file as it is, so the diff is empty
      // instead of claiming every line is new.
      const text = file ? (file.original ?? '') : ((await readCurrentText(uri.fsPath)) ?? '');
      return text.startsWith(BOM) ? text.slice(1) : text;
    },
  };
}

function lensesFor(doc: vscode.TextDocument, hunks: readonly ReviewHunkView[]): vscode.CodeLens[] {
  const out: vscode.CodeLens[] = [];
  const p = doc.uri.fsPath;
  for (const h of hunks) {
    const line = Math.min(h.line, Math.max(doc.lineCount - 1, 0));
    const range = new vscode.Range(line, 0, line, 0);
    const summary = `Keel: +${h.added} −${h.removed}`;
    out.push(new vscode.CodeLens(range, { title: summary, command: '' }));
    out.push(
      new vscode.CodeLens(range, { title: 'Accept', command: COMMANDS.acceptHunk, arguments: [p, h.id] }),
    );
    out.push(
      new vscode.CodeLens(range, { title: 'Reject', command: COMMANDS.rejectHunk, arguments: [p, h.id] }),
    );
    out.push(new vscode.CodeLens(range, { title: 'Open diff', command: COMMANDS.openDiff, arguments: [p] }));
  }
  return out;
}

export function registerReviewUi(review: ReviewManager, proposals: Proposals): vscode.Disposable {
  const disposables: vscode.Disposable[] = [];
  const added = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  const removed = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    borderColor: new vscode.ThemeColor('diffEditor.removedTextBorder'),
    borderStyle: 'solid none none none',
    borderWidth: '2px 0 0 0',
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  // The "− n line(s) removed" note goes at the END of the line before the gap (the last added
  // line of the hunk, or the line above a pure deletion), not in front of the next line's code,
  // where it read as if that code had been removed too.
  const removedNote = vscode.window.createTextEditorDecorationType({});
  disposables.push(added, removed, removedNote);

  // Hunks are computed asynchronously (the file is read), and a change can come while that runs:
  // Reject's own write fires a document change while the review still holds Keel's text, and that
  // computation (stale hunks) could finish after the one for "nothing pending". Only the newest
  // computation per editor may paint, so a settled review never leaves its marks behind.
  const painting = new WeakMap<vscode.TextEditor, number>();
  let paintSeq = 0;
  const decorate = async (editor: vscode.TextEditor) => {
    if (editor.document.uri.scheme !== 'file') return;
    const mine = ++paintSeq;
    painting.set(editor, mine);
    const hunks = review.get(editor.document.uri.fsPath)
      ? await review.hunks(editor.document.uri.fsPath)
      : [];
    if (painting.get(editor) !== mine) return;
    const addRanges: vscode.Range[] = [];
    const removedOptions: vscode.DecorationOptions[] = [];
    const noteOptions: vscode.DecorationOptions[] = [];
    const lastLine = Math.max(editor.document.lineCount - 1, 0);
    for (const h of hunks) {
      if (h.added > 0)
        addRanges.push(new vscode.Range(h.line, 0, Math.min(h.line + h.added - 1, lastLine), 0));
      if (h.removed > 0) {
        const first = h.hunk?.oldLines[0]?.replace(/\r?\n$/, '') ?? '';
        const line = Math.min(h.line + h.added, lastLine);
        const hoverMessage = new vscode.MarkdownString()
          .appendText(`Keel removed ${h.removed} line(s):\n`)
          .appendCodeblock((h.hunk?.oldLines ?? []).join('').slice(0, 4000));
        removedOptions.push({ range: new vscode.Range(line, 0, line, 0), hoverMessage });
        const text = `− ${h.removed} line${h.removed === 1 ? '' : 's'} removed${first ? `: ${first.trim().slice(0, 60)}` : ''}`;
        const noteLine = Math.min(h.line + h.added - 1, lastLine);
        const style = { color: new vscode.ThemeColor('editorGhostText.foreground'), fontStyle: 'italic' };
        if (noteLine >= 0) {
          const end = editor.document.lineAt(noteLine).range.end;
          noteOptions.push({
            range: new vscode.Range(end, end),
            hoverMessage,
            renderOptions: { after: { ...style, contentText: text, margin: '0 0 0 2em' } },
          });
        } else {
          // Removed at the very top: nothing above to attach to.
          noteOptions.push({
            range: new vscode.Range(0, 0, 0, 0),
            hoverMessage,
            renderOptions: { before: { ...style, contentText: `${text}  ` } },
          });
        }
      }
    }
    editor.setDecorations(added, addRanges);
    editor.setDecorations(removed, removedOptions);
    editor.setDecorations(removedNote, noteOptions);
  };
  const decorateAll = () => {
    for (const editor of vscode.window.visibleTextEditors) void decorate(editor);
  };

  /** Bumped on every change of the review or of a file under review (see provideCodeLenses). */
  let reviewVersion = 0;
  const lensEmitter = new vscode.EventEmitter<void>();
  disposables.push(lensEmitter);
  disposables.push(
    vscode.languages.registerCodeLensProvider(
      { scheme: 'file' },
      {
        onDidChangeCodeLenses: lensEmitter.event,
        async provideCodeLenses(doc, token) {
          // The same race as the decorations: hunks computed while the review changed are stale,
          // and VS Code keeps the last lenses it got until something asks again. Compute until
          // nothing changed meanwhile (a change also fires onDidChangeCodeLenses).
          for (let attempt = 0; attempt < 5 && !token.isCancellationRequested; attempt++) {
            const seen = reviewVersion;
            if (!review.get(doc.uri.fsPath)) return [];
            const hunks = await review.hunks(doc.uri.fsPath);
            if (seen === reviewVersion) return lensesFor(doc, hunks);
          }
          return [];
        },
      },
    ),
  );

  const originals = originalProvider(review, proposals, ORIGINAL_SCHEME);
  const proposed = originalProvider(review, proposals, PROPOSED_SCHEME);
  const provider = {
    refresh: () => {
      originals.refresh();
      proposed.refresh();
    },
  };
  disposables.push(originals, proposed);
  disposables.push(vscode.workspace.registerTextDocumentContentProvider(ORIGINAL_SCHEME, originals));
  disposables.push(vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, proposed));

  const updateContext = () => {
    const paths = review.pending().map((f) => f.path);
    void vscode.commands.executeCommand(
      'setContext',
      'keel.hasPendingEdits',
      paths.length > 0 || proposals.pending().length > 0,
    );
    void vscode.commands.executeCommand('setContext', 'keel.pendingEditPaths', paths);
  };

  const refresh = () => {
    reviewVersion++;
    decorateAll();
    lensEmitter.fire();
    updateContext();
    // Accepting folds a hunk into the baseline: an open "before Keel" diff must show the new one.
    provider.refresh();
  };
  disposables.push(
    review.onDidChange(refresh),
    proposals.onDidChange(() => {
      updateContext();
      provider.refresh();
    }),
  );
  disposables.push(vscode.window.onDidChangeVisibleTextEditors(decorateAll));
  disposables.push(
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (!review.get(e.document.uri.fsPath)) return;
      reviewVersion++;
      for (const editor of vscode.window.visibleTextEditors)
        if (editor.document === e.document) void decorate(editor);
      lensEmitter.fire();
    }),
  );
  updateContext();
  return vscode.Disposable.from(...disposables);
}
