import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ApprovalsPort, DirEntry, FileStat, Host, WorkspacePort } from '../agent/host.ts';
import {
  createNodeStorage,
  createNodeWorkspace,
  ensureStateDir,
  sandboxAudit,
} from '../agent/node/nodeHost.ts';
import { createNodeShell } from '../agent/node/nodeShell.ts';
import { createSandbox } from '../agent/safety/sandbox/sandbox.ts';
import { createTrustRoom } from '../agent/trust/room.ts';
import { createVscodeDiagnostics } from './diagnostics.ts';
import { HOW_TO_APPROVE } from './workspaceTrust.ts';
import { defaultProbeCacheFile } from '../agent/safety/sandbox/probeCache.ts';
import type { SandboxSettingsInput } from '../agent/safety/sandbox/settings.ts';
import { ToolFailure } from '../agent/tools/protocol.ts';
import {
  changedMeanwhile,
  deletePath,
  findOpenDocument,
  readCurrentBytes,
  renamePath,
  sha256,
  writeContent,
} from './editReview/fileOps.ts';
import type { Proposals } from './editReview/proposals.ts';
import type { ReviewManager } from './editReview/reviewManager.ts';

// The VS Code implementation of the core's ports. Reads see the user's unsaved buffer; writes are
// WorkspaceEdits that land in the pending review; Keel's own state (.keel/) goes straight to disk.

export interface VscodeHostOptions {
  readonly review: ReviewManager;
  readonly proposals: Proposals;
  readonly approvals: ApprovalsPort;
  readonly reviewMode: () => 'afterApply' | 'beforeApply';
  /**
   * The current run's signal (the port's writeFile has none): aborted by Stop, abort and shutdown,
   * so a `beforeApply` proposal waiting for the user is rejected and the run can end.
   */
  readonly runSignal?: () => AbortSignal | undefined;
  readonly ripgrepPath?: string;
  readonly log?: Host['log'];
  /** Show an edited file so its decorations and CodeLens are visible (off in tests that don't care). */
  readonly revealEdits?: boolean;
  /** Commands run in the OS sandbox with these settings (it runs where the extension host runs). */
  readonly sandbox?: SandboxSettingsInput;
}

function notFound(p: string): Error {
  return Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), {
    code: 'ENOENT',
    path: p,
  });
}

export function workspaceRoots(): string[] {
  return (vscode.workspace.workspaceFolders ?? [])
    .filter((f) => f.uri.scheme === 'file')
    .map((f) => {
      try {
        return fs.realpathSync(f.uri.fsPath);
      } catch {
        return f.uri.fsPath;
      }
    });
}

function isInside(dir: string, p: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export function createVscodeWorkspace(
  roots: readonly string[],
  stateDir: string,
  options: VscodeHostOptions,
): WorkspacePort {
  // Keel's own files (tool output spills, memory) never go through review.
  const direct = createNodeWorkspace(roots, true);
  const own = (p: string) => isInside(stateDir, p);
  // What the core last read of each file: it reads (and hash-checks) a file right before writing
  // it, so this is the content its new bytes were computed from. writeContent re-checks it just
  // before applying, so keystrokes typed in between are never reverted.
  const served = new Map<string, string>();

  const reveal = async (p: string) => {
    if (!options.revealEdits) return;
    const doc = findOpenDocument(p) ?? (await vscode.workspace.openTextDocument(vscode.Uri.file(p)));
    await vscode.window.showTextDocument(doc, { preserveFocus: true, preview: true });
  };

  return {
    roots: direct.roots,
    async readFile(p) {
      if (own(p)) return direct.readFile(p);
      const bytes = await readCurrentBytes(p);
      if (!bytes) throw notFound(p);
      served.set(p, sha256(bytes));
      return bytes;
    },
    async stat(p): Promise<FileStat | undefined> {
      const onDisk = await direct.stat(p);
      const doc = own(p) ? undefined : findOpenDocument(p);
      if (!onDisk || !doc?.isDirty) return onDisk;
      // The buffer is the truth: its size, and "now" as mtime, since it changed after the disk did.
      const bytes = await readCurrentBytes(p);
      return {
        ...onDisk,
        size: bytes?.byteLength ?? onDisk.size,
        mtimeMs: Math.max(onDisk.mtimeMs, Date.now()),
      };
    },
    async readDirectory(p): Promise<DirEntry[]> {
      const entries = await vscode.workspace.fs.readDirectory(vscode.Uri.file(p));
      return entries.map(([name, type]) => ({
        name,
        type:
          type & vscode.FileType.SymbolicLink
            ? 'symlink'
            : type & vscode.FileType.Directory
              ? 'directory'
              : type & vscode.FileType.File
                ? 'file'
                : 'other',
      }));
    },
    async writeFile(p, content, writeOptions) {
      if (own(p)) return direct.writeFile(p, content, writeOptions);
      const before = await readCurrentBytes(p);
      const basis = served.get(p);
      served.delete(p);
      // A create must still find no file; a rewrite must find what the core read (or, if it did
      // not read through this port, what is there now).
      const expectedSha256 = before === undefined ? null : (basis ?? sha256(before));
      if (before && sha256(before) !== expectedSha256) throw changedMeanwhile(p);
      const wasPending = options.review.get(p) !== undefined;
      if (options.reviewMode() === 'beforeApply') {
        const signal = options.runSignal?.();
        const accepted = await options.proposals.propose(p, before, content, signal);
        if (!accepted && signal?.aborted) {
          throw new ToolFailure(
            'ABORTED',
            `The run was stopped while the change to ${p} waited for review; the file was not changed.`,
            'Wait for the user.',
          );
        }
        if (!accepted) {
          throw new ToolFailure(
            'DENIED_BY_USER',
            `The user rejected the proposed change to ${p}; the file was not changed.`,
            'Ask the user what they would like instead, or continue without this change.',
          );
        }
      } else {
        options.review.beforeWrite(p, before);
      }
      try {
        await writeContent(p, content, { ...writeOptions, expectedSha256 });
      } catch (error) {
        // Nothing was written: a review opened for this write would show the user's own typing.
        if (!wasPending) options.review.forget(p);
        throw error;
      } finally {
        options.review.changed();
      }
      options.review.afterWrite(p, content);
      if (options.reviewMode() === 'afterApply') await reveal(p);
    },
    async deleteFile(p) {
      if (own(p)) return direct.deleteFile(p);
      const before = await readCurrentBytes(p);
      if (!before) throw notFound(p);
      options.review.beforeDelete(p, before);
      // A document the user has open must not keep the deleted text alive as an unsaved buffer.
      await deletePath(p);
      options.review.changed();
    },
    async rename(from, to) {
      if (own(from) && own(to)) return direct.rename(from, to);
      const content = await readCurrentBytes(from);
      await fs.promises.mkdir(path.dirname(to), { recursive: true });
      await renamePath(from, to);
      options.review.afterRename(from, to, content);
    },
    isTrusted: () => vscode.workspace.isTrusted,
  };
}

export function createVscodeHost(options: VscodeHostOptions): Host {
  const roots = workspaceRoots();
  const primary = roots[0];
  if (!primary) throw new Error('Keel needs a folder open in VS Code (File → Open Folder).');
  const stateDir = path.join(primary, '.keel');
  ensureStateDir(stateDir);
  const trust = createTrustRoom({
    root: fs.realpathSync(primary),
    workspaceTrusted: vscode.workspace.isTrusted,
    howToApprove: HOW_TO_APPROVE,
  });
  const sandbox = options.sandbox
    ? createSandbox({
        settings: options.sandbox,
        roots: roots.map((r) => fs.realpathSync(r)),
        stateDir,
        trustedDomains: trust.trustedDomains(),
        approvals: options.approvals,
        audit: sandboxAudit(stateDir),
        probeCacheFile: defaultProbeCacheFile(),
      })
    : undefined;
  if (sandbox) process.once('exit', () => sandbox.dispose());
  return {
    workspace: createVscodeWorkspace(roots, stateDir, options),
    approvals: options.approvals,
    shell: createNodeShell(sandbox ? { sandbox } : {}),
    clock: { now: () => Date.now() },
    storage: createNodeStorage(),
    stateDir,
    trust,
    // Edits report the problems they introduce; Keel's own files are nobody's concern.
    diagnostics: createVscodeDiagnostics({ skip: (p) => isInside(stateDir, p) }),
    ...(options.ripgrepPath ? { ripgrepPath: options.ripgrepPath } : {}),
    ...(options.log ? { log: options.log } : {}),
  };
}
