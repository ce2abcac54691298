import * as vscode from 'vscode';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openWorkspaceFile } from './openFile.ts';
import type { SessionController } from './sessionController.ts';
import type { KeelSettings } from './settings.ts';
import { parseTraceOpen } from './traceOpen.ts';

// "Keel: Open Trace" (a session's trace page in a webview) and "Keel: Run Eval Suite…" (`keel eval`
// in a background process with progress, then its HTML report; never in Restricted Mode, and a suite
// from the workspace only after a modal naming its commands). The trace page brings its own CSP
// (its one inline script allowed by hash); the report page has no script at all.

export interface EvidenceDeps {
  readonly controller: SessionController;
  readonly stateDir: () => string;
  readonly extensionPath: string;
  readonly settings: () => KeelSettings;
  readonly apiKey: () => Promise<string | undefined>;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
}

async function pickSession(deps: EvidenceDeps, title: string): Promise<string | undefined> {
  const items = await deps.controller.list();
  const current = deps.controller.current;
  const ordered = [...items].sort((a, b) => Number(b.id === current?.id) - Number(a.id === current?.id));
  const picks = ordered.map((s) => ({
    label: s.title || s.id,
    description: `${s.id === current?.id ? 'current · ' : ''}${new Date(s.updatedAt).toLocaleString()}`,
    id: s.id,
  }));
  if (picks.length === 0) {
    void vscode.window.showInformationMessage('Keel: there is no session to trace yet.');
    return undefined;
  }
  return (await vscode.window.showQuickPick(picks, { title }))?.id;
}

/**
 * A message from the trace page: its file links post {type:'open', path, line}. Anything else is
 * ignored; a file is opened only inside the workspace (openFile.ts). True when a file was opened.
 */
export async function openFromTrace(raw: unknown, log: EvidenceDeps['log']): Promise<boolean> {
  const request = parseTraceOpen(raw);
  if (!request) {
    log('warn', 'Trace page: a message that is not a file-open request was ignored.');
    return false;
  }
  const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  return openWorkspaceFile(roots, request);
}

export async function openTrace(deps: EvidenceDeps, target?: string) {
  const id = target ?? (await pickSession(deps, 'Keel: Open Trace'));
  if (!id) return undefined;
  const { traceHtml } = await import('../agent/trace/html.ts');
  const { resolveSessionLog } = await import('../agent/trace/trace.ts');
  const logPath = resolveSessionLog(id, deps.stateDir());
  const html = await traceHtml(logPath);
  const name = path.basename(logPath, '.jsonl');
  const panel = vscode.window.createWebviewPanel(
    'keel.trace',
    `Keel Trace ${name}`,
    vscode.ViewColumn.Active,
    { enableScripts: true, localResourceRoots: [] },
  );
  panel.webview.onDidReceiveMessage((raw: unknown) => openFromTrace(raw, deps.log));
  panel.webview.html = html;
  return { title: panel.title, logPath };
}

function cliPath(extensionPath: string): string | undefined {
  return [path.join(extensionPath, 'bin', 'keel.mjs')].find((p) => fs.existsSync(p));
}

/**
 * A suite is repository content that names commands: none of it runs in Restricted Mode, and a suite
 * from the workspace runs only after the user approved, in a modal, the commands its graders run.
 * Only then is the API key read; it goes into the `keel eval` process alone (Keel's own), whose
 * graders get an allow-list environment without it.
 */
async function consentToSuite(deps: EvidenceDeps, suite: string): Promise<boolean> {
  const { evalSuiteConsent } = await import('./evalConsent.ts');
  let consent: ReturnType<typeof evalSuiteConsent>;
  try {
    consent = evalSuiteConsent(
      suite,
      (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    );
  } catch (error) {
    void vscode.window.showErrorMessage(`Keel: ${error instanceof Error ? error.message : String(error)}`);
    return false;
  }
  if (!consent.fromWorkspace) return true;
  const choice = await vscode.window.showWarningMessage(
    `Run the eval suite from this workspace (${path.basename(consent.suite.dir)})? Its files decide what runs.`,
    { modal: true, detail: consent.detail },
    'Run Suite',
  );
  deps.log(
    'info',
    `Run Eval Suite: ${consent.suiteFile} ${choice === 'Run Suite' ? 'approved' : 'not approved'}`,
  );
  return choice === 'Run Suite';
}

export async function runEvalSuite(deps: EvidenceDeps, suiteArg?: string, modeArg?: 'api' | 'emulator') {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showErrorMessage(
      "Keel: Run Eval Suite is off in Restricted Mode: a suite's graders run commands from the suite's files. Trust this workspace first (Manage Workspace Trust), then run it again.",
    );
    return undefined;
  }
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  let suite = suiteArg;
  if (!suite) {
    const picked = await vscode.window.showOpenDialog({
      title: 'Keel: Run Eval Suite… (a folder with suite.json and tasks/)',
      canSelectFolders: true,
      canSelectFiles: false,
      ...(root ? { defaultUri: vscode.Uri.joinPath(root, 'eval') } : {}),
    });
    suite = picked?.[0]?.fsPath;
  }
  if (!suite) return undefined;
  let mode = modeArg;
  if (!mode) {
    const choice = await vscode.window.showQuickPick(
      [
        { label: 'The configured model', description: deps.settings().model, mode: 'api' as const },
        {
          label: 'The bundled emulator',
          description: "each task's scripted policy",
          mode: 'emulator' as const,
        },
      ],
      { title: 'Run the trials against' },
    );
    mode = choice?.mode;
  }
  if (!mode) return undefined;
  if (!(await consentToSuite(deps, suite))) return undefined;
  const cli = cliPath(deps.extensionPath);
  if (!cli) {
    void vscode.window.showErrorMessage('Keel: this installation has no keel command line (bin/keel.mjs).');
    return undefined;
  }
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const out = path.join(deps.stateDir(), 'evals', `${path.basename(suite)}-${stamp}`);
  const html = path.join(out, 'report.html');
  const settings = deps.settings();
  const key = mode === 'api' ? await deps.apiKey() : undefined;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ELECTRON_RUN_AS_NODE: '1',
    ...(key ? { ANTHROPIC_API_KEY: key } : {}),
    ...(mode === 'api' && settings.baseUrl ? { ANTHROPIC_BASE_URL: settings.baseUrl } : {}),
  };
  const args = [
    cli,
    'eval',
    suite,
    '--out',
    out,
    '--html',
    html,
    ...(mode === 'emulator' ? ['--emulator'] : ['--model', settings.model]),
  ];
  const result = await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: `Keel eval ${path.basename(suite)}`,
      cancellable: true,
    },
    (progress, token) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, args, {
          env,
          cwd: root?.fsPath ?? suite,
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        let last = 0;
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
          for (const m of chunk.matchAll(/^\[(\d+)\/(\d+)\] (.*)$/gm)) {
            const done = Number(m[1]);
            const total = Number(m[2]);
            progress.report({
              message: `${done}/${total} ${m[3]}`,
              increment: ((done - last) / total) * 100,
            });
            last = done;
          }
        });
        token.onCancellationRequested(() => child.kill('SIGINT'));
        child.on('error', (error) => resolve({ code: null, stderr: `${stderr}${String(error)}` }));
        child.on('close', (code) => resolve({ code, stderr }));
      }),
  );
  deps.log(result.code === 0 ? 'info' : 'warn', `keel eval ${suite} exited ${result.code}; report in ${out}`);
  if (result.code !== 0 || !fs.existsSync(html)) {
    void vscode.window.showErrorMessage(
      `Keel: the eval did not finish (exit ${result.code}): ${result.stderr.trim().split('\n').slice(-3).join(' ')}`,
    );
    return { code: result.code, report: undefined };
  }
  const panel = vscode.window.createWebviewPanel(
    'keel.evalReport',
    `Keel Eval ${path.basename(suite)}`,
    vscode.ViewColumn.Active,
    {
      enableScripts: false,
      localResourceRoots: [],
    },
  );
  panel.webview.html = fs.readFileSync(html, 'utf8');
  return { code: result.code, report: path.join(out, 'report.json') };
}

export function registerEvidenceCommands(deps: EvidenceDeps): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand('keel.openTrace', async (target?: string) => {
      try {
        return await openTrace(deps, target);
      } catch (error) {
        void vscode.window.showErrorMessage(
          `Keel: ${error instanceof Error ? error.message : String(error)}`,
        );
        return undefined;
      }
    }),
    vscode.commands.registerCommand('keel.runEvalSuite', (suite?: string, mode?: 'api' | 'emulator') =>
      runEvalSuite(deps, suite, mode),
    ),
  ];
}
