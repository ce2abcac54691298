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

// ---------------------------------------------------------------------------------------------
// Readings. A path string can mean more than one thing to the layers around us: a URL decoder turns
// %2e%2e into "..", Unicode normalisation turns "．．" or "\u2024\u2024" into "..", Windows treats "\"
// as a separator and "C:" / "\\server" as absolute, a C API stops at the first NUL, trailing dots
// and spaces vanish. The guard refuses a path if ANY of these readings leaves the workspace, and
// only then does the literal POSIX reading (the one that is opened) go through symlink resolution.
// ---------------------------------------------------------------------------------------------

// Overlong UTF-8 and IIS-style encodings of "." and the separators (classic filter bypasses).
const OVERLONG_DOT = /%c0%ae|%e0%80%ae|%c0%2e|%u002e|%u2024|%uff0e/gi;
const OVERLONG_SLASH = /%c0%af|%e0%80%af|%c0%2f|%c1%9c|%c1%1c|%c0%5c|%u002f|%u005c|%u2215|%uff0f/gi;
/** Characters some layer could read as "/" (Windows, or a font-level lookalike after normalisation). */
const SLASH_LIKE = /[\\\u2215\u2044\u29f8\u2216\uff0f\uff3c\ufe68]/g;
/** Characters some layer could read as "." once normalised (NFKC already folds most of them). */
const DOT_LIKE = /[\u2024\ufe52\uff0e\u3002\uff61\u0701\u0702\ua4f8]/g;
/** Invisible code points that a display (or a sloppy sanitiser) drops: ".\u200b." reads as "..". */
const INVISIBLE: ReadonlyArray<readonly [number, number]> = [
  [0x00ad, 0x00ad],
  [0x034f, 0x034f],
  [0x061c, 0x061c],
  [0x115f, 0x1160],
  [0x17b4, 0x17b5],
  [0x180b, 0x180f],
  [0x200b, 0x200f],
  [0x202a, 0x202e],
  [0x2060, 0x206f],
  [0x3164, 0x3164],
  [0xfe00, 0xfe0f],
  [0xfeff, 0xfeff],
  [0xffa0, 0xffa0],
];

function stripInvisible(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (!INVISIBLE.some(([lo, hi]) => c >= lo && c <= hi)) out += ch;
  }
  return out;
}
const DRIVE_OR_UNC = /^(?:[a-zA-Z]:|\/\/[^/]|\/\/$)/;
const HOME = /^~([A-Za-z0-9._-]*)(?=\/|$)/;
/** "$HOME/x", "${HOME}/x", "%USERPROFILE%\x": what a shell or Windows would expand. */
const PLACE_VARS = new Set([
  'HOME',
  'PWD',
  'OLDPWD',
  'TMPDIR',
  'TMP',
  'TEMP',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
]);
const ENV_REF = /^(?:\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|%([A-Za-z_][A-Za-z0-9_()]*)%)(?=\/|$)/;

function percentDecodeAscii(s: string): string {
  let out = s;
  for (let round = 0; round < 3; round++) {
    const next = out
      .replace(OVERLONG_DOT, '.')
      .replace(OVERLONG_SLASH, '/')
      .replace(/%([0-7][0-9a-fA-F])/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    if (next === out) break;
    out = next;
  }
  return out;
}

/** Components that some layer reads as ".." (trailing dots/spaces stripped, "...." filters). */
function tidyComponents(p: string): string {
  return p
    .split('/')
    .map((c) => {
      const t = c.trim();
      return /^\.{2,}$/.test(t) ? '..' : t === '.' ? '.' : c;
    })
    .join('/');
}

/** Every plausible reading of `input`, the literal one first. */
export function pathReadings(input: string, options: { glob?: boolean } = {}): string[] {
  const out = new Set<string>([input]);
  let s = percentDecodeAscii(input);
  // NFKC folds fullwidth and compatibility forms ("．", "\u2025", "／") into ASCII.
  s = stripInvisible(s.normalize('NFKC')).replace(DOT_LIKE, '.');
  const bases = [s];
  // In a glob a backslash escapes the next character: "\.\./x" is "../x".
  if (options.glob) bases.push(s.replace(/\\(.)/g, '$1'));
  for (const base of bases) {
    const slashed = base.replace(SLASH_LIKE, '/');
    const variants = [slashed];
    const nul = slashed.indexOf('\0');
    if (nul >= 0) variants.push(slashed.slice(0, nul), slashed.replaceAll('\0', ''));
    for (const v of variants) {
      out.add(v);
      out.add(tidyComponents(v));
    }
  }
  return [...out];
}

/** A reading as a POSIX path, or 'outside' when it can only name somewhere else (drive, UNC, host). */
function readingPath(reading: string): string | 'outside' {
  let r = reading.trim();
  if (/^file:/i.test(r)) {
    try {
      const url = new URL(r);
      if (url.hostname !== '' && url.hostname.toLowerCase() !== 'localhost') return 'outside';
      r = percentDecodeAscii(url.pathname);
    } catch {
      r = `/${r.replace(/^file:\/*/i, '')}`;
    }
  }
  const env = ENV_REF.exec(r);
  if (env) {
    // Windows variables at the start of a path (%USERPROFILE%, %TEMP%) always name a place elsewhere.
    if (env[2] !== undefined) return 'outside';
    const value = process.env[env[1]!];
    if (value && (path.isAbsolute(value) || DRIVE_OR_UNC.test(value))) r = value + r.slice(env[0].length);
    else if (!value && PLACE_VARS.has(env[1]!)) return 'outside';
  }
  if (DRIVE_OR_UNC.test(r)) return 'outside';
  const home = HOME.exec(r);
  if (home) {
    if (home[1] !== '') return 'outside'; // ~user
    r = path.join(os.homedir(), r.slice(1));
  }
  return r;
}

/**
 * Does any reading of a path or glob that must stay below its starting directory climb out of it (or
 * name an absolute place)? For globs, "**" may match zero directories and is counted as none.
 * With `depth`, the start is that many levels below the boundary, and only climbing past it counts.
 */
export function climbsOut(input: string, options: { glob?: boolean; depth?: number } = {}): boolean {
  const readings = options.glob
    ? pathReadings(input, options).flatMap(globAlternatives)
    : pathReadings(input);
  for (const reading of readings) {
    const r = readingPath(reading);
    if (r === 'outside' || path.isAbsolute(r)) return true;
    // `depth`: how far below the boundary the start is (a search dir inside the workspace).
    let depth = options.depth ?? 0;
    for (const raw of r.split('/')) {
      const c = options.glob ? globComponent(raw) : raw.trim();
      if (c === '' || c === '.' || (options.glob && c.includes('**'))) continue;
      depth += c === '..' || /^\.{2,}$/.test(c) ? -1 : 1;
      if (depth < 0) return true;
    }
  }
  return false;
}

const MAX_GLOB_ALTERNATIVES = 256;

/** Brace expansion, as fast-glob/ripgrep do it, capped (a capped list still ends in a raw check). */
function globAlternatives(pattern: string): string[] {
  const out: string[] = [];
  const expand = (p: string) => {
    if (out.length >= MAX_GLOB_ALTERNATIVES) return;
    const open = p.indexOf('{');
    if (open < 0) return void out.push(p);
    let depth = 0;
    const commas: number[] = [];
    let close = -1;
    for (let i = open; i < p.length; i++) {
      const ch = p[i];
      if (ch === '\\') i++;
      else if (ch === '{') depth++;
      else if (ch === '}' && --depth === 0) {
        close = i;
        break;
      } else if (ch === ',' && depth === 1) commas.push(i);
    }
    if (close < 0) return void out.push(p);
    const bounds = [open, ...commas, close];
    for (let k = 0; k + 1 < bounds.length; k++) {
      expand(p.slice(0, open) + p.slice(bounds[k]! + 1, bounds[k + 1]) + p.slice(close + 1));
    }
  };
  expand(pattern);
  // Whatever the expansion could not reach is still checked: separators inside braces count as "/".
  out.push(pattern.replace(/[{},]/g, '/'));
  return out;
}

/** One glob path segment reduced to what it can match literally: extglob groups split, [.] is ".". */
function globComponent(segment: string): string {
  const parts = segment
    .replace(/\[(.)\]/g, '$1')
    .split(/[()|]/)
    .map((t) => t.replace(/^[@!+*?]+$/, '').trim())
    .filter((t) => t.length > 0);
  if (parts.some((t) => /^\.{2,}$/.test(t))) return '..';
  return segment.trim();
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

  const contains = (p: string) => roots.some((r) => isWithin(r, p)) || isWithin(stateDir, p);

  const display = (p: string) => {
    for (const root of roots) {
      if (isWithin(root, p)) return path.relative(root, p) || '.';
    }
    return p;
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
    const lexical = path.resolve(path.isAbsolute(r) ? r : `${primary}${path.sep}${r}`);
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
    const absolute = path.isAbsolute(input) ? input : `${primary}${path.sep}${input}`;
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
