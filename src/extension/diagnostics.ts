import * as vscode from 'vscode';
import type { DiagnosticsPort, DiagnosticsWatch, Problem } from '../agent/host.ts';
import { findOpenDocument } from './editReview/fileOps.ts';

// The Diagnostics port in VS Code: what the language servers (the built-in TypeScript server,
// ESLint, Pylance…) report for a file Keel just edited. The core diffs it against the baseline.
//
// The wait is bounded: at most SETTLE_CAP_MS after the write, and it ends early once the file's
// errors and warnings have changed and then stayed quiet for QUIET_MS. Servers publish in bursts
// (TypeScript: syntax, then semantic, then suggestions, each a change event) a few hundred ms after
// the edit, so "quiet for 300 ms after the first change" catches the whole burst. An edit that changes
// no error or warning gives no such change, so it costs the full cap; an edit of a plain-text file
// (no server) costs nothing. Measured in the extension test (test/extension/suite/diagnostics.test.ts):
// TypeScript's error reaches VS Code 0.4-0.6 s after the edit. TypeScript checks only files open in a
// tab, so an edited file that is not in one is shown in a preview tab ("afterApply" shows it anyway).

/** Longest wait after the write, in ms (the default of keel.edits.diagnosticsWaitMs). */
export const SETTLE_CAP_MS = 2000;
/** The file's diagnostics are settled when they have not changed for this long, in ms. */
export const QUIET_MS = 300;

function codeOf(code: vscode.Diagnostic['code']): string | undefined {
  if (code === undefined) return undefined;
  return typeof code === 'object' ? String(code.value) : String(code);
}

/** Errors and warnings, 1-based (infos and hints are not worth the model's attention after an edit). */
export function toProblems(diagnostics: readonly vscode.Diagnostic[]): Problem[] {
  const out: Problem[] = [];
  for (const d of diagnostics) {
    const severity =
      d.severity === vscode.DiagnosticSeverity.Error
        ? 'error'
        : d.severity === vscode.DiagnosticSeverity.Warning
          ? 'warning'
          : undefined;
    if (!severity) continue;
    const code = codeOf(d.code);
    out.push({
      line: d.range.start.line + 1,
      column: d.range.start.character + 1,
      severity,
      message: d.message,
      ...(d.source ? { source: d.source } : {}),
      ...(code !== undefined ? { code } : {}),
    });
  }
  return out;
}

function inTab(uri: vscode.Uri): boolean {
  return vscode.window.tabGroups.all.some((g) =>
    g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.fsPath === uri.fsPath),
  );
}

const signature = (problems: readonly Problem[]) => JSON.stringify(problems);

const NONE: DiagnosticsWatch = { baseline: [], settle: async () => [], dispose: () => undefined };

/** `keel.edits.diagnosticsWaitMs`: a whole number of ms up to 10 s; 0 turns the feature off. */
export function waitSetting(raw: unknown): number {
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw < 0) return SETTLE_CAP_MS;
  return Math.min(Math.round(raw), 10_000);
}

export interface VscodeDiagnosticsOptions {
  /** Paths not worth watching (Keel's own state under .keel/). */
  readonly skip?: (path: string) => boolean;
  /** Default: the setting, read at each edit. */
  readonly capMs?: number;
  readonly quietMs?: number;
}

export function createVscodeDiagnostics(options: VscodeDiagnosticsOptions = {}): DiagnosticsPort {
  const quietMs = options.quietMs ?? QUIET_MS;
  return {
    begin(path) {
      const capMs =
        options.capMs ??
        waitSetting(vscode.workspace.getConfiguration('keel').get('edits.diagnosticsWaitMs'));
      if (capMs === 0 || options.skip?.(path)) return NONE;
      const uri = vscode.Uri.file(path);
      const current = () => toProblems(vscode.languages.getDiagnostics(uri));
      const baseline = current();
      let lastChange: number | undefined;
      let wake: (() => void) | undefined;
      // Only a change of the errors and warnings counts: TypeScript's last burst (suggestions, hints)
      // for the previous edit can land in this edit's window, and must not end its wait early.
      let known = signature(baseline);
      // Listening starts before the write: a fast server may answer before settle() is called.
      const listener = vscode.languages.onDidChangeDiagnostics((e) => {
        if (!e.uris.some((u) => u.scheme === 'file' && u.fsPath === uri.fsPath)) return;
        const now = signature(current());
        if (now === known) return;
        known = now;
        lastChange = Date.now();
        wake?.();
      });
      return {
        baseline,
        dispose: () => listener.dispose(),
        async settle(signal) {
          try {
            // Language servers only check open documents, and TypeScript only those open in a tab
            // (bufferSyncSupport.shouldValidate): show the file, in a preview, without taking focus.
            const doc = findOpenDocument(path) ?? (await vscode.workspace.openTextDocument(uri));
            if (doc.languageId === 'plaintext') return current();
            if (!inTab(uri))
              await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
            const deadline = Date.now() + capMs;
            while (!signal.aborted) {
              const now = Date.now();
              if (now >= deadline) break;
              if (lastChange !== undefined && now - lastChange >= quietMs) break;
              const until = lastChange === undefined ? deadline : Math.min(deadline, lastChange + quietMs);
              await new Promise<void>((resolve) => {
                const done = () => {
                  clearTimeout(timer);
                  signal.removeEventListener('abort', done);
                  wake = undefined;
                  resolve();
                };
                const timer = setTimeout(done, Math.max(0, until - now));
                signal.addEventListener('abort', done, { once: true });
                wake = done;
              });
            }
            return current();
          } finally {
            listener.dispose();
          }
        },
      };
    },
  };
}
