import * as vscode from 'vscode';
import type { SandboxInfo } from '../agent/host.ts';
import { sandboxTooltip } from './sandboxUi.ts';
import type { Usage } from './sessionController.ts';
import { formatUsage } from './usage.ts';

// "Keel 12% · cache 87%": context used of the window and the last call's cache hit ratio (the
// session's ratio, the stage and the cost are in the tooltip); "· stage 2" once pruning kicked in.
// The text is built in usage.ts (plain Node, unit-tested).

export interface KeelStatusBar extends vscode.Disposable {
  update(usage: Usage): void;
  /** The sandbox tier, always in the tooltip. */
  setSandbox(info: SandboxInfo | undefined): void;
}

export function createStatusBar(openCommand: string): KeelStatusBar {
  const item = vscode.window.createStatusBarItem('keel.status', vscode.StatusBarAlignment.Right, 100);
  item.name = 'Keel';
  item.command = openCommand;
  let sandbox: SandboxInfo | undefined;
  let last: Usage | undefined;
  const update = (usage: Usage) => {
    last = usage;
    const formatted = formatUsage(usage, vscode.l10n);
    const tooltip = `${formatted.tooltip}\n${sandboxTooltip(sandbox)}`;
    item.text = sandbox?.tier === 'none' ? `$(warning) ${formatted.text}` : formatted.text;
    item.tooltip = tooltip;
    item.accessibilityInformation = { label: tooltip, role: 'button' };
  };
  update({
    contextTokens: 0,
    contextWindow: 200_000,
    cacheHitPct: 0,
    sessionCacheHitPct: 0,
    stage: 0,
    costUsd: 0,
  });
  item.show();
  return {
    update,
    setSandbox(info) {
      sandbox = info;
      if (last) update(last);
    },
    dispose: () => item.dispose(),
  };
}
