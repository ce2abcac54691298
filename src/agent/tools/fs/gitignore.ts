import * as fs from 'node:fs';
import * as path from 'node:path';

// A .gitignore matcher for the tools that walk directories themselves (Glob, LS). Grep gets the same
// behaviour from ripgrep; this keeps the two consistent: nested .gitignore files, negation, anchored
// and directory-only patterns, and "nothing below an ignored directory can be re-included".

export interface IgnoreRule {
  readonly negate: boolean;
  readonly dirOnly: boolean;
  /** Pattern contains a slash before its end: matched against the path relative to the file's dir. */
  readonly anchored: boolean;
  /** The pattern body without leading "/", trailing "/" or "!". */
  readonly body: string;
  readonly regex: RegExp;
}

function escapeRegex(ch: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(ch) ? `\\${ch}` : ch;
}

/** Translate a gitignore glob body into a regex source (no anchors). */
function globToRegexSource(body: string): string {
  let out = '';
  let i = 0;
  while (i < body.length) {
    const ch = body[i]!;
    if (ch === '*') {
      if (body[i + 1] === '*') {
        const atStart = i === 0 || body[i - 1] === '/';
        const atEnd = i + 2 === body.length;
        const slashAfter = body[i + 2] === '/';
        if (atStart && slashAfter) {
          out += '(?:.*/)?';
          i += 3;
          continue;
        }
        if (atStart && atEnd) {
          out += '.*';
          i += 2;
          continue;
        }
      }
      // A lone "*" (or "**" not framed by slashes) never crosses a directory boundary.
      while (body[i] === '*') i++;
      out += '[^/]*';
      continue;
    }
    if (ch === '?') {
      out += '[^/]';
      i++;
      continue;
    }
    if (ch === '\\' && i + 1 < body.length) {
      out += escapeRegex(body[i + 1]!);
      i += 2;
      continue;
    }
    if (ch === '[') {
      const close = body.indexOf(']', i + 2);
      if (close > 0) {
        let cls = body.slice(i + 1, close);
        if (cls.startsWith('!')) cls = `^${cls.slice(1)}`;
        out += `[${cls.replace(/\\/g, '\\\\')}]`;
        i = close + 1;
        continue;
      }
    }
    out += escapeRegex(ch);
    i++;
  }
  return out;
}

export function parseGitignore(text: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const rawLine of text.split(/\r?\n/)) {
    let line = rawLine;
    if (line === '' || line.startsWith('#')) continue;
    // Trailing spaces are ignored unless escaped.
    line = line.replace(/(?<!\\)\s+$/, '');
    if (line === '') continue;
    let negate = false;
    if (line.startsWith('!')) {
      negate = true;
      line = line.slice(1);
    } else if (line.startsWith('\\!') || line.startsWith('\\#')) {
      line = line.slice(1);
    }
    let dirOnly = false;
    if (line.endsWith('/')) {
      dirOnly = true;
      line = line.replace(/\/+$/, '');
    }
    const anchored = line.includes('/');
    const body = line.replace(/^\/+/, '');
    if (body === '') continue;
    const source = globToRegexSource(body);
    const regex = new RegExp(anchored ? `^${source}$` : `^(?:.*/)?${source}$`);
    rules.push({ negate, dirOnly, anchored, body, regex });
  }
  return rules;
}

export interface IgnoreMatcher {
  /** `rel` is relative to the matcher root, "/"-separated. */
  isIgnored(rel: string, isDir: boolean): boolean;
  /**
   * fast-glob `ignore` patterns (relative to `cwdRel`) that prune directories the rules above
   * `cwdRel` certainly ignore. Conservative: empty when a negation could re-include something.
   */
  pruneGlobs(cwdRel: string): string[];
}

const MAX_IGNORE_FILE_BYTES = 1024 * 1024;

const MICROMATCH_SPECIAL = /[{}()!+@\\]/;

/**
 * Rules come from `<root>/.git/info/exclude` and every `.gitignore` from `root` down. Files are read
 * lazily and cached, so only the directories actually visited cost a read.
 */
export function createIgnoreMatcher(root: string): IgnoreMatcher {
  const rulesByDir = new Map<string, IgnoreRule[]>();
  const dirIgnored = new Map<string, boolean>();

  const readRules = (file: string): IgnoreRule[] => {
    // Like git (2.32+), a .gitignore that is a symlink is not followed; a FIFO or device named
    // .gitignore would block or never end, and a huge file is no ignore list.
    let fd: number | undefined;
    try {
      if (!fs.existsSync(file)) return []; // most folders have none: no exception per folder
      fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
      const stat = fs.fstatSync(fd);
      if (!stat.isFile() || stat.size > MAX_IGNORE_FILE_BYTES) return [];
      return parseGitignore(fs.readFileSync(fd, 'utf8'));
    } catch {
      return [];
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  };

  const rulesFor = (dirRel: string): IgnoreRule[] => {
    let rules = rulesByDir.get(dirRel);
    if (!rules) {
      const abs = dirRel === '' ? root : path.join(root, dirRel);
      rules = readRules(path.join(abs, '.gitignore'));
      if (dirRel === '') rules = [...readRules(path.join(root, '.git', 'info', 'exclude')), ...rules];
      rulesByDir.set(dirRel, rules);
    }
    return rules;
  };

  const matchRules = (rel: string, isDir: boolean): boolean => {
    let ignored = false;
    const parts = rel.split('/');
    // Shallower files first; later (deeper, or later in the same file) rules win.
    for (let depth = 0; depth < parts.length; depth++) {
      const base = parts.slice(0, depth).join('/');
      const sub = parts.slice(depth).join('/');
      for (const rule of rulesFor(base)) {
        if (rule.dirOnly && !isDir) continue;
        if (rule.regex.test(sub)) ignored = !rule.negate;
      }
    }
    return ignored;
  };

  const isDirIgnored = (dirRel: string): boolean => {
    const cached = dirIgnored.get(dirRel);
    if (cached !== undefined) return cached;
    const slash = dirRel.lastIndexOf('/');
    const parent = slash < 0 ? '' : dirRel.slice(0, slash);
    const result = (parent !== '' && isDirIgnored(parent)) || matchRules(dirRel, true);
    dirIgnored.set(dirRel, result);
    return result;
  };

  return {
    isIgnored(rel, isDir) {
      if (rel === '' || rel === '.') return false;
      const parts = rel.split('/');
      if (parts.includes('.git')) return true;
      const slash = rel.lastIndexOf('/');
      if (slash > 0 && isDirIgnored(rel.slice(0, slash))) return true;
      return isDir ? isDirIgnored(rel) : matchRules(rel, false);
    },
    pruneGlobs(cwdRel) {
      const globs = ['**/.git/**'];
      const cwdParts = cwdRel === '' || cwdRel === '.' ? [] : cwdRel.split('/');
      const sources: Array<{ base: string; rules: IgnoreRule[] }> = [];
      for (let depth = 0; depth <= cwdParts.length; depth++) {
        const base = cwdParts.slice(0, depth).join('/');
        sources.push({ base, rules: rulesFor(base) });
      }
      if (sources.some((s) => s.rules.some((r) => r.negate))) return globs;
      for (const { base, rules } of sources) {
        for (const rule of rules) {
          if (MICROMATCH_SPECIAL.test(rule.body)) continue;
          if (!rule.anchored) {
            globs.push(`**/${rule.body}/**`);
            continue;
          }
          // Anchored rules only prune when they point below the search directory.
          const full = base === '' ? rule.body : `${base}/${rule.body}`;
          const prefix = cwdParts.length === 0 ? '' : `${cwdParts.join('/')}/`;
          if (full.startsWith(prefix) && full.length > prefix.length)
            globs.push(`${full.slice(prefix.length)}/**`);
        }
      }
      return globs;
    },
  };
}
