import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import type fg from 'fast-glob';
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { canonicalize } from '../safety/paths/pathGuard.ts';
import { climbsOut } from '../safety/paths/pathReadings.ts';
import { compareStrings, failure, notFound, resolvePath, runTool, inStateDir } from './fs/common.ts';
import { createIgnoreMatcher } from './fs/gitignore.ts';
import { limitOutput } from './output.ts';
import type { ToolContext, ToolDefinition, ToolResult } from './protocol.ts';
import { ok, partial } from './protocol.ts';

/** Beyond this many matches the walk stops: the pattern is too broad to be useful. */
export const GLOB_MAX_RESULTS = 10_000;

export const globInputSchema = lazy(() =>
  z.object({
    pattern: z.string().min(1),
    path: z.string().default('.'),
  }),
);
export type GlobInput = z.infer<ReturnType<typeof globInputSchema>>;

export interface GlobData {
  readonly pattern: string;
  readonly path: string;
  /** Workspace-relative paths, sorted. */
  readonly files: string[];
  readonly truncated: boolean;
}

const DESCRIPTION = `Find files by name pattern (*, **, ?, {a,b}): sorted relative paths, gitignored skipped.
Use when you know (part of) a name. Contents: Grep. Never Bash find/ls.
Example: {"pattern":"**/*.test.ts"}`;

async function glob(input: GlobInput, ctx: ToolContext): Promise<ToolResult<GlobData>> {
  const pattern = input.pattern.trim();
  // fast-glob (and micromatch/picomatch/braces under it) loads with the first Glob, not at start-up.
  const { default: fg } = await import('fast-glob');
  const base = resolvePath(ctx, input.path);
  const cwdRel = path.relative(base.root, base.path).split(path.sep).join('/');
  // Every reading of the pattern (braces expanded, extglobs, escapes, encodings, "\\") must stay below
  // the search directory. fast-glob would happily walk a static "../" out of cwd; the results filter
  // below is the second line, this refusal the first.
  if (climbsOut(pattern, { glob: true })) {
    const depth = cwdRel === '' ? 0 : cwdRel.split('/').length;
    const leavesWorkspace = climbsOut(pattern, { glob: true, depth });
    failure(
      leavesWorkspace ? 'OUTSIDE_WORKSPACE' : 'INVALID_PARAM',
      leavesWorkspace
        ? `Pattern ${JSON.stringify(pattern)} reaches outside the workspace.`
        : `Pattern ${JSON.stringify(pattern)} must stay inside the search directory.`,
      'Put the directory in "path" and keep the pattern relative, e.g. {"pattern":"**/*.ts","path":"src"}.',
    );
  }
  if (pattern.includes('\0'))
    failure('INVALID_PARAM', 'Pattern contains a NUL byte.', 'Pass a plain glob pattern.');
  const stat = await ctx.host.workspace.stat(base.path);
  if (!stat) return notFound(ctx, base.path, base.display, 'Directory');
  if (stat.type !== 'directory') {
    failure(
      'INVALID_PARAM',
      `${base.display} is a file, not a directory.`,
      `Use Read with ${JSON.stringify({ path: base.display })}, or Glob in its folder.`,
    );
  }

  // The pattern's literal leading part ("link-out/" in "link-out/*", or a whole literal name) is a
  // path like any other: through a link that leaves the workspace it is an escape, not an empty result.
  const literal: string[] = [];
  for (const segment of pattern.split('/')) {
    if (segment === '' || fg.isDynamicPattern(segment) || segment.includes('\\')) break;
    literal.push(segment);
  }
  if (literal.length > 0) {
    const target = path.join(base.path, ...literal);
    if (fs.existsSync(target) && !ctx.guard.contains(canonicalize(target))) {
      failure(
        'OUTSIDE_WORKSPACE',
        `${JSON.stringify(literal.join('/'))} in ${JSON.stringify(pattern)} leads outside the workspace through a symbolic link.`,
        'Search inside the workspace only; what lies behind links that leave it cannot be listed.',
      );
    }
  }

  // Keel's own state dir (spill files etc.) is listed as-is; everything else honours .gitignore.
  const inState = inStateDir(ctx, base.path);
  const matcher = inState ? undefined : createIgnoreMatcher(base.root);
  // fast-glob types its stream loosely; it is a node Readable (destroy() stops the walk).
  const stream = fg.stream(pattern, {
    cwd: base.path,
    dot: true,
    onlyFiles: true,
    followSymbolicLinks: false,
    suppressErrors: true,
    objectMode: true,
    ignore: matcher ? matcher.pruneGlobs(cwdRel) : ['**/.git/**'],
  }) as unknown as Readable;

  const realDirs = new Map<string, string>();
  const files: string[] = [];
  let outside = 0;
  let truncated = false;
  const onAbort = () => stream.destroy();
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    for await (const raw of stream) {
      const entry = raw as unknown as fg.Entry;
      const rel = entry.path;
      const abs = path.resolve(base.path, rel);
      // Results must stay below cwd even if the pattern found a way around the check above.
      if (!abs.startsWith(base.path + path.sep)) continue;
      const relToRoot = cwdRel === '' ? rel : `${cwdRel}/${rel}`;
      if (matcher?.isIgnored(relToRoot, false)) continue;
      // A static pattern can pass through a symlinked directory; a linked file can point anywhere.
      const dir = path.dirname(abs);
      let realDir = realDirs.get(dir);
      if (realDir === undefined) {
        realDir = fs.realpathSync(dir);
        realDirs.set(dir, realDir);
      }
      let canonical = path.join(realDir, path.basename(abs));
      if (entry.dirent.isSymbolicLink()) canonical = canonicalize(canonical);
      if (!ctx.guard.contains(canonical)) {
        outside++;
        continue;
      }
      files.push(ctx.guard.display(abs));
      if (files.length >= GLOB_MAX_RESULTS) {
        truncated = true;
        break;
      }
    }
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    stream.destroy();
  }
  if (ctx.signal.aborted) failure('ABORTED', 'The call was aborted.', 'Wait for the user.');
  files.sort(compareStrings);

  const data: GlobData = { pattern, path: base.display, files, truncated };
  const stats = { files: files.length };
  const where = base.display === '.' ? 'the workspace' : base.display;
  // Matches that lead out through a symbolic link are an escape attempt, not "nothing found".
  if (files.length === 0 && outside > 0) {
    failure(
      'OUTSIDE_WORKSPACE',
      `Every match of ${JSON.stringify(pattern)} in ${where} leads outside the workspace through a symbolic link.`,
      'Search inside the workspace only; files behind links that leave it cannot be listed.',
    );
  }
  if (files.length === 0) {
    return ok(
      data,
      `No files match ${JSON.stringify(pattern)} in ${where} (gitignored files are skipped). Try a broader pattern such as "**/*name*".`,
      stats,
    );
  }
  let text = files.join('\n');
  if (outside > 0) {
    text += `\n[${outside} match${outside === 1 ? '' : 'es'} behind symbolic links leading outside the workspace left out.]`;
  }
  if (truncated) {
    text += `\n[Stopped after ${GLOB_MAX_RESULTS} files; the list is incomplete. Use a narrower pattern or path.]`;
  }
  const limited = limitOutput(text, { host: ctx.host, label: 'glob', toolUseId: ctx.toolUseId });
  return truncated || limited.truncated ? partial(data, limited.text, stats) : ok(data, limited.text, stats);
}

export function createGlobTool(): ToolDefinition<GlobInput, GlobData> {
  return {
    name: 'Glob',
    description: DESCRIPTION,
    get inputSchema() {
      return globInputSchema();
    },
    readOnly: true,
    concurrentRead: true,
    execute: (input, ctx) => runTool(ctx, () => glob(input, ctx)),
  };
}
