import * as vscode from 'vscode';
import * as path from 'node:path';
import type { Host } from '../agent/host.ts';
import { createNodeStorage } from '../agent/node/nodeHost.ts';
import { createChatRequestHandler, registerChatParticipant } from './chatParticipant.ts';
import { offerKeelModels } from './lm/keelChatProvider.ts';
import { registerKeelTools } from './lm/keelTools.ts';
import { CHAT_VIEW_ID, createChatView } from './chatViewProvider.ts';
import { createProposals } from './editReview/proposals.ts';
import { createReviewManager, relativeTo } from './editReview/reviewManager.ts';
import { restoreReviews } from './editReview/restoreReviews.ts';
import { createReviewStore } from './editReview/reviewStore.ts';
import { COMMANDS, openReviewDiff, registerReviewUi } from './editReview/reviewUi.ts';
import { registerMcpServersCommand } from './mcp.ts';
import { type McpAuthStatus, mcpAuthStatus } from './mcpAuth.ts';
import { providerKeys, registerProviderKeyCommand } from './providerKeys.ts';
import { createHostProvider } from './hostProvider.ts';
import { createTrustReview, REVIEW_TRUST_COMMAND } from './workspaceTrust.ts';
import { registerMemoryCommands } from './memoryCommands.ts';
import { registerEditorCommands } from './editorCommands.ts';
import { registerEvidenceCommands } from './evidence.ts';
import { createSessionController, type SessionController } from './sessionController.ts';
import { registerCheckpointCommands } from './checkpointCommands.ts';
import { type LongTaskView, registerLongTask } from './longTask.ts';
import { runOutsideMessage } from './sandboxUi.ts';
import { readSettings } from './settings.ts';
import { createStatusBar } from './statusBar.ts';
import { createTerminalRecorder } from './terminalOutput.ts';
import { createExtensionTelemetry } from './telemetry.ts';
import { workspaceRoots } from './vscodeHost.ts';

// Activation wires things up and does nothing heavy: the agent core (model client, tools) is
// imported on the first prompt, the webview protocol validator with the first webview. Every
// registration is a Disposable owned by the context. Activation comes after startup (onStartupFinished,
// never during it): VS Code's Chat view runs `@keel` only once a model is selected in its picker, and it
// lists Keel's models only while Keel is active; otherwise on views, commands and pending reviews.

/** Set by the bundle's first line (scripts/build-ext.mjs); absent when bundled into tests. */
declare const __keelLoadStart: number | undefined;
const moduleLoaded = performance.now();

export const SECRET_KEY = 'keel.anthropicApiKey';

export interface KeelApi {
  readonly controller: SessionController;
  readonly activationMs: number;
  /** Evaluating the extension's bundle (before activate was called). */
  readonly moduleLoadMs: number;
  host(): Host;
  readonly longTask: LongTaskView;
  /** An MCP server's sign-in state (never the token: a hash of it, for tests). */
  mcpAuth(server: string): Promise<McpAuthStatus | undefined>;
  /** `@keel` in the Chat view (also where the chat UI is missing, e.g. without a language model). */
  readonly chatRequestHandler: vscode.ChatRequestHandler;
}

let log: vscode.LogOutputChannel | undefined;
let shutdown: (() => Promise<void>) | undefined;

export function activate(context: vscode.ExtensionContext): KeelApi {
  const started = performance.now();
  const channel = vscode.window.createOutputChannel('Keel', { log: true });
  log = channel;
  const write = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => {
    if (level === 'error') channel.error(message);
    else if (level === 'warn') channel.warn(message);
    else if (level === 'debug') channel.debug(message);
    else channel.info(message);
  };
  const sub = (...d: vscode.Disposable[]) => context.subscriptions.push(...d);
  sub(channel);

  const roots = () => workspaceRoots();
  const display = (p: string) => relativeTo(roots(), p);
  let controller: SessionController | undefined;
  // Pending reviews persist in the same state dir the host uses (<primary root>/.keel).
  const primaryRoot = roots()[0];
  const review = createReviewManager({
    display,
    roots,
    log: (m) => write('warn', m),
    ...(primaryRoot
      ? { store: createReviewStore(path.join(primaryRoot, '.keel'), createNodeStorage()) }
      : {}),
    onRejected: (note) => {
      write('info', note.description);
      controller?.notify(note.description, 'review');
    },
  });
  const proposals = createProposals({ display });
  sub(review, proposals, registerReviewUi(review, proposals));
  // Stored reviews name files that Reject writes: a repository can commit them, so they come back
  // only in a trusted workspace (and then only paths inside it, checked in reviewRestore.ts).
  if (vscode.workspace.isTrusted) void restoreReviews(review, display, write);
  else {
    write('info', 'pending reviews (if any) are restored once this workspace is trusted');
    const once = vscode.workspace.onDidGrantWorkspaceTrust(() => {
      once.dispose();
      void restoreReviews(review, display, write);
    });
    sub(once);
  }

  const hosts = createHostProvider({
    context,
    review,
    proposals,
    primaryRoot: () => roots()[0],
    runSignal: () => controller?.runSignal,
    log: write,
  });
  sub(hosts);
  const getHost = hosts.get;

  const trustReview = createTrustReview({
    root: () => roots()[0],
    changed: () => hosts.reset(),
    log: (level, message) => write(level, message),
  });
  sub(vscode.commands.registerCommand(REVIEW_TRUST_COMMAND, () => trustReview.review()));
  // `@terminal`: each command's output is read as it runs (only then can it be read).
  const terminals = createTerminalRecorder();
  sub(terminals);
  // Keel's own key: VS Code's secret storage, then the environment.
  const apiKey = async () =>
    (await context.secrets.get(SECRET_KEY)) || process.env.ANTHROPIC_API_KEY || undefined;
  controller = createSessionController({
    editorSources: { terminal: () => terminals.lastOutput() },
    beforeCreate: () => trustReview.beforeSession(),
    host: getHost,
    settings: readSettings,
    apiKey,
    providerKeys: () => providerKeys(context.secrets),
    log: write,
    memento: context.workspaceState,
    bundledSkillsDir: vscode.Uri.joinPath(context.extensionUri, 'skills').fsPath,
    telemetry: createExtensionTelemetry(write),
  });
  const ctl = controller;
  sub(
    ctl,
    registerMcpServersCommand(ctl, (m) => write('warn', m), context.secrets),
    registerProviderKeyCommand(context.secrets),
  );
  // VS Code waits (a few seconds at most) for deactivate: long enough to log a cut run's end.
  shutdown = () => ctl.shutdown(2000);
  // While the user types the first prompt: load the core and make the host, off activation's path.
  const warm = setTimeout(() => void ctl.warmUp(), 0);
  sub({ dispose: () => clearTimeout(warm) });

  const chat = createChatView({
    extensionUri: context.extensionUri,
    controller: ctl,
    review,
    proposals,
    roots,
    log: write,
    sandboxInfo: () => hosts.sandboxInfo(),
    stateDir: () => getHost().stateDir,
    runOutsideSandbox: async (command) => {
      hosts.approveOutsideOnce(command);
      await ctl.submit(runOutsideMessage(command), {
        mentions: [],
        idempotencyKey: `outside-${Date.now()}-${Math.random().toString(36).slice(2)}`,
      });
    },
  });
  sub(chat, vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat));

  sub(
    registerCheckpointCommands({
      stateDir: () => (roots()[0] ? path.join(roots()[0]!, '.keel') : undefined),
      root: () => roots()[0],
      extraRoots: () => roots().slice(1),
      currentSessionId: () => ctl.current?.id,
      review,
      display,
      log: write,
      controller: ctl,
      setInput: (text, mentions) => chat.setInput(text, mentions),
    }),
  );

  // Keel's models for VS Code's chat and other extensions (vendor "keel"), served with Keel's key.
  const offered = offerKeelModels(context, {
    apiKey,
    baseUrl: () => readSettings().baseUrl,
    models: () => [readSettings().model, ...readSettings().fallbackModels],
    log: write,
  });
  if (offered) sub(offered);
  // Keel's read-only tools (Read, Grep, Glob, LS) for VS Code's other agents, through the same guards.
  const tools = registerKeelTools({ host: getHost, log: write });
  if (tools) sub(tools);
  const longTask = registerLongTask({
    root: () => roots()[0],
    host: getHost,
    log: write,
    // Each long-task session is a new session with the same settings as a chat (not shown in the panel).
    createSession: async (extra) => {
      const { createAgentSession } = await import('../agent/session/session.ts');
      await trustReview.beforeSession();
      const settings = readSettings();
      const key = await apiKey();
      return createAgentSession({
        host: getHost(),
        model: settings.model,
        effort: settings.effort,
        fallbackModels: settings.fallbackModels,
        ...(key ? { apiKey: key } : {}),
        ...(settings.baseUrl ? { baseURL: settings.baseUrl } : {}),
        ...(settings.maxTurns ? { maxTurns: settings.maxTurns } : {}),
        ...(settings.contextWindow ? { contextWindow: settings.contextWindow } : {}),
        ...(settings.checkpointBudgetMB
          ? { checkpoints: { budgetBytes: settings.checkpointBudgetMB * 1024 * 1024 } }
          : {}),
        rulesDisabled: settings.rulesDisabled,
        readOnly: !vscode.workspace.isTrusted,
        bundledSkillsDir: vscode.Uri.joinPath(context.extensionUri, 'skills').fsPath,
        ...extra,
      });
    },
  });
  sub(longTask);

  const status = createStatusBar('keel.openPanel');
  sub(
    status,
    ctl.onDidChange((e) => {
      if (e.type !== 'usage') return;
      status.setSandbox(hosts.sandboxInfo());
      status.update(e.usage);
    }),
    // The view title's Stop button shows only while a run is going.
    ctl.onDidChange((e) => {
      if (e.type === 'usage') return;
      const running = e.type === 'event' ? e.event.type !== 'agent_end' : (ctl.current?.running ?? false);
      void vscode.commands.executeCommand('setContext', 'keel.running', running);
    }),
  );
  // The host (and its sandbox probe) is made lazily, with the first session; shown from then on.
  sub(hosts.onDidCreate((created) => status.setSandbox(created.shell.sandbox?.info)));

  const send = async (text: string, mentions: readonly string[] = []) => {
    await chat.reveal();
    const result = await ctl.submit(text, {
      mentions,
      idempotencyKey: `cmd-${Date.now()}-${Math.random().toString(36).slice(2)}`,
    });
    if (!result.ok) {
      const action = result.code === 'NO_API_KEY' ? 'Set API Key' : undefined;
      const choice = await vscode.window.showErrorMessage(
        `Keel: ${result.error}`,
        ...(action ? [action] : []),
      );
      if (choice === 'Set API Key') await vscode.commands.executeCommand('keel.setApiKey');
    }
  };
  const command = (id: string, fn: (...args: never[]) => unknown) =>
    sub(vscode.commands.registerCommand(id, fn as (...args: unknown[]) => unknown));

  command('keel.openPanel', () => chat.reveal());
  command('keel.newChat', async () => {
    ctl.newChat();
    await chat.reveal();
  });
  // `@keel` in VS Code's Chat view: the same controller, session, approvals and review as the panel.
  const chatDeps = { controller: ctl, review, roots, display };
  const chatRequestHandler = createChatRequestHandler(chatDeps);
  const participant = registerChatParticipant(chatDeps, context.extensionUri);
  if (participant) sub(participant);
  sub(
    ...registerEditorCommands({
      send,
      roots,
      display,
      addToInput: (text, mentions) => chat.addToInput(text, mentions),
    }),
  );
  command('keel.stop', () => ctl.stop());
  command('keel.acceptAllEdits', async () => {
    const n = (await review.acceptAll()) + proposals.decideAll(true);
    write('info', `accepted all edits (${n} file(s))`);
  });
  command('keel.rejectAllEdits', async () => {
    const n = (await review.rejectAll()) + proposals.decideAll(false);
    write('info', `rejected all edits (${n} file(s))`);
  });
  command(COMMANDS.acceptHunk, async (p: string, hunkId?: string) => {
    if (!(await review.accept(p, hunkId))) proposals.decide(p, true);
  });
  command(COMMANDS.rejectHunk, async (p: string, hunkId?: string) => {
    if (!(await review.reject(p, hunkId))) proposals.decide(p, false);
  });
  command(COMMANDS.openDiff, async (arg?: string | vscode.Uri) => {
    const p =
      typeof arg === 'string' ? arg : (arg?.fsPath ?? vscode.window.activeTextEditor?.document.uri.fsPath);
    if (!p || !(await openReviewDiff(review, p)))
      void vscode.window.showInformationMessage('Keel: no pending edits for this file.');
  });
  command('keel.setApiKey', async () => {
    const key = await vscode.window.showInputBox({
      title: 'Keel: Set API Key',
      prompt:
        "Your Anthropic API key. It is stored in VS Code's secret storage, never in settings. Leave empty to remove it.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return;
    if (key.trim()) await context.secrets.store(SECRET_KEY, key.trim());
    else await context.secrets.delete(SECRET_KEY);
    void vscode.window.showInformationMessage(key.trim() ? 'Keel: API key saved.' : 'Keel: API key removed.');
  });
  command('keel.showLog', () => channel.show(true));
  sub(
    ...registerMemoryCommands({ stateDir: () => getHost().stateDir, session: () => ctl.current, log: write }),
    ...registerEvidenceCommands({
      controller: ctl,
      stateDir: () => getHost().stateDir,
      extensionPath: context.extensionPath,
      settings: readSettings,
      apiKey,
      log: write,
    }),
  );
  command('keel.openSessionLog', async () => {
    let logPath = ctl.current?.logPath;
    if (!logPath) {
      const items = await ctl.list();
      const pick = await vscode.window.showQuickPick(
        items.map((s) => ({
          label: s.title || s.id,
          description: new Date(s.updatedAt).toLocaleString(),
          id: s.id,
        })),
        { title: 'Open Session Log' },
      );
      if (!pick) return;
      logPath = vscode.Uri.joinPath(
        vscode.Uri.file(getHost().stateDir),
        'sessions',
        `${pick.id}.jsonl`,
      ).fsPath;
    }
    await vscode.window.showTextDocument(vscode.Uri.file(logPath), { preview: true });
  });

  sub(
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      write('info', 'workspace trusted: new chats can edit files and run commands');
      void vscode.window.showInformationMessage(
        'Keel: this workspace is now trusted. Start a new chat to let Keel edit files and run commands.',
      );
    }),
  );

  const activationMs = performance.now() - started;
  const moduleLoadMs = typeof __keelLoadStart === 'number' ? moduleLoaded - __keelLoadStart : 0;
  write(
    'info',
    `Keel activated in ${activationMs.toFixed(1)} ms (module load ${moduleLoadMs.toFixed(1)} ms; VS Code ${vscode.version}, trusted: ${vscode.workspace.isTrusted})`,
  );
  if (!hosts.ripgrepPath())
    write(
      'warn',
      `no ripgrep found under ${vscode.env.appRoot}: Grep will answer UNAVAILABLE (Glob and Read still work)`,
    );
  const mcpAuth = async (server: string) => {
    const manager = ctl.current?.mcp;
    return manager ? mcpAuthStatus(context.secrets, manager, server) : undefined;
  };
  return {
    controller: ctl,
    activationMs,
    moduleLoadMs,
    host: getHost,
    longTask,
    mcpAuth,
    chatRequestHandler,
  };
}

export async function deactivate(): Promise<void> {
  try {
    await shutdown?.();
  } finally {
    shutdown = undefined;
    log?.info('Keel deactivated');
  }
}
