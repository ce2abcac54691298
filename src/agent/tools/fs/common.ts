import { createHash } from 'node:crypto';
import * as path from 'node:path';
import type { ErrorCode, ToolContext, ToolResult } from '../protocol.ts';
import { fail, ToolFailure } from '../protocol.ts';

// Small helpers shared by the read-only tools (LS, Glob, Grep, Read).

export interface ResolvedPath {
  /** Canonical absolute path: the only path any I/O may use. */
  readonly path: string;
  /** Workspace-relative path shown to the model. */
  readonly display: string;
  /** The workspace root (or state dir) that contains it. */
  readonly root: string;
}

/** Resolve a user-supplied path through the guard or end the call with the guard's error. */
export function resolvePath(ctx: ToolContext, input: string): ResolvedPath {
  const result = ctx.guard.resolve(input);
  if (!result.ok) throw new ToolFailure(result.error.code, result.error.message, result.error.suggestion);
  return { path: result.path, display: result.display, root: result.root };
}

export function failure(code: ErrorCode, message: string, suggestion: string): never {
  throw new ToolFailure(code, message, suggestion);
}

/**
 * Run a tool body, turning ToolFailure into an error result so `execute` never throws for
 * expected failures (callers outside the registry, like tests and the CLI, get a result too).
 */
export async function runTool<D>(
  ctx: ToolContext,
  body: () => Promise<ToolResult<D>>,
): Promise<ToolResult<D>> {
  const started = performance.now();
  const stamp = (r: ToolResult<D>): ToolResult<D> => ({
    ...r,
    stats: { ...r.stats, time_ms: Math.round(performance.now() - started) },
  });
  try {
    if (ctx.signal.aborted) failure('ABORTED', 'The call was aborted.', 'Wait for the user.');
    return stamp(await body());
  } catch (error) {
    if (error instanceof ToolFailure) {
      // Error results carry no data; `never` lets them stand in for any tool's result type.
      return stamp(fail(error.code, error.message, error.suggestion) as ToolResult<never>);
    }
    if (ctx.signal.aborted) {
      return stamp(fail('ABORTED', 'The call was aborted.', 'Wait for the user.') as ToolResult<never>);
    }
    const mapped = fromErrno(error);
    if (mapped) return stamp(fail(mapped.code, mapped.message, mapped.suggestion) as ToolResult<never>);
    throw error;
  }
}

// File-system errors the model can act on; anything else is a real fault and propagates.
function fromErrno(error: unknown): { code: ErrorCode; message: string; suggestion: string } | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return {
        code: 'ACCESS_DENIED',
        message: 'Permission denied.',
        suggestion: 'Choose another file or directory.',
      };
    case 'ENAMETOOLONG':
      return {
        code: 'INVALID_PARAM',
        message: 'Path is too long.',
        suggestion: 'Pass a shorter, real path.',
      };
    case 'ELOOP':
      return {
        code: 'INVALID_PARAM',
        message: 'Too many levels of symbolic links.',
        suggestion: 'Use the real path.',
      };
    case 'ENOENT':
    case 'ENOTDIR':
      return { code: 'NOT_FOUND', message: 'Path not found.', suggestion: 'Check the path with LS or Glob.' };
    case 'EISDIR':
      return {
        code: 'INVALID_PARAM',
        message: 'Path is a directory.',
        suggestion: 'Use LS for directories.',
      };
    default:
      return undefined;
  }
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** NUL bytes in the first 8 KB mean binary (the heuristic git and ripgrep use). */
export function looksBinary(bytes: Uint8Array): boolean {
  const end = Math.min(bytes.length, 8192);
  for (let i = 0; i < end; i++) if (bytes[i] === 0) return true;
  return false;
}

/** Code-point order, never locale order: the same list sorts the same everywhere (P1). */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function editDistance(a: string, b: string, cap: number): number {
  if (Math.abs(a.length - b.length) > cap) return cap + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  let prevPrev = prev;
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      // A swapped pair of letters ("scr" for "src") is one typo, not two.
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        cur[j] = Math.min(cur[j]!, prevPrev[j - 2]! + 1);
      }
    }
    prevPrev = prev;
    prev = cur;
  }
  return prev[b.length]!;
}

/** The sibling name the model most plausibly meant, if any is close enough. */
export function closestName(wanted: string, candidates: readonly string[]): string | undefined {
  const lower = wanted.toLowerCase();
  const stem = (n: string) => n.replace(/\.[^.]*$/, '').toLowerCase();
  let best: { name: string; score: number } | undefined;
  const cap = Math.max(1, Math.min(3, Math.floor(wanted.length / 4)));
  for (const name of [...candidates].sort(compareStrings)) {
    let score: number;
    if (name.toLowerCase() === lower) score = 0;
    else if (stem(name) === stem(wanted) && stem(wanted) !== '') score = 1;
    else score = 1 + editDistance(lower, name.toLowerCase(), cap);
    if (score <= cap + 1 && (!best || score < best.score)) best = { name, score };
  }
  return best?.name;
}

/** Cut a single long line so one minified line can't flood the context. */
export function clipLine(line: string, max: number): string {
  return line.length > max ? `${line.slice(0, max)}… [line truncated, ${line.length} chars]` : line;
}

/** NOT_FOUND, with the closest sibling name as the suggestion when there is one. */
export async function notFound(
  ctx: ToolContext,
  canonical: string,
  display: string,
  what: string,
): Promise<never> {
  let hint = `Check the path with LS, or search for it with Glob ${JSON.stringify({ pattern: `**/${path.basename(canonical)}` })}.`;
  try {
    const dir = path.dirname(canonical);
    if ((await ctx.host.workspace.stat(dir))?.type === 'directory') {
      const entries = await ctx.host.workspace.readDirectory(dir);
      const near = closestName(
        path.basename(canonical),
        entries.map((e) => e.name),
      );
      if (near) hint = `Did you mean "${ctx.guard.display(path.join(dir, near))}"?`;
    }
  } catch {
    // The hint is a nicety; the error stands without it.
  }
  return failure('NOT_FOUND', `${what} not found: ${display}`, hint);
}

/** Is a canonical path inside Keel's own state dir? Those files ignore themselves (.keel/.gitignore is
 * "*"), but when the model asks for them directly (e.g. a spill file) ignore rules must not hide them. */
export function inStateDir(ctx: ToolContext, canonical: string): boolean {
  const dir = ctx.guard.stateDir;
  return canonical === dir || canonical.startsWith(dir + path.sep);
}
