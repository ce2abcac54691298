import * as os from 'node:os';
import * as path from 'node:path';

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
export function readingPath(reading: string): string | 'outside' {
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
