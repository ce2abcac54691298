import * as vscode from 'vscode';
import type { ReviewManager } from './editReview/reviewManager.ts';
import type { SessionController } from './sessionController.ts';

// `@keel` in VS Code's Chat view (stable chat API): the request goes to the same session controller as
// the panel, so the same core session answers it, with the same host: approvals are the same native
// modals and every edit lands in the same pending review (CodeLens Accept/Reject, the panel's cards).
// The answer streams as Markdown; tool calls show as progress; edited files as references, with
// buttons for the review once the run ends. Cancelling the request stops the run.
//
// Threat: the participant adds no new power. What the Chat view sends is a prompt like the panel's;
// its file references become mentions (read reminders), never content; commands and writes still ask.

export const CHAT_PARTICIPANT_ID = 'keel.agent';

export interface ChatParticipantDeps {
  readonly controller: SessionController;
  readonly review: ReviewManager;
  readonly roots: () => readonly string[];
  readonly display: (p: string) => string;
}

/** File references of a Chat request as workspace-relative mentions. */
function referencedFiles(request: vscode.ChatRequest, deps: ChatParticipantDeps): string[] {
  const out: string[] = [];
  for (const ref of request.references) {
    const value = ref.value;
    const uri =
      value instanceof vscode.Uri ? value : value instanceof vscode.Location ? value.uri : undefined;
    if (uri?.scheme !== 'file') continue;
    const rel = deps.display(uri.fsPath);
    if (rel !== uri.fsPath && !out.includes(rel)) out.push(rel);
  }
  return out;
}

export function createChatRequestHandler(deps: ChatParticipantDeps): vscode.ChatRequestHandler {
  return async (request, _context, stream, token) => {
    const result = await deps.controller.submit(request.prompt, {
      mentions: referencedFiles(request, deps),
      idempotencyKey: `chat-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    });
    if (!result.ok || !result.outcome) {
      if (result.info) {
        stream.markdown(result.info);
        return {};
      }
      const message = [result.error ?? vscode.l10n.t('Keel could not start.'), result.suggestion]
        .filter(Boolean)
        .join(' ');
      stream.markdown(`**Keel:** ${message}`);
      return { errorDetails: { message } };
    }
    const sub = deps.controller.onDidChange((e) => {
      if (e.type !== 'event') return;
      const event = e.event;
      if (event.type === 'message_delta' && event.kind === 'text') stream.markdown(event.delta);
      else if (event.type === 'tool_start') stream.progress(`${event.name}…`);
    });
    const cancel = token.onCancellationRequested(() => deps.controller.stop());
    try {
      const outcome = await result.outcome;
      const pending = deps.review.pending();
      for (const file of pending) stream.reference(vscode.Uri.file(file.path));
      if (pending.length > 0) {
        stream.markdown(`\n\n${vscode.l10n.t('{0} file(s) changed, pending your review.', pending.length)}`);
        stream.button({ command: 'keel.openDiff', title: vscode.l10n.t('Open Diff') });
        stream.button({ command: 'keel.acceptAllEdits', title: vscode.l10n.t('Accept All Edits') });
        stream.button({ command: 'keel.rejectAllEdits', title: vscode.l10n.t('Reject All Edits') });
      }
      if (outcome.status !== 'finished') {
        const message = `The run ended: ${outcome.status}${outcome.error ? ` (${outcome.error})` : ''}.`;
        return { errorDetails: { message }, metadata: { status: outcome.status } };
      }
      return { metadata: { status: outcome.status, pending: pending.map((f) => deps.display(f.path)) } };
    } finally {
      sub.dispose();
      cancel.dispose();
    }
  };
}

/** Registers `@keel` where the running VS Code has the chat API (it is stable; older hosts lack it). */
export function registerChatParticipant(
  deps: ChatParticipantDeps,
  extensionUri: vscode.Uri,
): vscode.Disposable | undefined {
  if (typeof vscode.chat?.createChatParticipant !== 'function') return undefined;
  const participant = vscode.chat.createChatParticipant(CHAT_PARTICIPANT_ID, createChatRequestHandler(deps));
  participant.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'keel.svg');
  return participant;
}
