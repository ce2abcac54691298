import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Arg, RuleContext } from './commandTypes.ts';
import { canonicalize } from '../paths/pathGuard.ts';
import { classifyStatic } from '../paths/protectedPaths.ts';

// Where a path named on a command line really leads, and whether a command may touch it without
// asking. The file tools refuse everything outside the workspace; Bash must not be the side door:
// ANY argument of ANY program (`base64 ~/.secret`, `git -C ~ log -p`, `cp ~/.ssh/id_rsa k`, `dd
// if=…`, `--directory=../`), a `< file` redirection, or a path literal in inline code that resolves
// outside the workspace needs approval — except a few world-readable, secret-free system locations
// (toolchains under /usr, /dev/null, scratch space under /tmp) that ordinary builds name all the time.

const HARMLESS_DEVICE = /^\/dev\/(null|zero|full|stdin|stdout|stderr|tty|random|urandom|fd\/\d+|pts\/\d+)$/;

/** System trees that hold programs, headers and libraries: readable by everyone, no secrets. */
const SYSTEM_READABLE = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/nix/store',
  '/opt/homebrew',
  '/etc/ssl/certs',
  '/etc/ca-certificates',
  '/etc/alternatives',
  '/System/Library',
  '/Library/Developer',
  '/Applications/Xcode.app',
];
/** Single world-readable files that describe the machine, not a person. */
const SYSTEM_FILES = new Set([
  '/etc/os-release',
  '/etc/lsb-release',
  '/etc/debian_version',
  '/etc/alpine-release',
  '/etc/redhat-release',
  '/etc/issue',
  '/etc/hostname',
  '/etc/hosts',
  '/etc/timezone',
  '/etc/localtime',
  '/etc/mime.types',
  '/etc/protocols',
  '/etc/services',
  '/etc/shells',
  '/proc/cpuinfo',
  '/proc/meminfo',
  '/proc/version',
  '/proc/loadavg',
  '/proc/uptime',
]);
export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  // `...` is a name, not a climb (`go test ./...`).
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

function canonical(p: string): string {
  try {
    return canonicalize(p);
  } catch {
    return p;
  }
}

const MAX_LINK_HOPS = 16;

/**
 * The real location of an absolute path: symbolic links created earlier in the same command line
 * (`ln -s ~ h; echo x > h/f`) are followed the way the kernel will follow them, then the ones on disk.
 */
export function realLocation(abs: string, rc: Pick<RuleContext, 'written'>): string {
  let current = path.resolve(abs);
  for (let hops = 0; hops < MAX_LINK_HOPS; hops++) {
    const parts = current.split('/').filter((c) => c !== '');
    let replaced = false;
    for (let k = 1; k <= parts.length; k++) {
      const link = rc.written(`/${parts.slice(0, k).join('/')}`)?.link;
      if (link !== undefined) {
        current = path.resolve(link, ...parts.slice(k));
        replaced = true;
        break;
      }
    }
    if (!replaced) break;
  }
  return canonical(current);
}

/**
 * Outside the workspace but harmless to name: system toolchains and devices like /dev/null. Scratch
 * space (/tmp) is not on the list: other projects and other people's files live there too, and a
 * workspace under /tmp has its neighbours there. (Writing a new file to /tmp by redirection is still
 * fine: that is judged by judgeWrite, which knows it is a write.)
 */
export function harmlessOutside(real: string): boolean {
  if (HARMLESS_DEVICE.test(real) || SYSTEM_FILES.has(real)) return true;
  return SYSTEM_READABLE.some((d) => isInside(real, d));
}

/** Inside the workspace, but the user's history or Keel's own state: `.git/`, `.keel/`. */
export function protectedInside(real: string, workspaceRoot: string): string | undefined {
  const verdict = classifyStatic(real, {
    roots: [workspaceRoot],
    stateDir: path.join(workspaceRoot, '.keel'),
  });
  if (!verdict?.protected) return undefined;
  return verdict.reason === 'vcs' || verdict.reason === 'keel_state' ? verdict.detail : undefined;
}

/**
 * Named as an ARGUMENT (read or write unknown): Keel's state (the audit log, sessions) and the parts
 * of .git that run code. Reading the rest of .git is what git itself does all day.
 */
function protectedArgument(real: string, workspaceRoot: string): string | undefined {
  const detail = protectedInside(real, workspaceRoot);
  if (!detail) return undefined;
  const rel = path.relative(workspaceRoot, real).split(path.sep);
  const git = rel.findIndex((c) => c.toLowerCase() === '.git');
  if (git === -1) return detail;
  const inside = rel.slice(git + 1).map((c) => c.toLowerCase());
  return inside[0] === 'hooks' || inside[0] === 'config' || inside.length === 0 ? detail : undefined;
}

/** Names found in home directories, not projects: credentials, shell history, tool configuration. */
const HOME_ONLY_NAMES =
  /^(\.ssh|\.aws|\.azure|\.gnupg|\.gcloud|\.config|\.kube|\.docker|\.netrc|\.npmrc|\.pypirc|\.git-credentials|\.gitconfig|\.\w*_history|\.bashrc|\.bash_profile|\.profile|\.zshrc|\.local|\.password-store|\.secrets?|id_(rsa|dsa|ecdsa|ed25519)(\.pub)?)$/;

const topLevelExists = new Map<string, boolean>();

/** `/foo/p` is a sed address, not a path, when there is no /foo on this machine. */
function namesRealPlace(abs: string): boolean {
  const top = abs.split('/').find((c) => c !== '');
  if (top === undefined) return true;
  let known = topLevelExists.get(top);
  if (known === undefined) {
    known = fs.existsSync(`/${top}`);
    topLevelExists.set(top, known);
  }
  return known;
}

/** The path a word names, if it names one: the word itself, or the value of `--opt=`, `-I/x`, `if=`. */
function pathCandidates(value: string): string[] {
  if (value === '' || value === '-' || value.includes('\n')) return [];
  if (/^file:\/\//i.test(value)) return [decodeURIComponentSafe(value.replace(/^file:\/\/[^/]*/i, ''))];
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return [];
  const out: string[] = [];
  const long = /^--?([A-Za-z][\w-]*)=(.*)$/s.exec(value);
  // `--exclude=.git`: a pattern that names what NOT to touch.
  if (long && /^(exclude|include|ignore|skip|filter|prune)/i.test(long[1] as string)) return [];
  if (long) out.push(long[2] as string);
  else if (/^-[A-Za-z][/.~]/.test(value)) out.push(value.slice(2));
  else if (/^[A-Za-z_][\w.-]*=/.test(value)) out.push(value.slice(value.indexOf('=') + 1));
  else if (!value.startsWith('-')) out.push(value);
  // PATH-like lists (`PATH=$HOME/bin:$PATH`) name search directories, not files to read.
  return out.filter((p) => p !== '' && !(p.includes(':') && !p.startsWith('/')) && !/^[a-z]+:/i.test(p));
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export interface PlaceInfo {
  readonly real: string;
  /** Why it may not be touched silently; undefined when it may. */
  readonly problem?: string;
}

/** Judges one path as written on the command line (relative to the command's directory). */
export function place(raw: string, rc: RuleContext): PlaceInfo | undefined {
  // `dd if=~/x`: bash expands a tilde after `=` too.
  const p = raw === '~' || raw.startsWith('~/') ? path.join(rc.home, raw.slice(1)) : raw;
  const relative = !path.isAbsolute(p);
  if (relative && rc.cwd === undefined) {
    // Relative to a directory we lost track of (`cd "$(mktemp -d)"`, `cd $X`): `..` is known to
    // climb, and names that only a home directory holds (`.ssh/id_rsa`, `.aws`) are not taken on trust.
    const first = p.split('/').find((c) => c !== '' && c !== '.') ?? '';
    return p.split('/').includes('..') || HOME_ONLY_NAMES.test(first)
      ? { real: p, problem: `${p} is relative to a directory that is not known` }
      : undefined;
  }
  const abs = path.resolve(rc.cwd ?? '/', p);
  if (!relative && !namesRealPlace(abs)) return undefined;
  // /dev/stderr is a link to whatever the stream is; it is the stream that counts.
  if (HARMLESS_DEVICE.test(abs)) return { real: abs };
  const real = realLocation(abs, rc);
  if (isInside(real, rc.workspaceRoot)) {
    const inside = protectedArgument(real, rc.workspaceRoot);
    return inside ? { real, problem: `${p} is ${inside}` } : { real };
  }
  if (harmlessOutside(real) && harmlessOutside(abs)) return { real };
  const shown = real === abs ? p : `${p} (→ ${real})`;
  return { real, problem: `${shown} is outside the workspace` };
}

/** Set-up scripts of version managers, relative to the home directory. */
const TOOLCHAIN_ENV =
  /^(\.nvm\/nvm\.sh|\.cargo\/env|\.sdkman\/bin\/sdkman-init\.sh|\.rvm\/scripts\/rvm|\.asdf\/asdf\.sh|\.ghcup\/env|\.deno\/env|\.local\/bin\/env|\.pyenv\/completions\/pyenv\.bash|\.volta\/load\.sh|\.rye\/env|\.elan\/env)$/;

/** Programs whose arguments are text, not files (or whose path arguments are tracked elsewhere). */
const NOT_PATHS = new Set([
  'echo',
  'printf',
  'test',
  '[',
  'true',
  'false',
  ':',
  'basename',
  'dirname',
  'realpath',
  'readlink',
  'which',
  'type',
  'whereis',
  'export',
  'declare',
  'typeset',
  'local',
  'readonly',
  'set',
  'unset',
  'alias',
  'cd',
  'pushd',
  'popd',
  'read',
  'exit',
  'return',
  'shift',
  'sleep',
  'seq',
  'expr',
  'let',
  'getopts',
  'hash',
  'ulimit',
  'umask',
  'wait',
  'kill',
  // Their operands are judged as writes or deletes by their own rules (scratch space is fine there).
  'touch',
  'mkdir',
  'rmdir',
  'tee',
  'truncate',
  'rm',
  'unlink',
  'shred',
  'mktemp',
  // Links: where they point is resolved from the link's own directory (linkRules).
  'ln',
  'link',
  'mklink',
]);

/**
 * Every path argument of a simple command that leads outside the workspace (or into .git/.keel)
 * needs approval: reading it would hand outside bytes to the model, writing it escapes the sandbox.
 */
export function judgeArgumentPaths(argv: readonly Arg[], rc: RuleContext): void {
  const head = argv[0];
  if (!head?.exact) return;
  const program = path.basename(head.value);
  if (NOT_PATHS.has(program)) return;
  if (program === 'command' && argv.some((a) => /^-[vV]$/.test(a.value))) return;
  const problems: string[] = [];
  for (const arg of argv.slice(1)) {
    if (!arg.exact && !arg.glob) continue;
    // `. ~/.nvm/nvm.sh`: toolchain set-up scripts print nothing and are judged as scripts anyway.
    if ((program === 'source' || program === '.') && TOOLCHAIN_ENV.test(path.relative(rc.home, arg.value)))
      continue;
    for (const candidate of pathCandidates(arg.value)) {
      // `~/.ssh/*`: the directory the pattern searches is what it reads.
      const p = arg.glob ? globBase(candidate) : candidate;
      const info = place(p, rc);
      if (info?.problem) problems.push(info.problem);
    }
  }
  if (problems.length === 0) return;
  rc.add({
    class: 'unknown',
    risk: 'high',
    program,
    reason: `${program} names a path it may read or write: ${[...new Set(problems)].slice(0, 3).join('; ')}`,
    suggestion:
      'Only the workspace is reachable without approval. Use Read/LS/Grep for workspace files; ask the user for anything else.',
  });
}

function globBase(p: string): string {
  const segs = p.split('/');
  const first = segs.findIndex((s) => /[*?[]/.test(s));
  const base = segs.slice(0, first === -1 ? segs.length : first).join('/');
  return base === '' ? (p.startsWith('/') ? '/' : '.') : base;
}

/** A single path read or written by a command (a `< file` source, a literal in inline code). */
export function judgePathUse(p: string, what: string, program: string, rc: RuleContext): void {
  const info = place(p, rc);
  if (!info?.problem) return;
  rc.add({
    class: 'unknown',
    risk: 'high',
    program,
    reason: `${what} ${info.problem}`,
    suggestion: 'Only the workspace is reachable without approval.',
  });
}

// Code that computes a path from the home directory (`process.env.HOME + '/.ssh'`, `Dir.home`).
const HOME_IN_CODE =
  /\b(?:env\.HOME|environ(?:\.get)?\s*[[(]\s*["']HOME|getenv\s*\(\s*["']HOME|ENV\s*\[\s*["']HOME|homedir|expanduser|Dir\.home|Path\.home|USERPROFILE|getpwuid|home_dir)\b/;

// Opening a file whose name is computed (`open(os.path.join(a, b))`, `readFileSync(f)`): the literal
// check below cannot see where it leads.
const COMPUTED_READ =
  /\b(?:open|fopen|readFile(?:Sync)?|createReadStream|read_text|read_bytes|file_get_contents|readlines|slurp|IO\.read|File\.(?:read|open|readlines|binread))\s*\(\s*(?!["'`][^"'`]*["'`]\s*[,)])[^)\s]/;

/** String literals in code (python -c, node -e, awk) that look like absolute or home paths. */
export function judgeCodePaths(language: string, code: string, rc: RuleContext): void {
  if (COMPUTED_READ.test(code))
    rc.add({
      class: 'unknown',
      risk: 'medium',
      program: language,
      reason: `inline ${language} code opens a file whose name is computed at run time`,
      sessionKey: `unknown:${language} computed path`,
      confinable: true,
    });
  if (HOME_IN_CODE.test(code))
    rc.add({
      class: 'unknown',
      risk: 'high',
      program: language,
      reason: `inline ${language} code builds paths from the home directory`,
      confinable: true,
    });
  for (const m of code.matchAll(/(["'`])((?:\\.|(?!\1)[^\n])*)\1/g)) {
    const text = (m[2] ?? '').replace(/\\(.)/g, '$1');
    const p = text.startsWith('~/') || text === '~' ? path.join(rc.home, text.slice(1)) : text;
    if (!/^(\/[^/\s]|\.\.\/)/.test(p) || /\s/.test(p)) continue;
    judgePathUse(p, `inline ${language} code names`, language, rc);
  }
}
