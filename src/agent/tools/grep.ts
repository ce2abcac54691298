import { isUntrustedPath, wrapUntrusted } from '../safety/untrusted.ts';
import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { climbsOut } from '../safety/paths/pathReadings.ts';
import {
  clipLine,
  compareStrings,
  failure,
  notFound,
  resolvePath,
  runTool,
  inStateDir,
} from './fs/common.ts';
import { type RgFile, type RgRun, runRipgrep } from './fs/ripgrep.ts';
import { byMtimeNewestFirst, scanGrep } from './grepScan.ts';
import { limitOutput } from './output.ts';
import type { ToolContext, ToolDefinition, ToolResult } from './protocol.ts';
import { ok, partial } from './protocol.ts';

/** Content mode stops collecting after this many matching lines (the model can't use more). */
export const GREP_MAX_MATCH_LINES = 20_000;
export const GREP_MAX_LINE_CHARS = 500;
export const GREP_TIMEOUT_MS = 60_000;
/** Of a huge (minified) line only this much is decoded; far more than the GREP_MAX_LINE_CHARS shown. */
const LONG_LINE_KEEP_BYTES = 2048;

export const grepInputSchema = lazy(() =>
  z.object({
    pattern: z.string().min(1),
    path: z.string().default('.'),
    glob: z.string().optional().describe('e.g. "*.ts"'),
    case_insensitive: z.boolean().default(false),
    output_mode: z.enum(['files_with_matches', 'content', 'count']).default('files_with_matches'),
    context: z.number().int().min(0).max(20).optional(),
    multiline: z.boolean().default(false),
    head_limit: z.number().int().min(1).max(100_000).optional(),
  }),
);
export type GrepInput = z.infer<ReturnType<typeof grepInputSchema>>;

export interface GrepLine {
  readonly path: string;
  readonly line: number;
  readonly text: string;
  /** false for context lines. */
  readonly match: boolean;
}

export interface GrepData {
  readonly pattern: string;
  readonly path: string;
  readonly mode: GrepInput['output_mode'];
  /** Files with at least one match, newest first (mtime), then by name (before head_limit). */
  readonly files: string[];
  /** content mode: matching (and context) lines, in file then line order (after head_limit). */
  readonly lines?: GrepLine[];
  /** count mode: matching lines per file (after head_limit). */
  readonly counts?: Array<{ readonly path: string; readonly count: number }>;
  /** The search stopped early (too many matches or timeout); results are incomplete. */
  readonly truncated: boolean;
  /** Why ripgrep was not used, when the plain scan answered instead. */
  readonly fallback?: string;
}

const DESCRIPTION = `Search file contents with a ripgrep regex; skips gitignored and binary files; newest files first.
Use for definitions, usages, strings. Names: Glob. Never Bash grep/rg.
Example: {"pattern":"TODO","glob":"*.ts","output_mode":"content","context":2}`;

const NEEDS_PCRE = /look-around|backreferences/;

/** The exact ripgrep arguments Grep uses (exported so the benchmark runs raw rg with the same flags). */
export function buildGrepArgs(input: GrepInput, target: string, noIgnore: boolean, pcre: boolean): string[] {
  const args = ['--json', '--no-config', '--hidden', '--no-require-git', '--glob', '!.git'];
  if (noIgnore) args.push('--no-ignore');
  if (input.case_insensitive) args.push('--ignore-case');
  if (input.multiline) args.push('--multiline', '--multiline-dotall');
  if (pcre) args.push('--pcre2');
  if (input.glob) args.push('--glob', input.glob);
  if (input.output_mode === 'files_with_matches') args.push('--max-count', '1');
  if (input.output_mode === 'content' && input.context) args.push('--context', String(input.context));
  args.push('--regexp', input.pattern, '--', target);
  return args;
}

function renderContent(files: RgFile[], display: (p: string) => string, head: number | undefined) {
  const out: string[] = [];
  const lines: GrepLine[] = [];
  let shown = 0;
  let cut = false;
  for (const file of files) {
    if (cut) break;
    const name = display(file.path);
    if (out.length > 0) out.push('');
    // Lines of a file Read would wrap as untrusted (dependencies, generated code, command output) are
    // the same data when Grep shows them: wrapped the same way, so a match cannot pose as instructions.
    const start = out.length;
    out.push(name);
    let prev = -1;
    for (const l of file.lines) {
      if (head !== undefined && shown >= head) {
        cut = true;
        break;
      }
      if (prev >= 0 && l.line > prev + 1) out.push('--');
      // Clipped in data too: one minified line must not bloat the session log either.
      const text = l.cut
        ? `${l.text.slice(0, GREP_MAX_LINE_CHARS)}… [line truncated, very long line]`
        : clipLine(l.text, GREP_MAX_LINE_CHARS);
      out.push(`${l.line}${l.match ? ':' : '-'}${text}`);
      lines.push({ path: name, line: l.line, text, match: l.match });
      prev = l.line;
      shown++;
    }
    if (isUntrustedPath(name))
      out.splice(
        start,
        out.length - start,
        wrapUntrusted(out.slice(start).join('\n'), { source: 'file', path: name }),
      );
  }
  return { text: out.join('\n'), lines, cut };
}

async function grep(input: GrepInput, ctx: ToolContext): Promise<ToolResult<GrepData>> {
  const rgPath = ctx.host.ripgrepPath;
  const unavailable = (detail: string) =>
    failure(
      'UNAVAILABLE',
      `Grep is unavailable: ripgrep ${detail}.`,
      'Use Glob to find candidate files and Read to inspect them.',
    );
  // Without a ripgrep that starts, a plain scan answers (grepScan.ts): slower, same result shape.
  let fallback = rgPath ? undefined : 'ripgrep is not installed or not configured';
  const target = resolvePath(ctx, input.path);
  // The glob filter is matched below the search path by ripgrep and cannot widen the search, but a
  // filter that names a place outside is an escape attempt and is answered as one.
  const filter = input.glob?.trim().replace(/^!/, '');
  if (filter && climbsOut(filter, { glob: true })) {
    const cwdRel = path.relative(target.root, target.path).split(path.sep).join('/');
    const leaves = climbsOut(filter, { glob: true, depth: cwdRel === '' ? 0 : cwdRel.split('/').length });
    failure(
      leaves ? 'OUTSIDE_WORKSPACE' : 'INVALID_PARAM',
      leaves
        ? `glob ${JSON.stringify(input.glob)} reaches outside the workspace.`
        : `glob ${JSON.stringify(input.glob)} must stay inside the search path.`,
      'Put the directory in "path" and keep glob a relative file pattern, e.g. {"glob":"*.ts","path":"src"}.',
    );
  }
  const stat = await ctx.host.workspace.stat(target.path);
  if (!stat) return notFound(ctx, target.path, target.display, 'Path');
  // ripgrep opens an explicitly named FIFO, socket or device and blocks on it.
  if (stat.type !== 'file' && stat.type !== 'directory')
    failure(
      'INVALID_PARAM',
      `${target.display} is not a regular file or directory.`,
      'Search files or folders only.',
    );
  // Keel's own state dir (spill files) is searched even though it ignores itself.
  const noIgnore = inStateDir(ctx, target.path);

  const scan = (): Promise<RgRun> =>
    scanGrep({
      target: target.path,
      isFile: stat.type === 'file',
      root: target.root,
      pattern: input.pattern,
      glob: input.glob,
      caseInsensitive: input.case_insensitive,
      multiline: input.multiline,
      mode: input.output_mode,
      context: input.context ?? 0,
      noIgnore,
      signal: ctx.signal,
      timeoutMs: GREP_TIMEOUT_MS,
      maxLines: GREP_MAX_MATCH_LINES,
      maxLineBytes: LONG_LINE_KEEP_BYTES,
    });
  const run = (pcre: boolean): Promise<RgRun> =>
    runRipgrep({
      rgPath: rgPath!,
      args: buildGrepArgs(input, target.path, noIgnore, pcre),
      cwd: target.root,
      signal: ctx.signal,
      timeoutMs: GREP_TIMEOUT_MS,
      collectLines: input.output_mode === 'content',
      maxLines: GREP_MAX_MATCH_LINES,
      ...(input.multiline ? {} : { maxLineBytes: LONG_LINE_KEEP_BYTES }),
    });
  let result = fallback ? await scan() : await run(false);
  if (!fallback && result.exitCode === 2 && result.files.size === 0 && NEEDS_PCRE.test(result.stderr))
    result = await run(true);
  if (!fallback && result.spawnError) {
    fallback = `ripgrep could not be started (${result.spawnError})`;
    result = await scan();
  }
  if (result.spawnError) unavailable(`could not be started, nor the plain scan (${result.spawnError})`);
  if (result.stoppedBy === 'abort' || ctx.signal.aborted)
    failure('ABORTED', 'The call was aborted.', 'Wait for the user.');
  // Killed by a signal we did not send (e.g. its memory cap, see ripgrep.ts): say so, not "no matches".
  if (result.exitCode === null && result.stoppedBy === undefined && result.files.size === 0)
    unavailable('stopped abnormally (a hostile ignore file or a resource limit)');
  if (
    result.exitCode === 2 &&
    result.files.size === 0 &&
    /error parsing|regex parse error|error:/.test(result.stderr)
  ) {
    const detail = result.stderr.trim().split('\n').slice(0, 8).join('\n');
    failure(
      'INVALID_PARAM',
      `Invalid pattern or glob:\n${detail}`,
      'Fix the regex (escape special characters like ( [ { . with \\) and retry.',
    );
  }

  // ripgrep searches in parallel, so its order varies run to run; ours must not (P1).
  const shownPath = new Map<string, string>();
  for (const p of result.files.keys()) shownPath.set(p, ctx.guard.display(p));
  // ripgrep never follows links here (no --follow), so every path is below the search path; anything
  // else (a tree changed under our feet) is dropped rather than shown.
  for (const p of [...result.files.keys()]) {
    const abs = path.resolve(target.root, p);
    if (abs !== target.path && !abs.startsWith(`${target.path}${path.sep}`)) result.files.delete(p);
  }
  const display = (p: string) => shownPath.get(p) ?? ctx.guard.display(p);
  // Newest first (seed 001 ch.3): what changed last is likeliest what the search is after. Stable
  // for one state of the tree: ties (and equal mtimes) go by name.
  const files = byMtimeNewestFirst(
    [...result.files.values()]
      .filter((f) => f.matchedLines > 0 || f.lines.some((l) => l.match))
      .sort((a, b) => compareStrings(display(a.path), display(b.path))),
    (f) => path.resolve(target.root, f.path),
  );
  const truncated = result.stoppedBy !== undefined;
  const head = input.head_limit;
  const base = {
    pattern: input.pattern,
    path: target.display,
    mode: input.output_mode,
    truncated,
    ...(fallback ? { fallback } : {}),
  };
  const scanned = fallback ? ` (${fallback}: a plain scan with a JavaScript regex answered)` : '';
  const fileNames = files.map((f) => display(f.path));
  const where = target.display === '.' ? 'the workspace' : target.display;

  if (files.length === 0) {
    const data: GrepData = { ...base, files: [], ...(input.output_mode === 'content' ? { lines: [] } : {}) };
    const note = truncated ? ' (the search timed out before finishing)' : '';
    const text = `No matches for ${JSON.stringify(input.pattern)} in ${where}${input.glob ? ` (glob ${JSON.stringify(input.glob)})` : ''}${note}. Gitignored files are not searched.${scanned}`;
    return truncated ? partial(data, text, { files: 0 }) : ok(data, text, { files: 0 });
  }

  let data: GrepData;
  let body: string;
  let cut = false;
  if (input.output_mode === 'content') {
    const rendered = renderContent(files, display, head);
    data = { ...base, files: fileNames, lines: rendered.lines };
    body = rendered.text;
    cut = rendered.cut;
  } else if (input.output_mode === 'count') {
    const counts = files.map((f) => ({ path: display(f.path), count: f.matchedLines }));
    const shown = head !== undefined ? counts.slice(0, head) : counts;
    cut = shown.length < counts.length;
    data = { ...base, files: fileNames, counts: shown };
    body = shown.map((c) => `${c.path}:${c.count}`).join('\n');
  } else {
    const shown = head !== undefined ? fileNames.slice(0, head) : fileNames;
    cut = shown.length < fileNames.length;
    data = { ...base, files: fileNames };
    body = shown.join('\n');
  }

  let matchedLines = 0;
  for (const f of files) {
    // `end` events carry the count; without one (search stopped early) count what arrived.
    if (f.matchedLines > 0) matchedLines += f.matchedLines;
    else for (const l of f.lines) if (l.match) matchedLines++;
  }
  const summary =
    input.output_mode === 'files_with_matches'
      ? `${files.length} file${files.length === 1 ? '' : 's'} match`
      : `${matchedLines} matching line${matchedLines === 1 ? '' : 's'} in ${files.length} file${files.length === 1 ? '' : 's'}`;
  const notes: string[] = [];
  if (cut) notes.push(`showing the first ${head} (head_limit)`);
  if (result.stoppedBy === 'limit') {
    notes.push(
      `stopped after ${GREP_MAX_MATCH_LINES} matching lines; results are incomplete — narrow the pattern, path or glob`,
    );
  }
  if (result.stoppedBy === 'timeout')
    notes.push(`timed out after ${GREP_TIMEOUT_MS / 1000} s; results are incomplete`);
  if (fallback) notes.push(`${fallback}: a plain scan with a JavaScript regex answered`);
  const text = `${body}\n\n[${summary}${notes.length ? `; ${notes.join('; ')}` : ''}.]`;
  const limited = limitOutput(text, { host: ctx.host, label: 'grep', toolUseId: ctx.toolUseId });
  const stats =
    input.output_mode === 'files_with_matches'
      ? { files: files.length }
      : { files: files.length, matched_lines: matchedLines };
  return truncated || limited.truncated ? partial(data, limited.text, stats) : ok(data, limited.text, stats);
}

export function createGrepTool(): ToolDefinition<GrepInput, GrepData> {
  return {
    name: 'Grep',
    description: DESCRIPTION,
    get inputSchema() {
      return grepInputSchema();
    },
    readOnly: true,
    concurrentRead: true,
    execute: (input, ctx) => runTool(ctx, () => grep(input, ctx)),
  };
}
