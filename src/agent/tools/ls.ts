import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import type { DirEntry } from '../host.ts';
import { createIgnoreMatcher, type IgnoreMatcher } from './fs/gitignore.ts';
import {
  compareStrings,
  failure,
  formatSize,
  notFound,
  resolvePath,
  runTool,
  inStateDir,
} from './fs/common.ts';
import { limitOutput } from './output.ts';
import type { ToolContext, ToolDefinition, ToolResult } from './protocol.ts';
import { ok, partial } from './protocol.ts';

export const LS_MAX_ENTRIES = 1000;

export const lsInputSchema = lazy(() =>
  z.object({
    path: z.string().default('.'),
    depth: z.number().int().min(1).max(5).default(1),
  }),
);
export type LsInput = z.infer<ReturnType<typeof lsInputSchema>>;

export interface LsEntry {
  /** Workspace-relative path. */
  readonly path: string;
  readonly type: 'file' | 'directory' | 'symlink' | 'other';
  readonly size?: number;
  readonly ignored?: boolean;
  /** For symlinks: where it points (workspace-relative), or why it is not followed. */
  readonly target?: string;
}

export interface LsData {
  readonly path: string;
  readonly entries: LsEntry[];
  readonly truncated: boolean;
}

const DESCRIPTION = `List a directory: folders ("/") first, then files with sizes; gitignored ones marked.
Use to get your bearings. Names across the tree: Glob; contents: Grep. Never Bash ls/find/tree.
Example: {"path":"src","depth":2}`;

interface Walk {
  readonly ctx: ToolContext;
  readonly matcher: IgnoreMatcher | undefined;
  readonly root: string;
  readonly maxDepth: number;
  readonly entries: LsEntry[];
  readonly lines: string[];
  truncated: boolean;
}

const TYPE_ORDER: Record<DirEntry['type'], number> = { directory: 0, symlink: 1, file: 1, other: 1 };

async function describeSymlink(ctx: ToolContext, abs: string): Promise<{ target: string; isDir: boolean }> {
  const guarded = ctx.guard.resolve(abs);
  if (!guarded.ok) return { target: '(points outside the workspace; not followed)', isDir: false };
  const stat = await ctx.host.workspace.stat(guarded.path);
  if (!stat) return { target: '(broken link)', isDir: false };
  return { target: guarded.display, isDir: stat.type === 'directory' };
}

/** A directory seen in a listing may have been swapped for a link since: never descend through one. */
function stillInside(ctx: ToolContext, dir: string): boolean {
  const again = ctx.guard.resolve(dir);
  return again.ok && again.path === dir;
}

async function walk(w: Walk, dir: string, depth: number): Promise<void> {
  const listed = await w.ctx.host.workspace.readDirectory(dir);
  listed.sort((a, b) => TYPE_ORDER[a.type] - TYPE_ORDER[b.type] || compareStrings(a.name, b.name));
  const indent = '  '.repeat(depth - 1);
  for (const item of listed) {
    if (w.ctx.signal.aborted) failure('ABORTED', 'The call was aborted.', 'Wait for the user.');
    if (w.entries.length >= LS_MAX_ENTRIES) {
      w.truncated = true;
      return;
    }
    const abs = path.join(dir, item.name);
    const display = w.ctx.guard.display(abs);
    const rel = path.relative(w.root, abs).split(path.sep).join('/');
    const isGit = item.name === '.git';
    const ignored = isGit || (w.matcher?.isIgnored(rel, item.type === 'directory') ?? false);
    const mark = ignored ? (isGit ? '  (git metadata)' : '  (gitignored)') : '';
    if (item.type === 'directory') {
      w.entries.push({ path: display, type: 'directory', ...(ignored ? { ignored } : {}) });
      w.lines.push(`${indent}${item.name}/${mark}`);
      if (!ignored && depth < w.maxDepth && stillInside(w.ctx, abs)) await walk(w, abs, depth + 1);
    } else if (item.type === 'symlink') {
      const { target, isDir } = await describeSymlink(w.ctx, abs);
      w.entries.push({ path: display, type: 'symlink', target, ...(ignored ? { ignored } : {}) });
      // Links are shown, never expanded: no cycles, and no walking out through them.
      w.lines.push(`${indent}${item.name}${isDir ? '/' : ''} -> ${target}${mark}`);
    } else {
      const stat = item.type === 'file' ? await w.ctx.host.workspace.stat(abs) : undefined;
      const size = stat?.size;
      w.entries.push({
        path: display,
        type: item.type,
        ...(size !== undefined ? { size } : {}),
        ...(ignored ? { ignored } : {}),
      });
      w.lines.push(`${indent}${item.name}${size !== undefined ? `  (${formatSize(size)})` : ''}${mark}`);
    }
  }
}

async function list(input: LsInput, ctx: ToolContext): Promise<ToolResult<LsData>> {
  const target = resolvePath(ctx, input.path);
  const stat = await ctx.host.workspace.stat(target.path);
  if (!stat) return notFound(ctx, target.path, target.display, 'Directory');
  if (stat.type !== 'directory') {
    failure(
      'INVALID_PARAM',
      `${target.display} is a file, not a directory.`,
      `Use Read with ${JSON.stringify({ path: target.display })}.`,
    );
  }
  // Keel's own state dir is not under the workspace's ignore rules: listing it must show it.
  const inState = inStateDir(ctx, target.path);
  const w: Walk = {
    ctx,
    matcher: inState ? undefined : createIgnoreMatcher(target.root),
    root: target.root,
    maxDepth: input.depth,
    entries: [],
    lines: [],
    truncated: false,
  };
  await walk(w, target.path, 1);
  const data: LsData = { path: target.display, entries: w.entries, truncated: w.truncated };
  const stats = { entries: w.entries.length };
  if (w.entries.length === 0) return ok(data, `(Directory ${target.display} is empty.)`, stats);
  const header = `${target.display === '.' ? '(workspace root)' : `${target.display}/`}`;
  let text = `${header}\n${w.lines.join('\n')}`;
  if (w.truncated) {
    text += `\n[Listing stopped at ${LS_MAX_ENTRIES} entries. LS a subdirectory, lower depth, or use Glob.]`;
  }
  const limited = limitOutput(text, { host: ctx.host, label: 'ls', toolUseId: ctx.toolUseId });
  return w.truncated || limited.truncated
    ? partial(data, limited.text, stats)
    : ok(data, limited.text, stats);
}

export function createLsTool(): ToolDefinition<LsInput, LsData> {
  return {
    name: 'LS',
    description: DESCRIPTION,
    get inputSchema() {
      return lsInputSchema();
    },
    readOnly: true,
    concurrentRead: true,
    execute: (input, ctx) => runTool(ctx, () => list(input, ctx)),
  };
}
