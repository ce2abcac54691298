import * as vscode from 'vscode';
import type { Host, SandboxInfo } from '../agent/host.ts';
import { createModalApprovals } from './approvals.ts';
import type { Proposals } from './editReview/proposals.ts';
import type { ReviewManager } from './editReview/reviewManager.ts';
import { createVscodeMcpPort } from './mcp.ts';
import { findRipgrep } from './ripgrep.ts';
import { type KeelSettings, readSettings } from './settings.ts';
import { createVscodeHost } from './vscodeHost.ts';

/** The settings' sandbox block as the core's sandbox settings (a custom deny list replaces the default). */
function sandboxSettingsFor(s: KeelSettings['sandbox']) {
  return {
    enabled: s.enabled,
    failIfUnavailable: s.failIfUnavailable,
    ...(s.denyRead ? { denyRead: s.denyRead } : {}),
    ...(s.allowedDomains ? { allowedDomains: s.allowedDomains } : {}),
  };
}

export interface HostProvider extends vscode.Disposable {
  /** The host of the open folders, made on first use and again after the folders change. */
  get(): Host;
  /** Fires for every host made; a listener added late hears about the current one at once. */
  onDidCreate(listener: (host: Host) => void): vscode.Disposable;
  /** The current host's sandbox tier; undefined without a folder open. */
  sandboxInfo(): SandboxInfo | undefined;
  /** "Run outside the sandbox…" was approved in the modal: that command's next approval is granted once. */
  approveOutsideOnce(command: string): void;
  ripgrepPath(): string | undefined;
  /** What the workspace may steer changed (an approval): the next get() makes the host again. */
  reset(): void;
}

export function createHostProvider(deps: {
  readonly context: vscode.ExtensionContext;
  readonly review: ReviewManager;
  readonly proposals: Proposals;
  readonly primaryRoot: () => string | undefined;
  readonly runSignal: () => AbortSignal | undefined;
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
}): HostProvider {
  let host: Host | undefined;
  let ripgrep: { path: string | undefined } | undefined;
  const created = new vscode.EventEmitter<Host>();
  const outsideApproved = new Set<string>();
  // MCP servers come from the workspace's and the user's mcp.json; the core starts them when needed.
  const mcp = createVscodeMcpPort(deps.context, deps.primaryRoot);
  const ripgrepPath = () => {
    ripgrep ??= { path: findRipgrep(vscode.env.appRoot, deps.context.extensionPath) };
    return ripgrep.path;
  };
  const get = (): Host => {
    if (host) return host;
    const made: Host = {
      ...createVscodeHost({
        review: deps.review,
        proposals: deps.proposals,
        approvals: createModalApprovals({
          policyFor: (kind) => (kind === 'other' || kind === 'mcp' ? 'ask' : readSettings().approvals[kind]),
          log: (m) => deps.log('info', m),
          consumePreApproval: (request) => {
            for (const command of outsideApproved) {
              if (!request.detail.startsWith(`${command}\n\n`)) continue;
              outsideApproved.delete(command);
              return true;
            }
            return false;
          },
        }),
        sandbox: sandboxSettingsFor(readSettings().sandbox),
        reviewMode: () => readSettings().editReview,
        runSignal: deps.runSignal,
        ...(ripgrepPath() ? { ripgrepPath: ripgrepPath() } : {}),
        log: deps.log,
        revealEdits: true,
      }),
      mcp,
    };
    host = made;
    created.fire(made);
    return made;
  };
  // Folders added or removed change the roots the path guard allows: rebuild the host lazily.
  const folders = vscode.workspace.onDidChangeWorkspaceFolders(() => {
    host = undefined;
  });
  return {
    get,
    onDidCreate(listener) {
      if (host) listener(host);
      return created.event(listener);
    },
    sandboxInfo() {
      try {
        return get().shell.sandbox?.info;
      } catch {
        return undefined;
      }
    },
    approveOutsideOnce: (command) => outsideApproved.add(command),
    reset: () => {
      host = undefined;
    },
    ripgrepPath,
    dispose() {
      folders.dispose();
      created.dispose();
    },
  };
}
