import * as path from 'node:path';
import type { AgentEventBody } from '../events.ts';
import type { Host } from '../host.ts';
import type { AuditEntry } from '../safety/audit.ts';
import { createNodeWorkspace } from '../node/nodeHost.ts';
import { refusal } from '../safety/approvals.ts';
import { createPathGuard, type PathGuard } from '../safety/paths/pathGuard.ts';
import { createWriterTree, type WriterTree } from './worktree.ts';
import { applyWriter, mergeWriter, shownDiff } from './writerMerge.ts';

// Mode "writer": a sub-agent that edits and runs commands in its own tree (worktree.ts), so writers
// started in parallel never write the same files. Its tools are rooted there (the path guard, the
// workspace port, the commands' working folder and — with the OS sandbox — the only writable folder);
// the user's tree is read and written only by the merge after it finished, one writer at a time.

export interface WriterSession {
  readonly tree: WriterTree;
  /** The writer's host: workspace, shell and state rooted in its tree. */
  readonly host: Host;
  readonly guard: PathGuard;
  /** Merges and (after approval) applies the result; the text and data for the parent's Task result. */
  merge(
    signal: AbortSignal,
    audit: (entry: AuditEntry) => void,
  ): Promise<{ text: string; data: Record<string, unknown> }>;
  dispose(): Promise<void>;
}

export interface WriterOptions {
  /** The parent's host (its workspace is the user's tree; its approvals ask the user). */
  readonly host: Host;
  /** The parent's guard: where the merge may write. */
  readonly guard: PathGuard;
  readonly agentId: string;
  readonly description: string;
  readonly emit: (body: AgentEventBody) => void;
  /** Serializes merges across the session's writers. */
  readonly exclusive: <T>(work: () => Promise<T>) => Promise<T>;
}

export async function startWriter(childHost: Host, options: WriterOptions): Promise<WriterSession> {
  const userRoot = options.host.workspace.roots[0] ?? '';
  const tree = await createWriterTree(userRoot);
  const workspace = createNodeWorkspace([tree.root]);
  const root = workspace.roots[0]!;
  const stateDir = path.join(tree.dir, 'state');
  const { diagnostics: _diagnostics, mcp: _mcp, ...rest } = childHost;
  const host: Host = {
    ...rest,
    workspace,
    stateDir,
    shell: {
      ...childHost.shell,
      // With the OS sandbox, the writer's tree is the only place its commands can write.
      run: (run) => childHost.shell.run({ ...run, writableRoots: [root] }),
    },
  };
  const guard = createPathGuard({ roots: [root], stateDir });
  const label = `sub-agent "${options.description}"`;
  return {
    tree,
    host,
    guard,
    dispose: () => tree.remove(),
    merge: (signal, audit) =>
      options.exclusive(async () => {
        const result = await mergeWriter(tree, options.host, options.guard, label);
        const patchFile = path.join(options.host.stateDir, 'writers', `${options.agentId}.patch`);
        const shownPatch = path.relative(userRoot, patchFile);
        if (result.patch) options.host.storage.writeText(patchFile, result.patch);
        const changed = result.files.map((f) => f.rel);
        const conflicts = result.files.filter((f) => f.conflict);
        const data = (applied: boolean) => ({
          worktree_files_changed: changed,
          applied,
          conflicts: conflicts.map((f) => ({ path: f.rel, why: f.conflict })),
          ...(result.patch ? { patch: shownPatch } : {}),
        });
        if (result.files.length === 0) {
          return {
            text: result.patch
              ? 'Its changes are already in the workspace (nothing left to merge).'
              : 'It changed no files.',
            data: data(false),
          };
        }
        const diff = shownDiff(result.files);
        if (conflicts.length > 0) {
          const list = conflicts.map((f) => `- ${f.rel}: ${f.conflict}`).join('\n');
          options.emit({
            type: 'notice',
            level: 'warn',
            text: `${label}: its changes conflict with the workspace and were NOT applied:\n${list}\n${diff}whole change: ${shownPatch}`,
          });
          return {
            text: `Its changes were NOT applied: they conflict with the workspace (nothing was resolved automatically).\n${list}\nThe whole change is saved in ${shownPatch}. Merge view:\n${diff}`,
            data: data(false),
          };
        }
        const files = `${result.files.length} file(s): ${changed.join(', ')}`;
        const guarded = result.files.filter((f) => f.protectedWhy);
        const warning = guarded.length
          ? ` — protected: ${guarded.map((f) => `${f.rel} (${f.protectedWhy})`).join(', ')}`
          : '';
        const decision = await options.host.approvals.ask(
          {
            kind: 'other',
            title: `Apply ${label}'s changes to ${files}${warning}`,
            detail: diff,
            risk: guarded.length ? 'high' : 'medium',
            sessionKey: 'subagent-writer-merge',
            message: {
              id: 'subagent_merge',
              agent: label,
              files: changed,
              protected: guarded.map((f) => ({ path: f.rel, why: f.protectedWhy ?? '' })),
              diff,
            },
          },
          signal,
        );
        if (decision === 'deny') {
          const why = refusal(options.host.approvals, `applying ${label}'s changes`);
          options.emit({
            type: 'notice',
            level: 'warn',
            text: `${label}: changes to ${files} not applied (${why}); saved in ${shownPatch}:\n${diff}`,
          });
          return {
            text: `Its changes were NOT applied: ${why} The workspace is unchanged; the change is saved in ${shownPatch}.\n${diff}`,
            data: data(false),
          };
        }
        await applyWriter(options.host, options.guard, result.files);
        for (const f of result.files)
          audit({
            type: 'file_change',
            path: f.rel,
            change: f.kind,
            via: 'writer_merge',
            agent: options.agentId,
          });
        options.emit({ type: 'notice', level: 'info', text: `${label}: merged into ${files}\n${diff}` });
        return { text: `Its changes were merged into the workspace (${files}):\n${diff}`, data: data(true) };
      }),
  };
}
