import * as path from 'node:path';
import { sha256Hex } from '../../safety/guards/readLedger.ts';
import { recordHostWrite } from '../../safety/sandbox/hostWrites.ts';
import { fail, type ToolContext, ToolFailure, type ToolResult } from '../protocol.ts';
import { decodeText, encodeText, type TextFormat } from './codec.ts';
import { aborted, type WriteGate } from './gate.ts';
import { type ResultFinisher, watchProblems } from './problems.ts';

// The I/O half of every edit tool: resolve → stat → read-before-edit + optimistic lock → (caller
// computes new text) → approval → abort check → lock re-check → atomic write → ledger → audit.

export const MAX_EDIT_BYTES = 10 * 1024 * 1024;

export interface Target {
  readonly canonical: string;
  readonly display: string;
}

export interface Loaded {
  readonly bytes: Uint8Array;
  readonly hash: string;
  readonly mode: number | undefined;
}

export interface LoadedText extends Loaded {
  readonly text: string;
  readonly format: TextFormat;
}

/**
 * A relative path is anchored to the primary root by plain concatenation, never `path.join`: join
 * folds `link/..` lexically, while the kernel follows `link` first and then goes up from its target.
 * Handing the guard an unnormalised absolute path makes it judge the path the way it will be opened.
 */
function anchored(ctx: ToolContext, rawPath: string): string {
  const input = rawPath.trim();
  const root = ctx.guard.roots[0];
  if (!root || input.length === 0 || path.isAbsolute(input)) return rawPath;
  if (/^file:/i.test(input) || input.startsWith('~')) return rawPath;
  return `${root}${path.sep}${input}`;
}

const MAX_PREFIX_SCAN = 256;

/**
 * When the guard rejects a path for another reason (a too-long name, a loop), the path may still have
 * walked out of the workspace on the way, e.g. `link-to-outside/<300 chars>/..`. That is an escape and
 * is reported as one: resolve each prefix below its root and look for the first that lands outside.
 */
function escapesOnTheWay(ctx: ToolContext, absolute: string): boolean {
  const base = [...ctx.guard.roots, ctx.guard.stateDir].find((r) => absolute.startsWith(`${r}${path.sep}`));
  if (!base) return false;
  const parts = absolute.slice(base.length + 1).split(path.sep);
  let prefix = base;
  for (const part of parts.slice(0, MAX_PREFIX_SCAN)) {
    prefix = `${prefix}${path.sep}${part}`;
    if (part.length === 0 || part === '.') continue;
    const r = ctx.guard.resolve(prefix);
    if (!r.ok) return r.error.code === 'OUTSIDE_WORKSPACE';
  }
  return false;
}

export function resolveTarget(ctx: ToolContext, rawPath: string): Target {
  const absolute = anchored(ctx, rawPath);
  // The raw input, not `absolute`: the guard judges every reading of it (drive letters, "\\", URLs).
  const resolved = ctx.guard.resolve(rawPath);
  if (!resolved.ok) {
    const { suggestion } = resolved.error;
    const code =
      resolved.error.code !== 'OUTSIDE_WORKSPACE' && escapesOnTheWay(ctx, absolute.trim())
        ? 'OUTSIDE_WORKSPACE'
        : resolved.error.code;
    const message =
      code === 'OUTSIDE_WORKSPACE'
        ? `Path is outside the workspace: ${JSON.stringify(rawPath)}`
        : resolved.error.message;
    throw new ToolFailure(
      code,
      message,
      code === resolved.error.code
        ? suggestion
        : 'Only files inside the workspace folder can be accessed. Use a path relative to the workspace root.',
    );
  }
  // Judged after the guard: an escape ending in "/" is still an escape, reported as such.
  if (/\/\s*$/.test(rawPath) && rawPath.trim().length > 1) {
    throw new ToolFailure(
      'INVALID_PARAM',
      `${JSON.stringify(rawPath)} names a folder; these tools work on files.`,
      'Give a file path, e.g. "src/index.ts".',
    );
  }
  return { canonical: resolved.path, display: resolved.display };
}

/** Stat the target: undefined when it does not exist; failures for directories and specials. */
export async function statTarget(ctx: ToolContext, target: Target) {
  const stat = await ctx.host.workspace.stat(target.canonical);
  if (stat && stat.type !== 'file') {
    throw new ToolFailure(
      'INVALID_PARAM',
      `${target.display} is ${stat.type === 'directory' ? 'a directory' : 'not a regular file'}.`,
      'Give the path of a regular file.',
    );
  }
  if (stat && stat.size > MAX_EDIT_BYTES) {
    throw new ToolFailure(
      'TOO_LARGE',
      `${target.display} is ${stat.size} bytes; edits are limited to ${MAX_EDIT_BYTES} bytes.`,
      'Edit this file with a script through Bash, or split it.',
    );
  }
  return stat;
}

function conflict(target: Target): ToolFailure {
  return new ToolFailure(
    'CONFLICT',
    `${target.display} has changed since you last read it (by the user or another process).`,
    'Read it again, then retry the edit against its current content.',
  );
}

/** Read-before-edit and the optimistic lock: the bytes now must hash to what the model last saw. */
export async function loadExisting(
  ctx: ToolContext,
  target: Target,
  mode: number | undefined,
): Promise<Loaded> {
  const seen = ctx.ledger.lastHash(target.canonical);
  if (seen === undefined) {
    throw new ToolFailure(
      'NOT_READ',
      `${target.display} has not been read in this session.`,
      `Read ${target.display} first, then retry.`,
    );
  }
  const bytes = await ctx.host.workspace.readFile(target.canonical, ctx.signal);
  const hash = sha256Hex(bytes);
  if (hash !== seen) throw conflict(target);
  return { bytes, hash, mode };
}

export function decodeLoaded(target: Target, loaded: Loaded): LoadedText {
  const decoded = decodeText(loaded.bytes);
  if (!decoded.ok) {
    throw new ToolFailure(
      'BINARY_FILE',
      `${target.display} is not a text file.`,
      'Binary files cannot be edited with Edit/MultiEdit; use Write to replace it entirely, or Bash for tooling.',
    );
  }
  return { ...loaded, text: decoded.text, format: decoded.format };
}

export function encodeOrFail(target: Target, text: string, format: TextFormat): Uint8Array {
  const encoded = encodeText(text, format);
  if (!encoded.ok) {
    throw new ToolFailure(
      'INVALID_PARAM',
      `Cannot write ${target.display}: ${encoded.reason}.`,
      'Use only characters the file can store (or plain ASCII), then retry.',
    );
  }
  return encoded.bytes;
}

// One write per file at a time in this process: the lock re-check and the write happen together, so
// of two parallel edits of one file the second sees the first's bytes and is a CONFLICT — never a
// success whose change the other write silently replaced.
const writing = new Map<string, Promise<unknown>>();
async function oneWriterAt<T>(file: string, work: () => Promise<T>): Promise<T> {
  const prior = writing.get(file) ?? Promise.resolve();
  const mine = prior.then(work, work);
  const settled = mine.catch(() => {});
  writing.set(file, settled);
  try {
    return await mine;
  } finally {
    if (writing.get(file) === settled) writing.delete(file);
  }
}

export interface CommitOptions {
  readonly tool: string;
  readonly target: Target;
  readonly gate: WriteGate;
  /** What was loaded (modify) or undefined (create a new file). */
  readonly before: Loaded | undefined;
  readonly bytes: Uint8Array;
}

/**
 * Writes the file. Returns what the caller passes its success result through: it waits (bounded)
 * for the language servers and adds the problems this write introduced (host.diagnostics).
 */
export async function commit(ctx: ToolContext, options: CommitOptions): Promise<ResultFinisher> {
  const { target, before, tool } = options;
  const action = before ? 'modify' : 'create';
  await options.gate.authorize(ctx, target, action, tool);
  if (ctx.signal.aborted) throw aborted();

  return oneWriterAt(target.canonical, () => checkAndWrite(ctx, options, action));
}

async function checkAndWrite(
  ctx: ToolContext,
  options: CommitOptions,
  action: 'modify' | 'create',
): Promise<ResultFinisher> {
  const { target, before, bytes, tool } = options;
  // Everything may have moved while the user thought about it: the path must still resolve to the
  // same place (no symlink swapped in) and the content must still be what we edited.
  const again = ctx.guard.resolve(target.canonical);
  if (!again.ok) throw new ToolFailure(again.error.code, again.error.message, again.error.suggestion);
  if (again.path !== target.canonical) {
    throw new ToolFailure(
      'CONFLICT',
      `${target.display} now resolves to a different location (a link changed).`,
      'Read it again, then retry.',
    );
  }
  const now = await ctx.host.workspace.stat(target.canonical);
  if (before) {
    if (now?.type !== 'file') throw conflict(target);
    const current = await ctx.host.workspace.readFile(target.canonical, ctx.signal);
    if (sha256Hex(current) !== before.hash) throw conflict(target);
  } else if (now) {
    throw new ToolFailure(
      'CONFLICT',
      `${target.display} was created by someone else while this write was prepared.`,
      'Read it, then retry (editing the existing file).',
    );
  }
  if (ctx.signal.aborted) throw aborted();

  // The baseline is taken now, after the approval wait, so it is the file as the write finds it.
  const problems = watchProblems(ctx, target);
  try {
    await ctx.host.workspace.writeFile(
      target.canonical,
      bytes,
      before?.mode !== undefined ? { mode: before.mode } : {},
    );
  } catch (error) {
    problems.dispose();
    throw error;
  }
  const written = sha256Hex(bytes);
  ctx.ledger.recordWrite(target.canonical, written);
  // A sandboxed job still running must not take this file for one it planted (see hostWrites.ts).
  recordHostWrite(target.canonical, written);
  ctx.audit({
    type: 'file_change',
    path: target.display,
    action,
    bytes_before: before?.bytes.length ?? 0,
    bytes_after: bytes.length,
    tool,
  });
  return problems.finish;
}

const ERRNO: Record<string, { code: 'ACCESS_DENIED' | 'INVALID_PARAM' | 'UNAVAILABLE'; suggestion: string }> =
  {
    EACCES: {
      code: 'ACCESS_DENIED',
      suggestion: 'The file is not writable; ask the user to fix its permissions.',
    },
    EPERM: {
      code: 'ACCESS_DENIED',
      suggestion: 'The file is not writable; ask the user to fix its permissions.',
    },
    EROFS: { code: 'ACCESS_DENIED', suggestion: 'The file system is read-only.' },
    ENOTDIR: {
      code: 'INVALID_PARAM',
      suggestion: 'A parent of this path is a file, not a folder; choose another path.',
    },
    EISDIR: { code: 'INVALID_PARAM', suggestion: 'Give the path of a file, not a folder.' },
    ENAMETOOLONG: { code: 'INVALID_PARAM', suggestion: 'Use a shorter path.' },
    ENOSPC: { code: 'UNAVAILABLE', suggestion: 'The disk is full; tell the user.' },
    EEXIST: {
      code: 'INVALID_PARAM',
      suggestion: 'A parent of this path is a file, not a folder; choose another path.',
    },
  };

/** Runs a tool body: ToolFailure and well-known I/O errors become error results, with timing. */
export async function runEditTool<D>(
  ctx: ToolContext,
  body: () => Promise<ToolResult<D>>,
): Promise<ToolResult<D | null>> {
  const started = Date.now();
  const withTime = (result: ToolResult<D | null>): ToolResult<D | null> => ({
    ...result,
    stats: { ...result.stats, time_ms: Date.now() - started },
  });
  try {
    return withTime(await body());
  } catch (error) {
    if (error instanceof ToolFailure)
      return withTime({ ...fail(error.code, error.message, error.suggestion), data: null });
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (ctx.signal.aborted || (error as Error | undefined)?.name === 'AbortError') {
      const a = aborted();
      return withTime({ ...fail(a.code, a.message, a.suggestion), data: null });
    }
    const known = code ? ERRNO[code] : undefined;
    if (known)
      return withTime({ ...fail(known.code, (error as Error).message, known.suggestion), data: null });
    throw error;
  }
}

/** The existing file an Edit or MultiEdit changes, decoded; a missing file is NOT_FOUND with the way out. */
export async function loadForEdit(
  ctx: ToolContext,
  rawPath: string,
): Promise<{ target: Target; loaded: LoadedText }> {
  const target = resolveTarget(ctx, rawPath);
  const stat = await statTarget(ctx, target);
  if (!stat) {
    throw new ToolFailure(
      'NOT_FOUND',
      `${target.display} does not exist.`,
      'Check the path (Glob can find it), or use Write to create a new file.',
    );
  }
  return { target, loaded: decodeLoaded(target, await loadExisting(ctx, target, stat.mode)) };
}
