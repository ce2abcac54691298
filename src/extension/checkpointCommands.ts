import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RestoreItem, RestorePlan } from '../agent/checkpoints/restore.ts';
import type { RestoreResult } from '../agent/checkpoints/restoreApply.ts';
import type { ReviewManager } from './editReview/reviewManager.ts';
import { registerForkCommand } from './forkCommand.ts';
import type { SessionController } from './sessionController.ts';

// "Restore to before this prompt" and "Undo restore" in VS Code: the same core as `keel restore`,
// behind a modal confirmation that lists every file and every conflict before anything is written.
// Restored files leave the pending review (their hunks would describe a state that is gone).

export type RestoreAnswer = 'Restore' | 'Restore and overwrite conflicts' | undefined;

export interface RestoreCommandResult {
  readonly message: string;
  readonly detail: string;
  readonly answer: RestoreAnswer;
  readonly result?: RestoreResult;
}

export interface CheckpointCommandDeps {
  readonly stateDir: () => string | undefined;
  readonly root: () => string | undefined;
  /** The other workspace folders: checkpoints record their files by absolute path. */
  readonly extraRoots?: () => readonly string[];
  readonly currentSessionId: () => string | undefined;
  readonly review: ReviewManager;
  readonly display: (p: string) => string;
  readonly log: (level: 'info' | 'warn', message: string) => void;
  /** For "Restore and edit this message" (forkCommand.ts): open the fork, fill the input. */
  readonly controller: SessionController;
  readonly setInput: (text: string, mentions: readonly string[]) => Promise<void>;
}

function itemLine(item: RestoreItem): string {
  const what =
    item.status === 'refused'
      ? `REFUSED — ${item.reason}; nothing is written there`
      : item.status === 'conflict'
        ? 'CONFLICT — you changed it since Keel; left as it is'
        : item.status === 'unrecoverable'
          ? 'no saved copy; left as it is'
          : item.action === 'delete'
            ? 'remove (Keel created it)'
            : item.action === 'none'
              ? 'already as before'
              : 'restore earlier content';
  return `• ${item.path}: ${what}`;
}

export function describePlan(plan: RestorePlan, undo: boolean): { message: string; detail: string } {
  const conflicts = plan.items.filter((i) => i.status === 'conflict').length;
  const message = undo
    ? `Undo the last restore in this chat? ${plan.items.length} file(s).`
    : `Restore the files Keel changed to how they were before prompt ${plan.beforePrompt}? ${plan.items.length} file(s)${conflicts ? `, ${conflicts} conflict(s)` : ''}.`;
  const detail = [
    plan.items.length === 0
      ? 'Keel changed no file at or after this prompt.'
      : plan.items.map(itemLine).join('\n'),
    ...plan.skipped.map(
      (s) => `• ${s.path ?? `record ${s.line}`}: SKIPPED — not a valid checkpoint record (${s.reason})`,
    ),
    ...plan.notes,
  ].join('\n');
  return { message, detail };
}

export function registerCheckpointCommands(deps: CheckpointCommandDeps): vscode.Disposable {
  const run = async (
    undo: boolean,
    sessionArg?: string,
    promptArg?: number,
    test?: { answer: RestoreAnswer },
  ): Promise<RestoreCommandResult | undefined> => {
    const stateDir = deps.stateDir();
    const root = deps.root();
    const extraRoots = deps.extraRoots?.() ?? [];
    const sessionId = sessionArg ?? deps.currentSessionId();
    if (!stateDir || !root || !sessionId) {
      void vscode.window.showInformationMessage('Keel: there is no chat with checkpoints to restore.');
      return undefined;
    }
    const core = await import('../agent/checkpoints/index.ts');
    const { openCheckpointStore } = await import('../agent/checkpoints/store.ts');
    let prompt = promptArg;
    if (!undo && prompt === undefined) {
      const prompts = openCheckpointStore(stateDir, sessionId).prompts();
      const pick = await vscode.window.showQuickPick(
        prompts
          .slice()
          .reverse()
          .map((p) => ({
            label: `Before prompt ${p.prompt}`,
            description: p.text.split('\n')[0],
            prompt: p.prompt,
          })),
        { title: 'Keel: Restore Files to Before a Prompt' },
      );
      if (!pick) return undefined;
      prompt = pick.prompt;
    }
    let plan: RestorePlan;
    try {
      plan = undo
        ? core.planUndo({ stateDir, root, extraRoots, sessionId })
        : core.planRestore({ stateDir, root, extraRoots, sessionId, beforePrompt: prompt ?? 1 });
    } catch (error) {
      void vscode.window.showWarningMessage(`Keel: ${(error as Error).message}`);
      return undefined;
    }
    const { message, detail } = describePlan(plan, undo);
    const hasConflicts = plan.items.some((i) => i.status === 'conflict');
    const choices: RestoreAnswer[] = [
      'Restore',
      ...(hasConflicts ? (['Restore and overwrite conflicts'] as const) : []),
    ];
    const answer: RestoreAnswer = test
      ? test.answer
      : ((await vscode.window.showWarningMessage(
          message,
          { modal: true, detail },
          ...(choices as string[]),
        )) as RestoreAnswer);
    if (!answer) return { message, detail, answer };
    const result = core.applyRestore(plan, {
      stateDir,
      root,
      extraRoots,
      now: () => Date.now(),
      force: answer === 'Restore and overwrite conflicts',
      ...(undo ? { by: 'undo' } : {}),
    });
    for (const item of result.applied) {
      if (!item.applied) continue;
      const abs = path.isAbsolute(item.path)
        ? item.path
        : vscode.Uri.joinPath(vscode.Uri.file(root), ...item.path.split('/')).fsPath;
      deps.review.forget(abs);
    }
    const done = result.applied.filter((a) => a.applied).length;
    deps.log(
      'info',
      `${undo ? 'undo restore' : `restore before prompt ${prompt}`} in ${sessionId}: ${done} file(s) written, ${result.conflicts} conflict(s), ${result.unrecoverable} without a copy, ${result.refused} refused, ${plan.skipped.length} invalid record(s) skipped`,
    );
    for (const item of result.applied)
      if (item.status === 'refused') deps.log('warn', `restore refused ${item.path}: ${item.reason}`);
    if (!test)
      void vscode.window
        .showInformationMessage(
          `Keel: ${done} file(s) ${undo ? 'put back' : 'restored'}.${result.refused > 0 ? ` ${result.refused} refused (outside the workspace or through a symlink): see the Keel log.` : ''}`,
          ...(undo ? [] : ['Undo Restore']),
        )
        .then((choice) => {
          if (choice === 'Undo Restore') void vscode.commands.executeCommand('keel.undoRestore', sessionId);
        });
    return { message, detail, answer, result };
  };
  return vscode.Disposable.from(
    vscode.commands.registerCommand(
      'keel.restoreBeforePrompt',
      (s?: string, p?: number, t?: { answer: RestoreAnswer }) => run(false, s, p, t),
    ),
    vscode.commands.registerCommand('keel.undoRestore', (s?: string, t?: { answer: RestoreAnswer }) =>
      run(true, s, undefined, t),
    ),
    registerForkCommand(deps),
  );
}
