import * as fs from 'node:fs';
import * as path from 'node:path';

// Paths that come from recorded data (checkpoints, review records, task files, session logs) are the
// repository's as much as Keel's: a repo can commit a forged `.keel/` record, and any folder can be
// swapped for a symlink after a path was recorded. Everything Keel writes or deletes from such a path
// goes through here. Stricter than the tool path guard on purpose: the guard follows links that stay
// inside the workspace, but Keel never records a path through a link (scans and records skip them),
// so any link on the way now was put there after recording and the write is refused.
// Plain Node, no zod: the extension uses this at activation.

export type ContainedPathCode =
  /** Empty, too long, a NUL byte, or an empty / `.` segment: not a path Keel would record. */
  | 'INVALID_PATH'
  /** A `..` segment. */
  | 'ESCAPES_ROOT'
  /** Absolute, and not inside any workspace root. */
  | 'OUTSIDE_ROOTS'
  /** Inside a root, but in a place recorded data never names (Keel's own state folder). */
  | 'EXCLUDED'
  /** A folder on the way, or the target itself, is a symlink now. */
  | 'SYMLINK'
  /** Something on the way exists and is not a folder. */
  | 'NOT_A_DIRECTORY'
  /** The target exists and is not a regular file (a folder, a socket…). */
  | 'NOT_A_FILE'
  /** The folder changed between the check and the write (a race): nothing was written. */
  | 'CHANGED'
  /** No usable workspace root. */
  | 'NO_ROOT';

export class ContainedPathError extends Error {
  constructor(
    readonly code: ContainedPathCode,
    /** The path as recorded. */
    readonly recorded: string,
    message: string,
  ) {
    super(message);
    this.name = 'ContainedPathError';
  }
}

export interface ContainedTarget {
  /** The workspace root it is in, symlinks resolved (the root itself is trusted). */
  readonly root: string;
  /** Relative to `root`, "/"-separated, never empty. */
  readonly rel: string;
  /** `root` joined with `rel`: the only path any I/O uses. */
  readonly abs: string;
}

export type ContainedResult =
  | { readonly ok: true; readonly target: ContainedTarget }
  | { readonly ok: false; readonly error: ContainedPathError };

export interface ContainOptions {
  /** Absolute folders inside a root that recorded data may never name (e.g. Keel's state dir). */
  readonly exclude?: readonly string[];
  /** Also check the disk now (no link or non-folder on the way). Default true. */
  readonly onDisk?: boolean;
}

/** Longer than any path Keel records; a longer one is forged. */
export const MAX_RECORDED_PATH = 4096;

const SEPARATORS = process.platform === 'win32' ? /[\\/]/ : /\//;

function realOr(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

function within(parent: string, child: string): string | undefined {
  const rel = path.relative(parent, child);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep).join('/');
}

/**
 * What is wrong with a recorded path on its face (no disk access), or undefined. Also the rule
 * behind the zod schemas of records, so load-time and write-time agree.
 */
export function recordedPathProblem(
  recorded: string,
  options: { allowAbsolute?: boolean } = {},
): { code: ContainedPathCode; message: string } | undefined {
  if (typeof recorded !== 'string' || recorded.length === 0)
    return { code: 'INVALID_PATH', message: 'the recorded path is empty' };
  if (recorded.length > MAX_RECORDED_PATH)
    return {
      code: 'INVALID_PATH',
      message: `the recorded path is longer than ${MAX_RECORDED_PATH} characters`,
    };
  if (recorded.includes('\0'))
    return { code: 'INVALID_PATH', message: 'the recorded path contains a NUL byte' };
  const absolute = path.isAbsolute(recorded);
  if (absolute && !options.allowAbsolute)
    return {
      code: 'OUTSIDE_ROOTS',
      message: 'the recorded path is absolute; only workspace-relative paths are accepted',
    };
  const segments = recorded.split(SEPARATORS);
  if (absolute) segments.shift(); // the empty segment before the leading separator
  if (process.platform === 'win32' && absolute) segments.shift(); // the drive
  if (segments.includes('..'))
    return { code: 'ESCAPES_ROOT', message: 'the recorded path climbs out with ".."' };
  if (segments.some((s) => s === '' || s === '.'))
    return { code: 'INVALID_PATH', message: 'the recorded path has an empty or "." segment' };
  if (process.platform === 'win32' && !absolute && segments.some((s) => s.includes(':')))
    return { code: 'INVALID_PATH', message: 'the recorded path names a drive or a stream' };
  return undefined;
}

/**
 * Where `recorded` (relative to the first root, or absolute inside any root) may be written, or why
 * not. With `onDisk` (the default) also refuses a symlink or non-folder anywhere from the root down
 * to the parent, and a target that is a symlink or not a regular file. Call it again right before
 * writing (the write functions below do): the disk can change after a check.
 */
export function containRecordedPath(
  roots: string | readonly string[],
  recorded: string,
  options: ContainOptions = {},
): ContainedResult {
  try {
    const target = resolveTarget(typeof roots === 'string' ? [roots] : roots, recorded, options);
    if (options.onDisk !== false) verifyOnDisk(target, recorded);
    return { ok: true, target };
  } catch (error) {
    if (error instanceof ContainedPathError) return { ok: false, error };
    throw error;
  }
}

function resolveTarget(roots: readonly string[], recorded: string, options: ContainOptions): ContainedTarget {
  const fail = (code: ContainedPathCode, message: string): never => {
    throw new ContainedPathError(code, recorded, message);
  };
  if (roots.length === 0) fail('NO_ROOT', 'there is no workspace folder to write into');
  const problem = recordedPathProblem(recorded, { allowAbsolute: true });
  if (problem) fail(problem.code, problem.message);
  let root: string | undefined;
  let rel: string | undefined;
  if (path.isAbsolute(recorded)) {
    const given = path.normalize(recorded);
    // A root as the user named it and as it really is: a record may hold either spelling.
    for (const r of roots) {
      const real = realOr(r);
      rel = within(real, given) ?? within(path.resolve(r), given);
      if (rel !== undefined) {
        root = real;
        break;
      }
    }
    if (root === undefined) fail('OUTSIDE_ROOTS', `${recorded} is outside the workspace`);
  } else {
    root = realOr(roots[0]!);
    rel = recorded.split(SEPARATORS).join('/');
  }
  const abs = path.join(root!, ...rel!.split('/'));
  for (const dir of options.exclude ?? []) {
    // As named, and with its parent's links resolved (the root's spelling); not through `dir` itself,
    // which may be a link a repository planted.
    const literal = path.join(realOr(path.dirname(path.resolve(dir))), path.basename(dir));
    if ([path.resolve(dir), literal].some((d) => abs === d || within(d, abs) !== undefined))
      fail('EXCLUDED', `${rel} is inside Keel's own state folder, which recorded data never names`);
  }
  return { root: root!, rel: rel!, abs };
}

interface DiskCheck {
  /** The parent folder's identity when it exists (compared again right before a rename). */
  readonly parent?: fs.Stats;
  /** Index into the rel's segments of the first folder that does not exist yet (none: all exist). */
  readonly firstMissing?: number;
  /** The target's lstat when it exists. */
  readonly existing?: fs.Stats;
}

function lstatOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ENOTDIR') return undefined; // caught as NOT_A_DIRECTORY one level up
    throw error;
  }
}

function verifyOnDisk(target: ContainedTarget, recorded: string = target.rel): DiskCheck {
  const fail = (code: ContainedPathCode, message: string): never => {
    throw new ContainedPathError(code, recorded, message);
  };
  const segments = target.rel.split('/');
  const rootStat = lstatOrUndefined(target.root);
  if (!rootStat?.isDirectory()) fail('NO_ROOT', `the workspace folder ${target.root} is not there`);
  let current = target.root;
  let parent: fs.Stats | undefined = rootStat;
  for (let i = 0; i < segments.length - 1; i++) {
    current = path.join(current, segments[i]!);
    const stat = lstatOrUndefined(current);
    if (!stat) return { firstMissing: i };
    const shown = segments.slice(0, i + 1).join('/');
    if (stat.isSymbolicLink())
      fail(
        'SYMLINK',
        `${shown} is a symlink now (to ${readLink(current)}); recorded paths are written only through real folders`,
      );
    if (!stat.isDirectory()) fail('NOT_A_DIRECTORY', `${shown} is not a folder`);
    parent = stat;
  }
  const existing = lstatOrUndefined(target.abs);
  if (existing?.isSymbolicLink())
    fail('SYMLINK', `${target.rel} is a symlink now (to ${readLink(target.abs)}); it is not written through`);
  if (existing && !existing.isFile()) fail('NOT_A_FILE', `${target.rel} is not a regular file`);
  return { ...(parent ? { parent } : {}), ...(existing ? { existing } : {}) };
}

function readLink(p: string): string {
  try {
    return fs.readlinkSync(p);
  } catch {
    return '?';
  }
}

/** Checks `target` on disk right now; throws ContainedPathError. */
export function assertContainedOnDisk(target: ContainedTarget): void {
  verifyOnDisk(target);
}

/** Creates the missing folders one level at a time, each checked to be a real folder after. */
function makeParents(target: ContainedTarget, firstMissing: number): void {
  const segments = target.rel.split('/');
  let current = path.join(target.root, ...segments.slice(0, firstMissing));
  for (let i = firstMissing; i < segments.length - 1; i++) {
    current = path.join(current, segments[i]!);
    try {
      fs.mkdirSync(current);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const stat = fs.lstatSync(current);
    if (stat.isSymbolicLink() || !stat.isDirectory())
      throw new ContainedPathError(
        'CHANGED',
        target.rel,
        `${segments.slice(0, i + 1).join('/')} changed while Keel created it`,
      );
  }
}

const NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0;

function sameNode(a: fs.Stats | undefined, b: fs.Stats | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino;
}

/**
 * Writes `bytes` at the contained target: checked right before, written to a temp file created
 * exclusively (never through a link) in the verified parent, checked again, then renamed over the
 * target (rename replaces a link, never follows it). Node has no openat/renameat, so a folder swapped
 * in the last instant between the second check and the rename is the one window left.
 */
export function writeContainedFile(
  target: ContainedTarget,
  bytes: Uint8Array,
  options: { mode?: number } = {},
): void {
  const first = verifyOnDisk(target);
  if (first.firstMissing !== undefined) makeParents(target, first.firstMissing);
  const checked = verifyOnDisk(target);
  const dir = path.dirname(target.abs);
  const tmp = path.join(
    dir,
    `.${path.basename(target.abs)}.keel-${process.pid}-${Math.random().toString(16).slice(2, 10)}.tmp`,
  );
  const fd = fs.openSync(
    tmp,
    fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | NOFOLLOW,
    options.mode ?? 0o666,
  );
  let open = true;
  let renamed = false;
  try {
    fs.writeFileSync(fd, bytes);
    if (options.mode !== undefined) fs.fchmodSync(fd, options.mode); // the umask narrowed it
    const mine = fs.fstatSync(fd);
    fs.closeSync(fd);
    open = false;
    const again = verifyOnDisk(target);
    if (!sameNode(again.parent, checked.parent) || !sameNode(lstatOrUndefined(tmp), mine))
      throw new ContainedPathError(
        'CHANGED',
        target.rel,
        `the folder of ${target.rel} changed while Keel wrote it; nothing was written`,
      );
    fs.renameSync(tmp, target.abs);
    renamed = true;
  } finally {
    if (open) fs.closeSync(fd);
    if (!renamed) fs.rmSync(tmp, { force: true });
  }
}

/** Deletes the contained target if it is there (a regular file; never a link's target, never a folder). */
export function removeContainedFile(target: ContainedTarget): void {
  const checked = verifyOnDisk(target);
  if (!checked.existing) return;
  fs.unlinkSync(target.abs); // unlink removes a name; it never follows a link
}

/** Appends `text` at the contained target (created if missing), opened without following a link. */
export function appendContainedFile(target: ContainedTarget, text: string): void {
  const first = verifyOnDisk(target);
  if (first.firstMissing !== undefined) makeParents(target, first.firstMissing);
  const checked = verifyOnDisk(target);
  const fd = fs.openSync(
    target.abs,
    fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | NOFOLLOW,
    0o666,
  );
  try {
    const opened = fs.fstatSync(fd);
    const again = verifyOnDisk(target);
    if (!opened.isFile() || !sameNode(again.parent, checked.parent) || !sameNode(again.existing, opened))
      throw new ContainedPathError(
        'CHANGED',
        target.rel,
        `${target.rel} changed while Keel opened it; nothing was written`,
      );
    fs.writeFileSync(fd, text);
  } finally {
    fs.closeSync(fd);
  }
}

/** Resolve-and-check in one call for writers: throws ContainedPathError instead of returning it. */
export function containedTarget(
  roots: string | readonly string[],
  recorded: string,
  options: ContainOptions = {},
): ContainedTarget {
  const result = containRecordedPath(roots, recorded, options);
  if (!result.ok) throw result.error;
  return result.target;
}
