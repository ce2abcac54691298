import * as fs from 'node:fs';
import { isKeelSessionLog } from '../agent/trust/ledger.ts';
import * as path from 'node:path';
import {
  applyRestore,
  checkpointStats,
  ForkedEarlierError,
  planRestore,
  planUndo,
  RestoreError,
  type RestoreItem,
  type RestorePlan,
} from '../agent/checkpoints/index.ts';
import type { SkippedRecord } from '../agent/checkpoints/store.ts';
import { createNodeStorage } from '../agent/node/nodeHost.ts';
import { forkSession } from '../agent/session/fork.ts';
import type { RestoreArgs } from './args.ts';

// `keel restore`: per-prompt checkpoints back to disk. Exit 0 when everything planned was (or, with
// --dry-run, would be) restored; 1 when a conflict or a file without a saved copy was left alone, or
// when a recorded path was refused (outside the workspace, through a symlink) or a record was skipped.

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function line(item: RestoreItem, applied: boolean | undefined): string {
  const verb =
    item.status === 'refused'
      ? 'REFUSED '
      : item.status === 'conflict'
        ? applied
          ? 'FORCED  '
          : 'CONFLICT'
        : item.status === 'unrecoverable'
          ? 'NO COPY '
          : item.action === 'none'
            ? 'same    '
            : item.action === 'delete'
              ? 'remove  '
              : 'restore ';
  return `  ${verb} ${item.path} — ${item.reason}`;
}

function skippedLine(s: SkippedRecord): string {
  return `  SKIPPED  ${s.path ?? `(changes.jsonl line ${s.line})`} — not a valid record (line ${s.line}, ${s.reason}); nothing written`;
}

function jsonItem(item: RestoreItem, applied: boolean) {
  return {
    path: item.path,
    action: item.action,
    status: item.status,
    reason: item.reason,
    prompts: item.prompts,
    applied,
  };
}

export function runRestore(
  args: RestoreArgs,
  workspace: string,
  now: () => number,
  extraRoots: readonly string[] = [],
): number {
  const stateDir = path.join(workspace, '.keel');
  const out = (text: string) => process.stdout.write(`${text}\n`);
  if (args.stats) {
    const stats = checkpointStats(stateDir);
    if (args.json) out(JSON.stringify(stats));
    else {
      out(
        `Checkpoints in ${stats.dir}: ${formatSize(stats.totalBytes)} in ${stats.sessions.length} session(s)`,
      );
      for (const s of stats.sessions)
        out(
          `  ${s.sessionId}  ${formatSize(s.bytes)}  ${s.prompts} prompt(s), ${s.changes} change(s), ${s.blobs} saved copies`,
        );
    }
    return 0;
  }
  const sessionId = args.sessionId!;
  // Checkpoints of a session Keel did not create here are the repository's: restore would write
  // content it chose into the user's files.
  const logOf = path.join(stateDir, 'sessions', `${sessionId}.jsonl`);
  const recorded = fs.existsSync(logOf) || fs.existsSync(path.join(stateDir, 'checkpoints', sessionId));
  if (recorded && !isKeelSessionLog(logOf)) {
    process.stderr.write(
      `keel: session ${sessionId} was not created by Keel on this machine (its log or checkpoints came with the repository); nothing restored.\n`,
    );
    return 1;
  }
  let plan: RestorePlan;
  try {
    plan = args.undo
      ? planUndo({ stateDir, root: workspace, extraRoots, sessionId })
      : planRestore({ stateDir, root: workspace, extraRoots, sessionId, beforePrompt: args.beforePrompt! });
  } catch (error) {
    // A chat that never changed a file has no checkpoints, and can still be forked.
    const forkedEarlier = error instanceof ForkedEarlierError;
    if (
      !args.fork ||
      !(error instanceof RestoreError) ||
      !(forkedEarlier || /^No checkpoints/.test(error.message))
    )
      throw error;
    // A prompt from before this session was itself forked: its files are the parent's to restore.
    plan = {
      sessionId,
      beforePrompt: args.beforePrompt!,
      items: [],
      notes: forkedEarlier ? [error.message] : [],
      skipped: [],
    };
  }
  const result = args.dryRun
    ? undefined
    : applyRestore(plan, {
        stateDir,
        root: workspace,
        extraRoots,
        force: args.force,
        now,
        ...(args.undo ? { by: 'undo' } : {}),
      });
  const applied = (i: number) => result?.applied[i]?.applied ?? false;
  // What happened, where it differs from the plan: a path refused at write time is reported as such.
  const items: RestoreItem[] = result?.applied ?? plan.items;
  const conflicts = items.filter((i) => i.status === 'conflict');
  const unrecoverable = items.filter((i) => i.status === 'unrecoverable');
  const refused = items.filter((i) => i.status === 'refused');
  const blocked =
    (args.force ? 0 : conflicts.length) + unrecoverable.length + refused.length + plan.skipped.length;
  // The conversation goes on from before that prompt in a new session; this one's log is only read.
  const fork =
    args.fork && !args.dryRun
      ? forkSession({
          stateDir,
          storage: createNodeStorage(),
          sessionId,
          beforePrompt: args.beforePrompt!,
          now: now(),
        })
      : undefined;
  if (args.json) {
    out(
      JSON.stringify({
        session: sessionId,
        mode: args.undo ? 'undo' : 'restore',
        beforePrompt: args.undo ? null : args.beforePrompt,
        dryRun: args.dryRun,
        files: items.map((item, i) => jsonItem(item, applied(i))),
        conflicts: conflicts.map((c) => c.path),
        unrecoverable: unrecoverable.map((c) => c.path),
        refused: refused.map((c) => c.path),
        skipped: plan.skipped,
        notes: plan.notes,
        ...(fork ? { fork: { session: fork.id, text: fork.text, mentions: fork.mentions } } : {}),
      }),
    );
  } else {
    const what = args.undo ? 'Undo of the last restore' : `Restore to before prompt ${args.beforePrompt}`;
    out(`${what} in session ${sessionId}${args.dryRun ? ' (dry run: nothing written)' : ''}:`);
    if (items.length === 0 && plan.skipped.length === 0)
      out('  nothing to restore: Keel changed no file at or after that prompt.');
    items.forEach((item, i) => {
      out(line(item, applied(i)));
    });
    for (const s of plan.skipped) out(skippedLine(s));
    if (conflicts.length > 0 && !args.force)
      process.stderr.write(
        `keel: ${conflicts.length} file(s) changed since Keel left them were NOT touched; --force overwrites them.\n`,
      );
    if (unrecoverable.length > 0)
      process.stderr.write(
        `keel: ${unrecoverable.length} file(s) have no saved copy and were left as they are.\n`,
      );
    if (refused.length > 0)
      process.stderr.write(
        `keel: ${refused.length} file(s) were refused (outside the workspace, or a symlink on the way) and nothing was written there.\n`,
      );
    if (plan.skipped.length > 0)
      process.stderr.write(
        `keel: ${plan.skipped.length} recorded change(s) were skipped: not valid checkpoint records (a path outside the workspace, or damaged).\n`,
      );
    for (const note of plan.notes) process.stderr.write(`keel: ${note}\n`);
    if (args.fork && args.dryRun)
      out(`  (with --fork: a new session would start from before prompt ${args.beforePrompt})`);
    if (fork) {
      out(
        `Forked: new session ${fork.id} starts from before prompt ${args.beforePrompt} (${sessionId} is kept).`,
      );
      out(`Prompt ${args.beforePrompt} was: ${fork.text}`);
      out(`Continue with: keel run --resume ${fork.id} "EDITED PROMPT"`);
    }
    if (!args.dryRun && !args.undo && result?.applied.some((a) => a.applied))
      process.stderr.write(`keel: undo this with: keel restore ${sessionId} --undo\n`);
  }
  return blocked > 0 ? 1 : 0;
}
