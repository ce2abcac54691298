import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Refusal } from '../refusal.ts';
import { pathReadings, readingPath } from './pathReadings.ts';
import { workspaceRootNames } from './rootNames.ts';

export { workspaceRootNames };

// Every path a tool touches goes through here first. The guard returns the canonical path
// (symlinks followed, dangling ones too) and tools do all I/O on THAT path, never on the input,
// so what was checked is what is opened.

export type GuardResult =
  | { readonly ok: true; readonly path: string; readonly display: string; readonly root: string }
  | { readonly ok: false; readonly error: Refusal };

export interface PathGuard {
  readonly roots: readonly string[];
  readonly stateDir: string;
  resolve(input: string): GuardResult;
  /** Is an already-canonical absolute path inside a root or the state dir? */
  contains(canonicalPath: string): boolean;
  /**
   * Path shown to the model: relative to the primary root when inside it; `<folderName>/<rel>` inside
   * another root (the name a relative path may start with); `./<rel>` for a first-folder path whose
   * first component is another root's name, so every display path resolves back to its own file.
   */
  display(canonicalPath: string): string;
  /** The name a relative path may start with to reach each root after the first (undefined: none). */
  readonly rootNames: readonly (string | undefined)[];
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
  return walkCanonical(absolute);
}

/**
 * The resolution behind canonicalize, one pass. `visit` sees the canonical location after each
 * component of the input is fully resolved (links expanded), with how many input components that
 * covers; returning true stops the walk. (Canonicalising every prefix separately was quadratic: a
 * 3000-component path took a minute.)
 */
function walkCanonical(absolute: string, visit?: (current: string, consumed: number) => boolean): string {
  const input = absolute.split(path.sep).filter((c) => c.length > 0);
  let consumed = 0;
  let pending: string[] = [];
  let current: string = path.sep;
  let hops = 0;
  const step = (component: string): void => {
    if (component === '.') return;
    if (component === '..') {
      current = path.dirname(current);
      return;
    }
    const next = path.join(current, component);
    let stat: fs.Stats | undefined;
    try {
      stat = fs.lstatSync(next);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        // A missing entry is taken as the directory `mkdir -p` would create, and resolution goes on:
        // in `missing/../link/x` the `..` cancels `missing` and `link` must still be followed. (Joining
        // the rest lexically here once turned that path into `<root>/link/x`, which the kernel then
        // opened THROUGH the link.)
        current = next;
        return;
      }
      throw error;
    }
    if (stat.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) throw Object.assign(new Error('too many symlinks'), { code: 'ELOOP' });
      const target = fs.readlinkSync(next);
      const targetParts = target.split(path.sep).filter((c) => c.length > 0);
      if (path.isAbsolute(target)) current = path.sep;
      pending = [...targetParts, ...pending];
      return;
    }
    current = next;
  };
  while (consumed < input.length || pending.length > 0) {
    if (pending.length > 0) step(pending.shift()!);
    else step(input[consumed++]!);
    if (pending.length === 0 && visit?.(path.normalize(current), consumed)) break;
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

/**
 * The state dir as the guard trusts it. It is normally `<root>/.keel`; if `.keel` is itself a symlink
 * (a cloned repo can ship `.keel -> ~`), following it would put the link's target, and everything under
 * it, inside the allowed area. Then only the literal location counts, and paths through the link are
 * judged by where they really lead.
 */
function trustedStateDir(stateDir: string, roots: readonly string[]): string {
  const given = path.resolve(stateDir);
  const literal = path.join(realRoot(path.dirname(given)), path.basename(given));
  let canonical: string;
  try {
    canonical = canonicalize(given);
  } catch {
    return literal;
  }
  if (canonical === literal || roots.some((r) => isWithin(r, canonical))) return canonical;
  return literal;
}

export function createPathGuard(options: { roots: readonly string[]; stateDir: string }): PathGuard {
  const roots = options.roots.map(realRoot);
  const givenRoots = options.roots.map((r) => path.resolve(r));
  const primary = roots[0];
  if (!primary) throw new Error('createPathGuard: at least one workspace root is required');
  const stateDir = trustedStateDir(options.stateDir, roots);
  const rootNames = workspaceRootNames(options.roots);
  const byName = new Map<string, string>();
  rootNames.forEach((n, i) => {
    if (n !== undefined) byName.set(n, roots[i]!);
  });

  const contains = (p: string) => roots.some((r) => isWithin(r, p)) || isWithin(stateDir, p);

  const display = (p: string) => {
    // The most specific root wins: a second folder nested inside the first shows under its name.
    let best = -1;
    roots.forEach((root, i) => {
      if (isWithin(root, p) && (best < 0 || roots[best]!.length < root.length)) best = i;
    });
    if (best < 0) return p;
    const rel = path.relative(roots[best]!, p);
    if (best === 0) {
      const first = rel.split(path.sep)[0] ?? '';
      return byName.has(first) ? `.${path.sep}${rel}` : rel || '.';
    }
    const name = rootNames[best];
    return name === undefined ? p : rel ? `${name}${path.sep}${rel}` : name;
  };

  /**
   * The root a relative input is read against, and the rest of it: a first component naming another
   * root selects that root (it wins over a same-named folder in the first root, which `./name/...`
   * still reaches); anything else is relative to the first root.
   */
  const baseOf = (input: string): { base: string; rest: string } => {
    const slash = input.indexOf('/');
    const head = slash < 0 ? input : input.slice(0, slash);
    const named = byName.get(head);
    if (named !== undefined) return { base: named, rest: slash < 0 ? '' : input.slice(slash + 1) };
    return { base: primary, rest: input };
  };

  const escapesOnTheWay = (absolute: string): boolean => {
    let escaped = false;
    try {
      walkCanonical(absolute, (prefix, consumed) => {
        escaped = consumed > 1 && !contains(prefix) && !roots.some((r) => isWithin(prefix, r));
        return escaped;
      });
    } catch {
      // Resolution failed here; what was seen before the failure decided.
    }
    return escaped;
  };

  /** Lexically (no file system), does this reading land outside every root and the state dir? */
  const readingEscapes = (reading: string): boolean => {
    const r = readingPath(reading);
    if (r === 'outside') return true;
    const lexical = path.isAbsolute(r)
      ? path.resolve(r)
      : ((b) => path.resolve(`${b.base}${path.sep}${b.rest}`))(baseOf(r));
    return !contains(lexical) && !givenRoots.some((g) => isWithin(g, lexical));
  };

  const resolve = (raw: string): GuardResult => {
    if (typeof raw !== 'string' || raw.length === 0) return invalid('Path must be a non-empty string.');
    // Cheap and file-system free, so it runs first: nothing outside is ever stat'ed.
    if (pathReadings(raw).some(readingEscapes)) return outside(raw);
    if (raw.includes('\0')) return invalid('Path contains a NUL byte.');
    let input = raw.trim();
    if (/^file:/i.test(input)) {
      try {
        input = decodeURIComponent(new URL(input).pathname);
      } catch {
        return invalid(`Not a valid file URL: ${JSON.stringify(raw)}`);
      }
      if (input.includes('\0')) return invalid('Path contains a NUL byte.');
      if (pathReadings(input).some(readingEscapes)) return outside(raw);
    }
    // "~" means the home directory to every shell user and to the model; never a literal folder.
    if (input === '~' || input.startsWith('~/')) input = path.join(os.homedir(), input.slice(1));
    // No lexical normalisation here: `link/..` must mean what the kernel makes of it (the parent of
    // the link's TARGET), so '..' is resolved only after the symlinks before it are followed.
    const absolute = path.isAbsolute(input) ? input : ((b) => `${b.base}${path.sep}${b.rest}`)(baseOf(input));
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

  return { roots, stateDir, resolve, contains, display, rootNames };
}
