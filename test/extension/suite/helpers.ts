import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ApprovalDecision, ApprovalRequest, Host } from '../../../src/agent/host.ts';
import { createNodeStorage } from '../../../src/agent/node/nodeHost.ts';
import { createNodeShell } from '../../../src/agent/node/nodeShell.ts';
import { createReadLedger } from '../../../src/agent/safety/guards/readLedger.ts';
import { createPathGuard } from '../../../src/agent/safety/paths/pathGuard.ts';
import type { ToolContext } from '../../../src/agent/tools/protocol.ts';
import { createProposals, type Proposals } from '../../../src/extension/editReview/proposals.ts';
import {
  createReviewManager,
  type RejectionNote,
  relativeTo,
  type ReviewManager,
} from '../../../src/extension/editReview/reviewManager.ts';
import type { ReviewStore } from '../../../src/extension/editReview/reviewStore.ts';
import type { KeelApi } from '../../../src/extension/extension.ts';
import { createVscodeWorkspace, workspaceRoots } from '../../../src/extension/vscodeHost.ts';
import { type Emulator, startEmulator } from '../../emulator/server.ts';

// A VS Code host built from the real modules, with its own review state, so each test starts clean.

export interface Harness {
  readonly root: string;
  readonly dir: string;
  readonly host: Host;
  readonly review: ReviewManager;
  readonly proposals: Proposals;
  readonly rejections: RejectionNote[];
  readonly approvals: ApprovalRequest[];
  mode: 'afterApply' | 'beforeApply';
  /** The "current run" signal the host hands to proposals (abort = Stop). */
  run: AbortController;
  file(rel: string): string;
  context(): ToolContext;
  dispose(): Promise<void>;
}

let counter = 0;

export function createHarness(
  answer: ApprovalDecision = 'allow_once',
  options: { reviewStore?: ReviewStore } = {},
): Harness {
  const root = workspaceRoots()[0];
  if (!root) throw new Error('the extension tests need a workspace folder');
  const dir = path.join(root, `t${Date.now().toString(36)}${counter++}`);
  fs.mkdirSync(dir, { recursive: true });
  const stateDir = path.join(root, '.keel');
  const rejections: RejectionNote[] = [];
  const approvals: ApprovalRequest[] = [];
  const display = (p: string) => relativeTo([root], p);
  const review = createReviewManager({
    display,
    roots: () => [root],
    onRejected: (n) => rejections.push(n),
    ...(options.reviewStore ? { store: options.reviewStore } : {}),
  });
  const proposals = createProposals({ display });
  const harness: Harness = {
    root,
    dir,
    review,
    proposals,
    rejections,
    approvals,
    mode: 'afterApply',
    run: new AbortController(),
    host: undefined as unknown as Host,
    file: (rel) => path.join(dir, rel),
    context() {
      const guard = createPathGuard({ roots: [root], stateDir });
      return {
        host: harness.host,
        sessionId: 'ext-test',
        toolUseId: `tu_${counter++}`,
        signal: new AbortController().signal,
        ledger,
        guard,
        audit: () => undefined,
        update: () => undefined,
      };
    },
    async dispose() {
      await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      review.dispose();
      proposals.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  const ledger = createReadLedger();
  const workspace = createVscodeWorkspace([root], stateDir, {
    review,
    proposals,
    approvals: { ask: async () => 'allow_once' },
    reviewMode: () => harness.mode,
    runSignal: () => harness.run.signal,
  });
  Object.assign(harness, {
    host: {
      workspace,
      approvals: {
        ask: async (request: ApprovalRequest) => {
          approvals.push(request);
          return answer;
        },
      },
      shell: createNodeShell(),
      clock: { now: () => Date.now() },
      storage: createNodeStorage(),
      stateDir,
    } satisfies Host,
  });
  return harness;
}

export function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

/** The file's exact bytes on disk, as a UTF-8 string for readable assertion diffs (+ exact check). */
export function disk(p: string): string {
  const raw = fs.readFileSync(p);
  const text = raw.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(raw)) throw new Error(`${p} is not valid UTF-8`);
  return text;
}

/** Types into the document like a user would (an unsaved change in a visible editor). */
export async function typeInto(p: string, line: number, text: string): Promise<vscode.TextDocument> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(p));
  const editor = await vscode.window.showTextDocument(doc, { preview: false });
  const ok = await editor.edit((b) => b.insert(new vscode.Position(line, 0), text));
  if (!ok) throw new Error('editor.edit was refused');
  return doc;
}

export async function waitFor<T>(
  what: string,
  fn: () => T | undefined | Promise<T | undefined>,
  ms = 15_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Points the installed, activated Keel at a fresh emulator: an API key in the environment and the
 * machine-level `keel.baseUrl`. `disconnect` puts both back, ends the chat and stops the emulator.
 */
export async function connectToEmulator(): Promise<{
  emulator: Emulator;
  api: KeelApi;
  disconnect: () => Promise<void>;
}> {
  const savedKey = process.env.ANTHROPIC_API_KEY;
  const emulator = await startEmulator({ port: 0 });
  const baseUrl = (value: string | undefined) =>
    vscode.workspace.getConfiguration('keel').update('baseUrl', value, vscode.ConfigurationTarget.Global);
  process.env.ANTHROPIC_API_KEY = 'test-key';
  await baseUrl(emulator.url);
  const ext = vscode.extensions.getExtension<KeelApi>('keel-dev.keel');
  if (!ext) throw new Error('Keel (keel-dev.keel) is not installed in this VS Code');
  const api = await ext.activate();
  return {
    emulator,
    api,
    disconnect: async () => {
      await baseUrl(undefined);
      if (savedKey === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = savedKey;
      api.controller.newChat();
      await emulator.close();
    },
  };
}
