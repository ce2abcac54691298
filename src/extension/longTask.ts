import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { AgentSession, AgentSessionOptions } from '../agent/session/types.ts';
import type { TaskDeps } from '../agent/task/harness.ts';
import type { TaskStatus } from '../agent/task/status.ts';

// The long-task harness (seed 003) in VS Code: Start / Continue commands, a tree of features with
// their pass state and the session that passed each, and a status-bar item while sessions run.

export const TASK_VIEW_ID = 'keel.taskFeatures';
/**
 * Context key: the workspace has a long task (keel-task/feature_list.json). The Long Task view is
 * shown only then (package.json `when`), so the chat has the side bar to itself until a task exists.
 */
export const HAS_TASK_CONTEXT = 'keel.hasLongTask';
/** agent/task/featureList.ts FEATURE_LIST, without loading that module (and zod) at activation. */
const FEATURE_LIST_FILE = path.join('keel-task', 'feature_list.json');

export interface LongTaskDeps {
  readonly root: () => string | undefined;
  readonly host: () => TaskDeps['host'];
  /** A NEW session each call (fresh context, own log), with the harness's extra tools. */
  readonly createSession: (
    extra: Pick<AgentSessionOptions, 'extraTools' | 'wrapTool'>,
  ) => Promise<AgentSession>;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export type FeatureNode =
  | { readonly kind: 'feature'; readonly feature: TaskStatus['features'][number] }
  | { readonly kind: 'message'; readonly text: string };

export interface LongTaskView extends vscode.Disposable {
  refresh(): void;
  /** What the tree shows now (also used by tests). */
  nodes(): Promise<FeatureNode[]>;
  treeItem(node: FeatureNode): vscode.TreeItem;
  readonly running: boolean;
}

export function featureTreeItem(node: FeatureNode): vscode.TreeItem {
  if (node.kind === 'message') {
    const item = new vscode.TreeItem(node.text);
    item.iconPath = new vscode.ThemeIcon('warning');
    return item;
  }
  const f = node.feature;
  const item = new vscode.TreeItem(`${f.id}  ${f.description}`);
  item.id = f.id;
  item.description = f.passes ? `passes${f.passedBy ? ` · ${f.passedBy}` : ''}` : 'failing';
  item.tooltip = `${f.category}: ${f.description}${f.passedBy ? `\nPassed in session ${f.passedBy}` : ''}`;
  item.iconPath = new vscode.ThemeIcon(
    f.passes ? 'pass-filled' : 'circle-large-outline',
    new vscode.ThemeColor(f.passes ? 'testing.iconPassed' : 'testing.iconQueued'),
  );
  item.contextValue = f.passes ? 'keel.feature.passing' : 'keel.feature.failing';
  return item;
}

export function registerLongTask(deps: LongTaskDeps): LongTaskView {
  const changed = new vscode.EventEmitter<void>();
  let running = false;
  const status = vscode.window.createStatusBarItem('keel.longTask', vscode.StatusBarAlignment.Left, 99);
  status.name = 'Keel Long Task';
  status.command = `${TASK_VIEW_ID}.focus`;

  const nodes = async (): Promise<FeatureNode[]> => {
    const root = deps.root();
    if (!root) return [];
    const { taskStatus } = await import('../agent/task/status.ts');
    try {
      return taskStatus(root).features.map((feature) => ({ kind: 'feature', feature }));
    } catch (error) {
      const text = (error as Error).message;
      return /No keel-task/.test(text) ? [] : [{ kind: 'message', text }];
    }
  };
  let hasTask: boolean | undefined;
  const updateContext = () => {
    const root = deps.root();
    const next = root !== undefined && fs.existsSync(path.join(root, FEATURE_LIST_FILE));
    if (next === hasTask) return;
    hasTask = next;
    void vscode.commands.executeCommand('setContext', HAS_TASK_CONTEXT, next);
  };
  const refresh = () => {
    updateContext();
    changed.fire();
  };
  updateContext();
  const provider: vscode.TreeDataProvider<FeatureNode> = {
    onDidChangeTreeData: changed.event,
    getChildren: (parent) => (parent ? [] : nodes()),
    getTreeItem: featureTreeItem,
  };
  // The folder itself too: deleting keel-task/ reports the folder, not the files in it.
  const watcher = vscode.workspace.createFileSystemWatcher('{**/keel-task,**/keel-task/*}');
  watcher.onDidChange(refresh);
  watcher.onDidCreate(refresh);
  watcher.onDidDelete(refresh);

  const withRun = async <T>(fn: (deps: TaskDeps) => Promise<T>): Promise<T | undefined> => {
    const root = deps.root();
    if (!root) {
      void vscode.window.showInformationMessage('Keel: open a folder to run a long task.');
      return undefined;
    }
    if (running) {
      void vscode.window.showInformationMessage('Keel: a long-task session is already running.');
      return undefined;
    }
    running = true;
    status.text = '$(sync~spin) Keel task';
    status.show();
    try {
      return await fn({
        workspace: root,
        host: deps.host(),
        newSession: (extra) => deps.createSession(extra),
        onSessionStart: (session, feature) => {
          status.text = `$(sync~spin) Keel task: ${feature ? feature.id : 'initializing'}`;
          status.tooltip = `Long-task session ${session.id}`;
          deps.log('info', `long task: session ${session.id}${feature ? ` on ${feature.id}` : ''}`);
        },
      });
    } catch (error) {
      void vscode.window.showErrorMessage(`Keel long task: ${(error as Error).message}`);
      deps.log('error', `long task: ${(error as Error).message}`);
      return undefined;
    } finally {
      running = false;
      status.hide();
      refresh();
    }
  };

  const start = (specArg?: string) =>
    withRun(async (taskDeps) => {
      const spec =
        specArg ??
        (await vscode.window.showInputBox({
          title: 'Keel: Start Long Task',
          prompt:
            'Describe the whole task. An initializer session splits it into features, each with a verify command.',
          ignoreFocusOut: true,
        }));
      if (!spec?.trim()) return undefined;
      const { initTask } = await import('../agent/task/harness.ts');
      const report = await initTask(taskDeps, spec);
      void vscode.window.showInformationMessage(
        `Keel: long task initialized with ${report.features} features. "Keel: Continue Long Task" works on them.`,
      );
      return report;
    });

  const cont = (sessions?: number) =>
    withRun(async (taskDeps) => {
      const { runTask } = await import('../agent/task/harness.ts');
      const report = await runTask(taskDeps, { sessions: sessions ?? 1 });
      const last = report.sessions.at(-1);
      void vscode.window.showInformationMessage(
        `Keel: ${report.status.passing}/${report.status.total} features pass${last ? ` (last session: ${last.feature ?? 'none'} ${last.outcome})` : ''}.`,
      );
      return report;
    });

  const disposables = vscode.Disposable.from(
    vscode.window.registerTreeDataProvider(TASK_VIEW_ID, provider),
    watcher,
    status,
    changed,
    vscode.commands.registerCommand('keel.startLongTask', start),
    vscode.commands.registerCommand('keel.continueLongTask', cont),
    vscode.commands.registerCommand('keel.refreshLongTask', refresh),
  );
  return {
    refresh,
    nodes,
    treeItem: featureTreeItem,
    get running() {
      return running;
    },
    dispose: () => disposables.dispose(),
  };
}
