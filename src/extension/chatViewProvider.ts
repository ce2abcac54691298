import { commandCompletions, modesMessage } from './slashPanel.ts';
import * as vscode from 'vscode';
import type { SandboxInfo } from '../agent/host.ts';
import { answerRatings } from '../agent/eval/feedbackRatings.ts';
import type { HostMessage, WebviewMessage } from '../shared/webviewProtocol.ts';
import { fileCompletions, insertCode, runOutsideSandbox } from './chatActions.ts';
import { chatHtml } from './chatHtml.ts';
import { openWorkspaceFile } from './openFile.ts';
import { openReviewDiff } from './editReview/reviewUi.ts';
import { fromRelative, type ReviewManager } from './editReview/reviewManager.ts';
import { decideReviewChange, reviewMessage } from './chatReview.ts';
import type { Proposals } from './editReview/proposals.ts';
import { sandboxNotice } from './sandboxUi.ts';
import type { SessionController } from './sessionController.ts';

// The chat panel's host side (its HTML: chatHtml.ts): a message pump that validates every
// message from the webview (zod) before acting. No agent logic lives here or in the webview.
// No retainContextWhenHidden: a re-shown webview sends `ready {afterSeq}` and catches up.

export const CHAT_VIEW_ID = 'keel.chatView';
export { PROPOSAL_HUNK } from './chatReview.ts';

export interface ChatViewDeps {
  readonly extensionUri: vscode.Uri;
  readonly controller: SessionController;
  readonly review: ReviewManager;
  readonly proposals: Proposals;
  readonly roots: () => readonly string[];
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
  /** The user confirmed re-running this refused command outside the sandbox (modal already shown). */
  readonly runOutsideSandbox?: (command: string) => Promise<void>;
  /** The sandbox tier, for the one-time panel notice. */
  readonly sandboxInfo?: () => SandboxInfo | undefined;
  /** Where ratings of answers are kept (`.keel/feedback/`, read by `keel eval --from-feedback`). */
  readonly stateDir?: () => string;
}

export interface ChatView extends vscode.WebviewViewProvider, vscode.Disposable {
  /** Post to the webview if it is showing (hidden webviews catch up on `ready`). */
  post(message: HostMessage): void;
  /** Prefill the chat input (and reveal the panel). */
  setInput(text: string, mentions: readonly string[]): Promise<void>;
  /** Add a mention to the end of the chat input (and reveal the panel). */
  addToInput(text: string, mentions: readonly string[]): Promise<void>;
  reveal(): Promise<void>;
}

export function createChatView(deps: ChatViewDeps): ChatView {
  let view: vscode.WebviewView | undefined;
  let sandboxNoticeShown = false;
  let protocol: Promise<typeof import('../shared/webviewProtocol.ts')> | undefined;
  const disposables: vscode.Disposable[] = [];
  const abs = (rel: string) => fromRelative(deps.roots(), rel);

  const post = (message: HostMessage) => {
    if (!view) return;
    void view.webview.postMessage(message).then(undefined, () => undefined);
  };

  const postReview = async () => post(await reviewMessage(deps));
  const postSessions = async () => {
    const items = await deps.controller.list();
    post({
      type: 'sessions',
      items: items.map((s) => ({
        id: s.id,
        title: s.title || '(untitled)',
        updatedAt: s.updatedAt,
        messageCount: s.messageCount,
      })),
      ...(deps.controller.current ? { currentId: deps.controller.current.id } : {}),
    });
  };
  const postSnapshot = (afterSeq: number, sessionId: string | undefined) => {
    const session = deps.controller.current;
    if (!session) return;
    const sameSession = sessionId === session.id;
    post({
      type: 'snapshot',
      sessionId: session.id,
      replace: !sameSession,
      events: session.eventsSince(sameSession ? afterSeq : 0),
      todos: session.todos,
      running: session.running,
      model: deps.controller.model,
      contextWindow: deps.controller.contextWindow,
      ...ratingsOf(session.id),
    });
  };
  // A reopened or reloaded chat shows how its answers were rated (kept beside the session log).
  const ratingsOf = (sessionId: string) => {
    const stateDir = deps.stateDir?.();
    const ratings = stateDir ? answerRatings(stateDir, sessionId) : {};
    return Object.keys(ratings).length > 0 ? { ratings } : {};
  };
  const clampPct = (n: number) => Math.min(100, Math.max(0, n));
  const postUsage = () => {
    const usage = deps.controller.usage;
    post({
      type: 'usage',
      ...usage,
      cacheHitPct: clampPct(usage.cacheHitPct),
      sessionCacheHitPct: clampPct(usage.sessionCacheHitPct),
      stage: Math.max(0, Math.trunc(usage.stage)),
    });
  };

  const submits = new Map<string, ReturnType<SessionController['submit']>>();
  const postModes = () => post(modesMessage(deps.roots()[0], deps.controller.mode));
  const postEffort = () => post({ type: 'effort', effort: deps.controller.effort });
  const handle = async (message: WebviewMessage) => {
    switch (message.type) {
      case 'ready': {
        // After a window reload the extension starts empty: reopen the session from its log; the
        // `switched` event then sends the whole transcript, so no catch-up snapshot on top.
        const restored = !deps.controller.current && (await deps.controller.restore(message.sessionId));
        if (!restored && deps.controller.current) postSnapshot(message.afterSeq, message.sessionId);
        postUsage();
        postModes();
        postEffort();
        const notice = sandboxNotice(deps.sandboxInfo?.());
        if (notice && !sandboxNoticeShown) {
          sandboxNoticeShown = true;
          post({ type: 'hostNotice', level: 'warn', code: 'NO_SANDBOX', ...notice });
        }
        await postReview();
        await postSessions();
        return;
      }
      case 'submit': {
        // Said at once: the webview stops re-posting. A re-post of a key already seen gets the
        // first one's answer; the prompt runs once.
        post({ type: 'submitReceived', idempotencyKey: message.idempotencyKey });
        let pending = submits.get(message.idempotencyKey);
        if (!pending) {
          pending = deps.controller.submit(message.text, {
            mentions: message.mentions,
            idempotencyKey: message.idempotencyKey,
            ...(message.images ? { images: message.images } : {}),
          });
          submits.set(message.idempotencyKey, pending);
          if (submits.size > 200) submits.delete(submits.keys().next().value!);
        }
        const result = await pending;
        post({
          type: 'submitResult',
          idempotencyKey: message.idempotencyKey,
          ok: result.ok,
          ...(result.error ? { error: result.error } : {}),
          ...(result.ok && result.info !== undefined ? { settled: true as const } : {}),
        });
        if (result.info) post({ type: 'hostNotice', level: 'info', text: result.info });
        if (result.notice) post({ type: 'hostNotice', level: 'info', text: result.notice });
        if (!result.ok) {
          post({
            type: 'hostNotice',
            level: 'error',
            text: result.error ?? 'Could not send the message.',
            ...(result.code ? { code: result.code } : {}),
            ...(result.suggestion ? { suggestion: result.suggestion } : {}),
          });
        }
        return;
      }
      case 'setEffort':
        deps.controller.setEffort(message.effort);
        postEffort();
        return;
      case 'setMode':
        deps.controller.setMode(message.mode ?? undefined);
        postModes();
        return;
      case 'startPlan': {
        postModes();
        const result = await deps.controller.startPlan(message.text);
        if (!result.ok)
          post({ type: 'hostNotice', level: 'error', text: result.error ?? 'Could not start the plan.' });
        postModes();
        return;
      }
      case 'stop':
        deps.controller.stop();
        return;
      case 'stopJob':
        deps.controller.stopJob(message.id);
        return;
      case 'newChat':
        deps.controller.newChat();
        return;
      case 'openSession':
        try {
          await deps.controller.open(message.id);
        } catch (error) {
          post({
            type: 'hostNotice',
            level: 'error',
            text: `Could not reopen session: ${(error as Error).message}`,
          });
        }
        return;
      case 'listSessions':
        await postSessions();
        return;
      case 'accept':
      case 'reject':
        await decideReviewChange(
          deps,
          message.type === 'accept',
          abs(message.path),
          message.path,
          message.hunkId,
        );
        return;
      case 'acceptAll':
        await vscode.commands.executeCommand('keel.acceptAllEdits');
        return;
      case 'rejectAll':
        await vscode.commands.executeCommand('keel.rejectAllEdits');
        return;
      case 'restoreBefore':
        await vscode.commands.executeCommand(
          'keel.restoreBeforePrompt',
          deps.controller.current?.id,
          message.promptNumber,
        );
        return;
      case 'forkBefore':
        await vscode.commands.executeCommand(
          'keel.forkBeforePrompt',
          deps.controller.current?.id,
          message.promptNumber,
        );
        return;
      case 'openDiff':
        await openReviewDiff(deps.review, abs(message.path));
        return;
      case 'memoryDecision':
        // Keep: the change is already on disk. Undo: restore the version before it.
        if (!message.keep) await vscode.commands.executeCommand('keel.undoMemoryChange', message.changeId);
        return;
      case 'openFile':
        await openWorkspaceFile(deps.roots(), message);
        return;
      case 'copyCode':
        await vscode.env.clipboard.writeText(message.code);
        return;
      case 'insertCode':
        await insertCode(message.code);
        return;
      case 'runOutsideSandbox':
        await runOutsideSandbox(deps, message.toolUseId);
        return;
      case 'feedback': {
        const session = deps.controller.current;
        const stateDir = deps.stateDir?.();
        // Loaded on the first rating: off the panel's start-up path.
        const { recordAnswerFeedback } = await import('../agent/eval/feedback.ts');
        const result =
          session && stateDir
            ? recordAnswerFeedback(stateDir, session, message)
            : { ok: false as const, error: 'No session to rate.' };
        if (!result.ok)
          post({ type: 'hostNotice', level: 'warn', text: `Feedback not saved: ${result.error}` });
        return;
      }
      case 'requestFileCompletions':
        post({
          type: 'fileCompletions',
          query: message.query,
          items: message.query.startsWith('/')
            ? commandCompletions(message.query, deps.roots()[0] ?? '')
            : await fileCompletions(message.query, deps.roots()),
        });
        return;
    }
  };

  disposables.push(
    deps.controller.onDidChange((e) => {
      if (e.type === 'event') post({ type: 'event', event: e.event });
      else if (e.type === 'usage') postUsage();
      else if (e.type === 'switched') {
        postEffort();
        const session = deps.controller.current;
        if (session) postSnapshot(0, undefined);
        else
          post({
            type: 'snapshot',
            sessionId: 'new',
            replace: true,
            events: [],
            todos: [],
            running: false,
            model: deps.controller.model,
            contextWindow: deps.controller.contextWindow,
          });
        void postSessions();
      }
    }),
    deps.review.onDidChange(() => void postReview()),
    deps.proposals.onDidChange(() => void postReview()),
  );

  const chatView: ChatView = {
    resolveWebviewView(webviewView) {
      view = webviewView;
      const webview = webviewView.webview;
      webview.options = {
        enableScripts: true,
        localResourceRoots: [
          vscode.Uri.joinPath(deps.extensionUri, 'dist'),
          vscode.Uri.joinPath(deps.extensionUri, 'media'),
        ],
      };
      webview.html = chatHtml(webview, deps.extensionUri);
      // The validator (zod) loads with the first webview, not at activation. Messages keep their
      // order: each waits for the same promise.
      protocol ??= import('../shared/webviewProtocol.ts');
      const loaded = protocol;
      const sub = webview.onDidReceiveMessage(async (raw: unknown) => {
        const { parseWebviewMessage } = await loaded;
        const parsed = parseWebviewMessage(raw);
        if (!parsed.ok) {
          deps.log('warn', `ignored malformed webview message: ${parsed.error}`);
          return;
        }
        handle(parsed.value).catch((error: unknown) => {
          deps.log('error', `webview message ${parsed.value.type} failed: ${String(error)}`);
          post({
            type: 'hostNotice',
            level: 'error',
            text: error instanceof Error ? error.message : String(error),
          });
        });
      });
      webviewView.onDidDispose(() => {
        sub.dispose();
        if (view === webviewView) view = undefined;
      });
    },
    post,
    async setInput(text, mentions) {
      await chatView.reveal();
      // The webview may be loading; it asks for state on `ready`, and this arrives after.
      post({ type: 'setInput', text, mentions: [...mentions] });
    },
    async addToInput(text, mentions) {
      await chatView.reveal();
      post({ type: 'setInput', text, mentions: [...mentions], append: true });
    },
    async reveal() {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    },
    dispose() {
      for (const d of disposables) d.dispose();
    },
  };
  return chatView;
}
