import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import {
  askPrompt,
  explainPrompt,
  fixProblemsPrompt,
  reviewChangesPrompt,
  selectionContext,
  testsPrompt,
} from './taskPrompts.ts';

// The commands that turn what the editor shows into a prompt: ask about / explain / write tests for
// the selection, fix the file's problems, review the uncommitted changes. Each opens the panel and
// sends the prompt with the file as a mention (a "read this" reminder, never its content).

export interface EditorCommandDeps {
  /** Opens the panel and submits the prompt (errors are shown by the caller's UI). */
  readonly send: (text: string, mentions?: readonly string[]) => Promise<void>;
  readonly roots: () => readonly string[];
  /** A path as the user sees it (relative to the workspace). */
  readonly display: (p: string) => string;
  /** Adds a mention to the end of the panel's input (and reveals it). */
  readonly addToInput?: (text: string, mentions: readonly string[]) => Promise<void>;
}

export function registerEditorCommands({
  send,
  roots,
  display,
  addToInput,
}: EditorCommandDeps): vscode.Disposable[] {
  const withEditor = async (fn: (editor: vscode.TextEditor) => Promise<void>) => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage(
        vscode.l10n.t('Keel: open a file and select some code first.'),
      );
      return;
    }
    await fn(editor);
  };
  const disposables: vscode.Disposable[] = [];
  const command = (id: string, fn: () => unknown) =>
    disposables.push(vscode.commands.registerCommand(id, fn));

  command('keel.askAboutSelection', () =>
    withEditor(async (editor) => {
      const ctx = selectionContext(editor, roots());
      const lines =
        ctx.startLine === ctx.endLine
          ? vscode.l10n.t('line {0}', ctx.startLine)
          : vscode.l10n.t('lines {0}-{1}', ctx.startLine, ctx.endLine);
      const question = await vscode.window.showInputBox({
        title: vscode.l10n.t('Ask Keel About Selection'),
        prompt: vscode.l10n.t('About {0}, {1}', ctx.path, lines),
        placeHolder: vscode.l10n.t('What do you want to know? (Enter: explain it)'),
        ignoreFocusOut: true,
      });
      if (question === undefined) return;
      await send(askPrompt(question, ctx), [ctx.path]);
    }),
  );
  // `@path:12-20` into the input: the lines' text reaches the model when the message is sent
  // (contextMentions.ts), read then, so edits made meanwhile count.
  command('keel.addSelectionToChat', () =>
    withEditor(async (editor) => {
      if (editor.document.uri.scheme !== 'file') {
        void vscode.window.showInformationMessage(
          vscode.l10n.t('Keel: only a selection in a file of the workspace can be added.'),
        );
        return;
      }
      const ctx = selectionContext(editor, roots());
      // As editorMentions.ts parses it (kept out of activation's bundle: that module is the core's).
      const mention = `${ctx.path}:${ctx.startLine}${ctx.endLine !== ctx.startLine ? `-${ctx.endLine}` : ''}`;
      await addToInput?.(`@${mention} `, [mention]);
    }),
  );
  command('keel.explainSelection', () =>
    withEditor(async (editor) => {
      const ctx = selectionContext(editor, roots());
      await send(explainPrompt(ctx), [ctx.path]);
    }),
  );
  command('keel.writeTests', () =>
    withEditor(async (editor) => {
      const ctx = selectionContext(editor, roots());
      await send(testsPrompt(ctx), [ctx.path]);
    }),
  );
  command('keel.fixProblems', () =>
    withEditor(async (editor) => {
      const rel = display(editor.document.uri.fsPath);
      const problems = vscode.languages
        .getDiagnostics(editor.document.uri)
        .filter((d) => d.severity <= vscode.DiagnosticSeverity.Warning);
      if (problems.length === 0) {
        void vscode.window.showInformationMessage(
          vscode.l10n.t('Keel: VS Code reports no errors or warnings in {0}.', rel),
        );
        return;
      }
      await send(fixProblemsPrompt(rel, problems), [rel]);
    }),
  );
  command('keel.reviewChanges', async () => {
    const root = roots()[0];
    const status = root ? await gitStatus(root) : undefined;
    if (status !== undefined && status.trim() === '') {
      void vscode.window.showInformationMessage(
        vscode.l10n.t('Keel: there are no uncommitted changes in {0}.', root ?? ''),
      );
      return;
    }
    await send(reviewChangesPrompt(status));
  });
  return disposables;
}

/** `git status --porcelain` of the folder; undefined when it is not a repository or git is missing. */
function gitStatus(cwd: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['status', '--porcelain=v1', '--untracked-files=normal'],
      { cwd, timeout: 10_000, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout) => resolve(error ? undefined : stdout),
    );
  });
}
