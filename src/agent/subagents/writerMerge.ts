import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Host } from '../host.ts';
import type { PathGuard } from '../safety/paths/pathGuard.ts';
import { classifyStatic } from '../safety/paths/protectedPaths.ts';
import { createIgnoreMatcher } from '../tools/fs/gitignore.ts';
import { buildDiff } from '../tools/editing/diff.ts';
import { merge3 } from './merge3.ts';
import { listTree, type WriterTree } from './worktree.ts';

// A finished writer's result, brought back to the user's tree as one reviewable change. Each changed
// file is merged three ways — the snapshot the writer started from, the user's file as it is NOW
// (another writer's merged result, the user's own typing), the writer's file — so parallel writers'
// edits to different parts of one file both arrive. Nothing is written until the host's approval
// (the CLI asks on the terminal, or --approve decides; VS Code's per-hunk review follows the write),
// and a result with any conflict is reported and left unapplied, never resolved by guessing. Either
// way the writer's whole change is kept as a patch under `.keel/writers/`.

const MAX_FILE_BYTES = 8 * 1024 * 1024;
const MAX_SHOWN_DIFF = 6000;

export interface FileMerge {
  readonly rel: string;
  readonly kind: 'modify' | 'create' | 'delete';
  /** The bytes to write (absent for a delete). */
  readonly content?: Uint8Array;
  readonly mode?: number;
  /** Why it cannot be applied (a conflict); absent when it merged cleanly. */
  readonly conflict?: string;
  /** A protected file (a lock file, secrets): named in the approval. */
  readonly protectedWhy?: string;
  /** current → merged, for the review (or the conflict with its markers). */
  readonly diff: string;
}

export interface WriterResult {
  /** The writer's change against its snapshot, as a unified diff (what is saved as the patch). */
  readonly patch: string;
  readonly files: readonly FileMerge[];
}

type Entry = { bytes: Uint8Array; mode: number; huge: boolean } | { link: string };

function readEntry(p: string): Entry | undefined {
  const stat = fs.lstatSync(p, { throwIfNoEntry: false });
  if (!stat) return undefined;
  if (stat.isSymbolicLink()) return { link: fs.readlinkSync(p) };
  if (!stat.isFile()) return undefined;
  return { bytes: fs.readFileSync(p), mode: stat.mode & 0o777, huge: stat.size > MAX_FILE_BYTES };
}

const decoder = new TextDecoder('utf-8', { fatal: true });
function text(bytes: Uint8Array | undefined): string | undefined {
  if (!bytes) return '';
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

const same = (a: Uint8Array | undefined, b: Uint8Array | undefined) =>
  a === b || (a !== undefined && b !== undefined && Buffer.from(a).equals(Buffer.from(b)));

function sameEntry(a: Entry | undefined, b: Entry | undefined): boolean {
  if (!a || !b) return a === b;
  if ('link' in a || 'link' in b) return 'link' in a && 'link' in b && a.link === b.link;
  return a.mode === b.mode && same(a.bytes, b.bytes);
}

/** Relative paths the writer added, changed or removed (links and huge files are reported as such). */
function changedPaths(tree: WriterTree): string[] {
  const ignore = createIgnoreMatcher(tree.root);
  // Folders that held snapshot files are always walked (a tracked file in an ignored folder).
  const held = new Set<string>();
  for (const rel of tree.files) {
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) held.add(parts.slice(0, i).join('/'));
  }
  const now = listTree(
    tree.root,
    (rel) => !held.has(rel) && (rel.split('/').pop() === 'node_modules' || ignore.isIgnored(rel, true)),
  );
  const out = new Set<string>();
  for (const rel of now) {
    if (!tree.files.has(rel) && ignore.isIgnored(rel, false)) continue;
    if (!sameEntry(readEntry(path.join(tree.baseRoot, rel)), readEntry(path.join(tree.root, rel))))
      out.add(rel);
  }
  for (const rel of tree.files)
    if (!fs.lstatSync(path.join(tree.root, rel), { throwIfNoEntry: false })) out.add(rel);
  return [...out].sort();
}

/** Does `rel` go through a link in `root` (a folder the writer replaced by a link)? */
function linkOnTheWay(root: string, rel: string): boolean {
  let dir = root;
  for (const part of rel.split('/').slice(0, -1)) {
    dir = path.join(dir, part);
    const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
    if (!stat) return false;
    if (!stat.isDirectory()) return true;
  }
  return false;
}

async function currentOf(host: Host, abs: string): Promise<{ bytes?: Uint8Array; mode?: number }> {
  const stat = await host.workspace.stat(abs);
  if (!stat) return {};
  if (stat.type !== 'file') throw new Error('not a regular file');
  return {
    bytes: await host.workspace.readFile(abs),
    ...(stat.mode !== undefined ? { mode: stat.mode } : {}),
  };
}

/** The writer's change, merged file by file against the user's current files (read, not written). */
export async function mergeWriter(
  tree: WriterTree,
  host: Host,
  guard: PathGuard,
  label: string,
): Promise<WriterResult> {
  const files: FileMerge[] = [];
  const patch: string[] = [];
  for (const rel of changedPaths(tree)) {
    if (linkOnTheWay(tree.root, rel)) {
      files.push({
        rel,
        kind: 'modify',
        conflict: 'a folder on its path was replaced by a link: not merged back',
        diff: '',
      });
      continue;
    }
    const baseEntry = readEntry(path.join(tree.baseRoot, rel));
    const mineEntry = readEntry(path.join(tree.root, rel));
    const conflict = (why: string, diff = ''): FileMerge => ({ rel, kind: 'modify', conflict: why, diff });
    if ((baseEntry && 'link' in baseEntry) || (mineEntry && 'link' in mineEntry)) {
      files.push(conflict('a symbolic link was added, changed or removed: links are not merged back'));
      continue;
    }
    if (baseEntry?.huge || mineEntry?.huge) {
      files.push(conflict(`larger than ${MAX_FILE_BYTES / 1024 / 1024} MB: not merged back`));
      continue;
    }
    const base = baseEntry?.bytes;
    const mine = mineEntry?.bytes;
    patch.push(buildDiff(rel, text(base) ?? '(binary)\n', text(mine) ?? '(binary, changed)\n').diff);
    const target = guard.resolve(rel);
    if (!target.ok) {
      files.push(conflict(`its place in the workspace is refused: ${target.error.message}`));
      continue;
    }
    const verdict = classifyStatic(target.path, { roots: guard.roots, stateDir: guard.stateDir });
    if (verdict?.protected && (verdict.reason === 'vcs' || verdict.reason === 'keel_state')) {
      files.push(conflict(`${verdict.detail}: never merged back`));
      continue;
    }
    const protectedWhy = verdict?.protected ? verdict.detail : undefined;
    let current: Uint8Array | undefined;
    let currentMode: number | undefined;
    try {
      ({ bytes: current, mode: currentMode } = await currentOf(host, target.path));
    } catch (error) {
      files.push(conflict(`the workspace's file cannot be read: ${(error as Error).message}`));
      continue;
    }
    const kind: FileMerge['kind'] = mine === undefined ? 'delete' : base === undefined ? 'create' : 'modify';
    // A changed file keeps the user's mode; a new one gets the writer's, without group/other write.
    const mode = base === undefined ? (mineEntry?.mode ?? 0o644) & 0o755 : currentMode;
    const show = (after: string) => buildDiff(rel, text(current) ?? '', after).diff;
    if (same(current, mine)) continue; // already so (the user or another writer made the same change)
    if (same(current, base)) {
      files.push({
        rel,
        kind,
        ...(mine ? { content: mine } : {}),
        ...(mode !== undefined ? { mode } : {}),
        ...(protectedWhy ? { protectedWhy } : {}),
        diff: show(text(mine) ?? '(binary)\n'),
      });
      continue;
    }
    const [b, c, m] = [text(base), text(current), text(mine)];
    if (
      base === undefined ||
      current === undefined ||
      mine === undefined ||
      b === undefined ||
      c === undefined ||
      m === undefined
    ) {
      files.push(
        conflict(
          current === undefined
            ? 'the workspace no longer has this file'
            : base === undefined
              ? 'the workspace made a file of this name meanwhile'
              : mine === undefined
                ? 'the sub-agent deleted it, but it changed in the workspace meanwhile'
                : 'binary, and changed in the workspace meanwhile',
        ),
      );
      continue;
    }
    const merged = merge3(b, c, m, { ours: 'workspace', theirs: label });
    if (merged.conflicts > 0) {
      files.push(
        conflict(
          `${merged.conflicts} conflicting region(s): the same lines changed in the workspace meanwhile`,
          show(merged.text),
        ),
      );
      continue;
    }
    files.push({
      rel,
      kind,
      content: new TextEncoder().encode(merged.text),
      ...(mode !== undefined ? { mode } : {}),
      ...(protectedWhy ? { protectedWhy } : {}),
      diff: show(merged.text),
    });
  }
  return { patch: patch.join(''), files };
}

export function shownDiff(files: readonly FileMerge[]): string {
  const all = files.map((f) => (f.kind === 'delete' ? `--- a/${f.rel}\n(deleted)\n` : f.diff)).join('');
  return all.length <= MAX_SHOWN_DIFF
    ? all
    : `${all.slice(0, MAX_SHOWN_DIFF)}\n[… diff cut; the whole change is in the patch]\n`;
}

/** Writes a clean result into the user's tree through the host (checkpoints, the editor's review). */
export async function applyWriter(host: Host, guard: PathGuard, files: readonly FileMerge[]): Promise<void> {
  for (const f of files) {
    const target = guard.resolve(f.rel);
    if (!target.ok) throw new Error(target.error.message);
    if (f.kind === 'delete') await host.workspace.deleteFile(target.path);
    else
      await host.workspace.writeFile(target.path, f.content!, f.mode !== undefined ? { mode: f.mode } : {});
  }
}
