import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ToolError } from '../tools/protocol.ts';

// Every path a tool touches goes through here first. The guard returns the canonical path
// (symlinks followed, dangling ones too) and tools do all I/O on THAT path, never on the input,
// so what was checked is what is opened.

export type GuardResult =
  | { readonly ok: true; readonly path: string; readonly display: string; readonly root: string }
  | { readonly ok: false; readonly error: ToolError };

export interface PathGuard {
  readonly roots: readonly string[];
  readonly stateDir: string;
  resolve(input: string): GuardResult;
  /** Is an already-canonical absolute path inside a root or the state dir? */
  contains(canonicalPath: string): boolean;
  /** Path shown to the model: relative to the primary root when inside it. */
  display(canonicalPath: string): string;
}

const MAX_SYMLINK_HOPS = 40;

function outside(input: string): GuardResult {
  return {
    ok: false,
    error: {
      code: 'OUTSIDE_WORKSPACE',
      message: `Path is outside the workspace: ${JSON.stringify(input)}`,
      suggestion:
        'Only files inside the workspace folder can be accessed. Use a path relative to the workspace root.',
    },
  };
}

function invalid(message: string): GuardResult {
  return {
    ok: false,
    error: {
      code: 'INVALID_PARAM',
      message,
      suggestion: 'Pass a plain path relative to the workspace root, e.g. "src/index.ts".',
    },
  };
}

/**
 * Resolve `absolute` component by component, following every symlink (even dangling ones) the way
 * the kernel would when the path is opened or created. Components that don't exist are appended
 * literally: nothing below a missing directory can be a link.
 */
export function canonicalize(absolute: string): string {
  let pending = absolute.split(path.sep).filter((c) => c.length > 0);
  let current: string = path.sep;
  let hops = 0;
  while (pending.length > 0) {
    const component = pending.shift()!;
    if (component === '.') continue;
    if (component === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, component);
    let stat: fs.Stats | undefined;
    try {
      stat = fs.lstatSync(next);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        // Nothing below a missing entry can be a link; the rest is literal.
        return path.join(next, ...pending.filter((c) => c !== '.'));
      }
      throw error;
    }
    if (stat.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) throw Object.assign(new Error('too many symlinks'), { code: 'ELOOP' });
      const target = fs.readlinkSync(next);
      const targetParts = target.split(path.sep).filter((c) => c.length > 0);
      if (path.isAbsolute(target)) current = path.sep;
      pending = [...targetParts, ...pending];
      continue;
    }
    current = next;
  }
  return path.normalize(current);
}

function realRoot(root: string): string {
  try {
    return fs.realpathSync(root);
  } catch {
    return path.resolve(root);
  }
}

function isWithin(parent: string, child: string): boolean {
  if (child === parent) return true;
  const rel = path.relative(parent, child);
  return rel.length > 0 && !rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel);
}

export function createPathGuard(options: { roots: readonly string[]; stateDir: string }): PathGuard {
  const roots = options.roots.map(realRoot);
  const givenRoots = options.roots.map((r) => path.resolve(r));
  const primary = roots[0];
  if (!primary) throw new Error('createPathGuard: at least one workspace root is required');
  const stateDir = canonicalize(path.resolve(options.stateDir));

  const contains = (p: string) => roots.some((r) => isWithin(r, p)) || isWithin(stateDir, p);

  const display = (p: string) => {
    for (const root of roots) {
      if (isWithin(root, p)) return path.relative(root, p) || '.';
    }
    return p;
  };

  const escapesOnTheWay = (absolute: string): boolean => {
    const parts = absolute.split(path.sep).filter((c) => c.length > 0);
    for (let n = 1; n <= parts.length; n++) {
      let prefix: string;
      try {
        prefix = canonicalize(path.sep + parts.slice(0, n).join(path.sep));
      } catch {
        return false;
      }
      if (n > 1 && !contains(prefix) && !roots.some((r) => isWithin(prefix, r))) return true;
    }
    return false;
  };

  const resolve = (raw: string): GuardResult => {
    if (typeof raw !== 'string' || raw.length === 0) return invalid('Path must be a non-empty string.');
    if (raw.includes('\0')) return invalid('Path contains a NUL byte.');
    let input = raw.trim();
    if (input.startsWith('file://')) {
      try {
        input = decodeURIComponent(new URL(input).pathname);
      } catch {
        return invalid(`Not a valid file URL: ${JSON.stringify(raw)}`);
      }
      if (input.includes('\0')) return invalid('Path contains a NUL byte.');
    }
    // "~" means the home directory to every shell user and to the model; never a literal folder.
    if (input === '~' || input.startsWith('~/')) input = path.join(os.homedir(), input.slice(1));
    // No lexical normalisation here: `link/..` must mean what the kernel makes of it (the parent of
    // the link's TARGET), so '..' is resolved only after the symlinks before it are followed.
    const absolute = path.isAbsolute(input) ? input : `${primary}${path.sep}${input}`;
    // Lexical check first: cheap, and means we never even stat outside paths.
    const lexical = path.resolve(absolute);
    if (!contains(lexical) && !givenRoots.some((r) => isWithin(r, lexical))) {
      // A lexically outside path could still land inside via a symlink chain, but is never needed.
      return outside(raw);
    }
    let canonical: string;
    try {
      canonical = canonicalize(absolute);
    } catch (error) {
      // A path that walks outside before it fails (too long, a loop) is still an escape attempt.
      if (escapesOnTheWay(absolute)) return outside(raw);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENAMETOOLONG') return invalid('Path is too long.');
      if (code === 'ELOOP') return invalid(`Too many levels of symbolic links: ${JSON.stringify(raw)}`);
      if (code === 'EACCES') {
        return {
          ok: false,
          error: {
            code: 'ACCESS_DENIED',
            message: `Permission denied: ${raw}`,
            suggestion: 'Choose another file.',
          },
        };
      }
      return invalid(`Cannot resolve path ${JSON.stringify(raw)}: ${(error as Error).message}`);
    }
    if (!contains(canonical)) return outside(raw);
    const root = roots.find((r) => isWithin(r, canonical)) ?? stateDir;
    return { ok: true, path: canonical, display: display(canonical), root };
  };

  return { roots, stateDir, resolve, contains, display };
}
