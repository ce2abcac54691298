import * as vscode from 'vscode';
import type { SandboxInfo } from '../agent/host.ts';
import { sandboxTooltip } from './sandboxUi.ts';
import type { Usage } from './sessionController.ts';

// "Keel 12% · cache 87% (Σ 92%)": context used of the window, the last call's cache hit ratio and
// the session's; "· stage 2" once context pruning has kicked in.

const STAGES = ['none', 'soft trim', 'old results cleared', 'summarised', 'emergency'];

export function formatUsage(usage: Usage): { text: string; tooltip: string } {
  const pct = usage.contextWindow > 0 ? Math.round((usage.contextTokens / usage.contextWindow) * 100) : 0;
  const cache = Math.round(usage.cacheHitPct);
  const session = Math.round(usage.sessionCacheHitPct);
  const stage = usage.stage > 0 ? ` · stage ${usage.stage}` : '';
  const stageText =
    usage.stage > 0 ? `, context pruning stage ${usage.stage} (${STAGES[usage.stage] ?? 'pruned'})` : '';
  return {
    text: `$(hubot) ${pct}% · cache ${cache}% (Σ ${session}%)${stage}`,
    tooltip: `Keel — context ${usage.contextTokens.toLocaleString('en-US')} / ${usage.contextWindow.toLocaleString('en-US')} tokens (${pct}%), prompt cache hit ${cache}% last call, ${session}% this session${stageText}, cost $${usage.costUsd.toFixed(4)}. Click to open the Keel panel.`,
  };
}

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
    const formatted = formatUsage(usage);
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
