import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RestorePlan } from '../agent/checkpoints/restore.ts';
import { type CheckpointCommandDeps, describePlan } from './checkpointCommands.ts';

// "Restore and edit this message" (a user message's action in the panel): the files Keel changed from
// that prompt on go back (same plan, same confirmation and conflict rules as "Restore to before
// this"), the chat continues in a NEW session that starts with the history before that message (the
// old one stays in the history list, its log untouched: P2), and the message text returns to the
// input for editing. "Edit Only" forks the conversation and leaves the files as they are.

export type ForkAnswer =
  | 'Restore Files and Edit'
  | 'Restore, Overwrite Conflicts, and Edit'
  | 'Edit Only'
  | undefined;

export interface ForkCommandResult {
  readonly message: string;
  readonly detail: string;
  readonly answer: ForkAnswer;
  /** The new session's id, once forked. */
  readonly forkId?: string;
  readonly restored?: number;
}

export type ForkCommandDeps = Pick<
  CheckpointCommandDeps,
  'stateDir' | 'root' | 'extraRoots' | 'controller' | 'review' | 'setInput' | 'log'
>;

export function registerForkCommand(deps: ForkCommandDeps): vscode.Disposable {
  const run = async (
    sessionArg: string | undefined,
    prompt: number | undefined,
    test?: { answer: ForkAnswer },
  ): Promise<ForkCommandResult | undefined> => {
    const stateDir = deps.stateDir();
    const root = deps.root();
    const extraRoots = deps.extraRoots?.() ?? [];
    const session = deps.controller.current;
    const sessionId = sessionArg ?? session?.id;
    if (!stateDir || !root || !sessionId || prompt === undefined) {
      void vscode.window.showInformationMessage('Keel: pick a message of the current chat to edit.');
      return undefined;
    }
    if (session?.id === sessionId && session.running) {
      void vscode.window.showWarningMessage('Keel: stop the running task before editing an earlier message.');
      return undefined;
    }
    const core = await import('../agent/checkpoints/index.ts');
    const { forkSession } = await import('../agent/session/fork.ts');
    const { createNodeStorage } = await import('../agent/node/nodeHost.ts');
    // A chat without checkpoints (they are off, or it never changed a file) still forks.
    let plan: RestorePlan = { sessionId, beforePrompt: prompt, items: [], notes: [], skipped: [] };
    // A message from before this chat was itself forked: its files are the parent chat's to restore.
    let filesElsewhere: string | undefined;
    try {
      plan = core.planRestore({ stateDir, root, extraRoots, sessionId, beforePrompt: prompt });
    } catch (error) {
      if (error instanceof core.ForkedEarlierError) filesElsewhere = error.message;
      else if (!(error instanceof core.RestoreError) || !/^No checkpoints/.test(error.message)) {
        void vscode.window.showWarningMessage(`Keel: ${(error as Error).message}`);
        return undefined;
      }
    }
    const files = describePlan(plan, false);
    const message = `Edit prompt ${prompt} and continue from there? The chat goes on in a new branch; this one stays in the history.`;
    const detail = filesElsewhere
      ? `Files are left as they are. ${filesElsewhere}`
      : plan.items.length === 0
        ? ['No file to restore: Keel changed none at or after this prompt.', ...plan.notes].join('\n')
        : `${files.message}\n${files.detail}`;
    const conflicts = plan.items.some((i) => i.status === 'conflict');
    const choices: ForkAnswer[] = [
      ...(filesElsewhere ? [] : (['Restore Files and Edit'] as const)),
      ...(conflicts ? (['Restore, Overwrite Conflicts, and Edit'] as const) : []),
      'Edit Only',
    ];
    const answer: ForkAnswer = test
      ? test.answer
      : ((await vscode.window.showWarningMessage(
          message,
          { modal: true, detail },
          ...(choices as string[]),
        )) as ForkAnswer);
    if (!answer) return { message, detail, answer };
    let restored = 0;
    if (answer !== 'Edit Only' && plan.items.length > 0) {
      const result = core.applyRestore(plan, {
        stateDir,
        root,
        extraRoots,
        now: () => Date.now(),
        force: answer === 'Restore, Overwrite Conflicts, and Edit',
      });
      for (const item of result.applied) {
        if (!item.applied) continue;
        restored++;
        deps.review.forget(
          path.isAbsolute(item.path)
            ? item.path
            : vscode.Uri.joinPath(vscode.Uri.file(root), ...item.path.split('/')).fsPath,
        );
      }
    }
    let fork: { id: string; text: string; mentions: readonly string[] };
    try {
      fork = forkSession({
        stateDir,
        storage: createNodeStorage(),
        sessionId,
        beforePrompt: prompt,
        now: Date.now(),
      });
      await deps.controller.open(fork.id);
    } catch (error) {
      void vscode.window.showWarningMessage(
        `Keel: could not start the edited branch: ${(error as Error).message}`,
      );
      return { message, detail, answer, restored };
    }
    await deps.setInput(fork.text, fork.mentions);
    deps.log(
      'info',
      `fork of ${sessionId} before prompt ${prompt} → ${fork.id} (${restored} file(s) restored, ${answer})`,
    );
    return { message, detail, answer, forkId: fork.id, restored };
  };
  return vscode.commands.registerCommand(
    'keel.forkBeforePrompt',
    (s?: string, p?: number, t?: { answer: ForkAnswer }) => run(s, p, t),
  );
}
