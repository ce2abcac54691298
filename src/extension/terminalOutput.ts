import * as vscode from 'vscode';
import type { TerminalOutput } from '../agent/context/editorMentions.ts';

// `@terminal`: the output of the active terminal's last command, through the stable shell-integration
// API. `execution.read()` streams only what is written after it is first called, so the recorder
// starts reading every command as it starts (from Keel's activation on) and keeps, per terminal,
// the last command's output, bounded while it is read (a runaway command cannot fill memory).

/** Raw characters kept per command while reading (the tail; the reminder trims further). */
export const MAX_RECORDED_CHARS = 64_000;

interface Recorded {
  command?: string;
  cwd?: string;
  exitCode?: number;
  output: string;
  running: boolean;
}

export interface TerminalRecorder extends vscode.Disposable {
  /** The active terminal's last command (or why there is none). */
  lastOutput(): TerminalOutput | { unavailable: string };
}

export function createTerminalRecorder(): TerminalRecorder {
  const last = new WeakMap<vscode.Terminal, { execution: vscode.TerminalShellExecution; rec: Recorded }>();
  const record = (terminal: vscode.Terminal, execution: vscode.TerminalShellExecution) => {
    const rec: Recorded = {
      output: '',
      running: true,
      ...(execution.commandLine.value ? { command: execution.commandLine.value } : {}),
      ...(execution.cwd?.scheme === 'file' ? { cwd: execution.cwd.fsPath } : {}),
    };
    last.set(terminal, { execution, rec });
    void (async () => {
      try {
        for await (const data of execution.read()) {
          rec.output += data;
          if (rec.output.length > MAX_RECORDED_CHARS * 2) rec.output = rec.output.slice(-MAX_RECORDED_CHARS);
        }
      } catch {
        // The terminal went away while reading: what was read stays.
      }
      if (rec.output.length > MAX_RECORDED_CHARS) rec.output = rec.output.slice(-MAX_RECORDED_CHARS);
    })();
  };
  const disposables = [
    vscode.window.onDidStartTerminalShellExecution((e) => record(e.terminal, e.execution)),
    vscode.window.onDidEndTerminalShellExecution((e) => {
      const entry = last.get(e.terminal);
      if (entry?.execution !== e.execution) return;
      entry.rec.running = false;
      if (e.exitCode !== undefined) entry.rec.exitCode = e.exitCode;
      // The command line is sometimes known only at the end.
      if (!entry.rec.command && e.execution.commandLine.value)
        entry.rec.command = e.execution.commandLine.value;
    }),
  ];
  return {
    lastOutput() {
      const terminal = vscode.window.activeTerminal;
      if (!terminal) return { unavailable: 'no terminal is open' };
      const entry = last.get(terminal);
      if (!entry) {
        return {
          unavailable: terminal.shellIntegration
            ? `no command has run in the terminal "${terminal.name}" since Keel started; run it again and resend`
            : `the terminal "${terminal.name}" has no shell integration, so its output cannot be read (VS Code setting terminal.integrated.shellIntegration.enabled)`,
        };
      }
      const { rec } = entry;
      return {
        terminal: terminal.name,
        output: rec.output,
        ...(rec.command ? { command: rec.command } : {}),
        ...(rec.cwd ? { cwd: rec.cwd } : {}),
        ...(rec.exitCode !== undefined ? { exitCode: rec.exitCode } : {}),
        ...(rec.running ? { running: true } : {}),
      };
    },
    dispose() {
      for (const d of disposables) d.dispose();
    },
  };
}
