import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SandboxDenial } from '../../host.ts';
import { sanitizeGitConfig } from './gitConfig.ts';
import { type PinState, planPin } from './pins.ts';

// Where git keeps a workspace's repository: `.git` as a folder, a `.git` file naming the real one
// (worktrees, submodules), or a repository enclosing the workspace. Commands may write objects and
// refs there, but what git reads from it and acts on — hooks, config (fsmonitor, hooksPath, pager,
// drivers, aliases, includes), the pointers that swap in another config — decides what runs later
// on the host (the user's `git status`, VS Code's git extension): that part is pinned.

export interface GitDirs {
  /** The per-worktree git dir (HEAD, index). */
  readonly gitDir: string;
  /** The shared dir (objects, refs, hooks, config); the same as gitDir outside worktrees. */
  readonly commonDir: string;
}

/** What git reads from a git dir and acts on (relative to it): the git part of the run-later set. */
export const GIT_RUN_LATER: readonly { readonly path: string; readonly why: string }[] = [
  {
    path: 'config',
    why: 'git config: core.fsmonitor, core.hooksPath, core.pager/editor/sshCommand, filter/diff/merge drivers, aliases, include.path',
  },
  {
    path: 'config.worktree',
    why: 'per-worktree git config (extensions.worktreeConfig): the same keys as config',
  },
  { path: 'commondir', why: 'points a git dir at another common dir, so at another config and hooks' },
  { path: 'hooks', why: 'git hooks: run by commit, checkout, merge, push, rebase' },
  {
    path: 'info',
    why: 'info/attributes picks filter/diff/merge drivers; sparse-checkout and exclude change what git shows',
  },
];
/** In a linked worktree's own git dir (`<common>/worktrees/<name>/`): what redirects it. */
const WORKTREE_ADMIN = new Set(['commondir', 'config.worktree']);
const MAX_MODULE_DEPTH = 4;

function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function readText(p: string): string | undefined {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
}

function fromDotGit(dotGit: string): GitDirs | undefined {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dotGit);
  } catch {
    return undefined;
  }
  let gitDir = dotGit;
  if (stat.isFile()) {
    const match = /^gitdir:\s*(.+?)\s*$/m.exec(readText(dotGit) ?? '');
    if (!match?.[1]) return undefined;
    gitDir = path.resolve(path.dirname(dotGit), match[1]);
    if (!isDir(gitDir)) return undefined;
  } else if (!stat.isDirectory()) return undefined;
  let commonDir = gitDir;
  const common = readText(path.join(gitDir, 'commondir'))?.trim();
  if (common) commonDir = path.resolve(gitDir, common);
  if (!isDir(commonDir)) return undefined;
  return { gitDir: fs.realpathSync(gitDir), commonDir: fs.realpathSync(commonDir) };
}

/** The repository of `root` (its own `.git`, or the nearest enclosing one). */
export function findGitDirs(root: string): GitDirs | undefined {
  let dir = root;
  for (;;) {
    const found = fromDotGit(path.join(dir, '.git'));
    if (found) return found;
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Hook files that are not git's own samples. */
export function activeHooks(hooksDir: string): string[] {
  try {
    return fs
      .readdirSync(hooksDir)
      .filter((name) => !name.endsWith('.sample'))
      .map((name) => path.join(hooksDir, name));
  } catch {
    return [];
  }
}

function subdirs(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => path.join(dir, e.name));
  } catch {
    return [];
  }
}

/** Submodule git dirs under `<git dir>/modules/` (their names may contain slashes). */
function moduleDirs(gitDir: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    for (const sub of subdirs(dir)) {
      if (fs.existsSync(path.join(sub, 'HEAD'))) found.push(sub);
      else if (depth < MAX_MODULE_DEPTH) walk(sub, depth + 1);
    }
  };
  walk(path.join(gitDir, 'modules'), 1);
  return found;
}

type Watch =
  | { readonly kind: 'new-repo'; readonly worktree: string }
  | { readonly kind: 'nested'; readonly root: string; readonly before: ReadonlySet<string> }
  | { readonly kind: 'new-modules'; readonly gitDir: string; readonly before: ReadonlySet<string> }
  | { readonly kind: 'new-worktrees'; readonly commonDir: string; readonly before: ReadonlySet<string> };

export interface GitPlan {
  readonly watches: Watch[];
  /** Common dirs pinned this time: a new worktree pointing at one of them is git's own doing. */
  readonly commonDirs: Set<string>;
}

export function emptyGitPlan(): GitPlan {
  return { watches: [], commonDirs: new Set() };
}

/**
 * Pins a git dir's run-later files. In a repository's own git dir (`lenient`), one of them that
 * appears while the command runs is cleaned rather than removed: git writes config, hooks and info
 * when a repository is made, and another process (the user's `git init`, a concurrent command) may
 * be making it; what runs nothing stays. A worktree's admin files only ever redirect: removed.
 */
function pinGitDir(
  dir: string,
  names: (name: string) => boolean,
  args: string[],
  pins: PinState,
  options: { readonly lenient: boolean; readonly submodule?: boolean } = { lenient: true },
): void {
  for (const entry of GIT_RUN_LATER) {
    if (!names(entry.path)) continue;
    const settleCreated = options.lenient
      ? createdSettler(entry.path, options.submodule ?? false)
      : undefined;
    planPin(
      {
        path: path.join(dir, entry.path),
        why: entry.why,
        base: dir,
        ...(settleCreated ? { settleCreated } : {}),
      },
      args,
      pins,
    );
  }
}

/** What is cleaned out of a git run-later file or folder that appeared during the command. */
function createdSettler(name: string, submodule: boolean): ((p: string) => SandboxDenial[]) | undefined {
  // git makes these three with a repository; config.worktree and commondir only ever redirect.
  if (name === 'config')
    return (p) => {
      const out: SandboxDenial[] = [];
      sanitizeConfigFile(p, submodule, 'git config set while the command ran', out);
      return out;
    };
  if (name === 'hooks')
    return (p) =>
      activeHooks(p).map((hook) => removed(hook, 'git hook written while the command ran; removed'));
  if (name === 'info')
    return (p) =>
      INFO_STEERING.filter((file) => infoSteers(path.join(p, file))).map((file) =>
        removed(path.join(p, file), `info/${file} written while the command ran; removed`),
      );
  return undefined;
}

/** In `info/`: what picks drivers or hides files from `git status` (git's own template has only comments). */
const INFO_STEERING = ['attributes', 'sparse-checkout', 'exclude'] as const;

function infoSteers(file: string): boolean {
  const text = readText(file);
  return (text ?? '').split(/\r?\n/).some((l) => l.trim() !== '' && !l.trim().startsWith('#'));
}

function pinRepository(dirs: GitDirs, args: string[], pins: PinState, plan: GitPlan): void {
  if (plan.commonDirs.has(dirs.commonDir)) return;
  plan.commonDirs.add(dirs.commonDir);
  pinGitDir(dirs.commonDir, () => true, args, pins);
  if (dirs.gitDir !== dirs.commonDir)
    pinGitDir(dirs.gitDir, (n) => WORKTREE_ADMIN.has(n), args, pins, { lenient: false });
  const worktrees = subdirs(path.join(dirs.commonDir, 'worktrees'));
  for (const admin of worktrees)
    if (admin !== dirs.gitDir) pinGitDir(admin, (n) => WORKTREE_ADMIN.has(n), args, pins, { lenient: false });
  plan.watches.push({ kind: 'new-worktrees', commonDir: dirs.commonDir, before: new Set(worktrees) });
  const modules = moduleDirs(dirs.commonDir);
  for (const module of modules) pinGitDir(module, () => true, args, pins, { lenient: true, submodule: true });
  plan.watches.push({ kind: 'new-modules', gitDir: dirs.commonDir, before: new Set(modules) });
}

/**
 * Pins the repository of `worktree` for one command. `bind` makes a git dir outside the writable
 * roots writable (objects, refs, index); `.git` itself is bound over itself so it becomes a mount
 * point: it can no longer be renamed away and replaced by a fresh `.git` with a config of the
 * command's choosing (the pinned files would travel with the renamed folder).
 */
function planGit(
  worktree: string,
  options: { readonly enclosing: boolean; readonly bind: (dir: string) => void },
  args: string[],
  pins: PinState,
  plan: GitPlan,
): void {
  const dotGit = path.join(worktree, '.git');
  let stat: fs.Stats | undefined;
  try {
    stat = fs.lstatSync(dotGit);
  } catch {
    plan.watches.push({ kind: 'new-repo', worktree });
  }
  if (stat?.isDirectory()) args.push('--bind', dotGit, dotGit);
  else if (stat)
    planPin(
      { path: dotGit, why: 'a .git file names the git dir (and so its config and hooks)', base: worktree },
      args,
      pins,
    );
  const dirs = stat ? fromDotGit(dotGit) : options.enclosing ? findGitDirs(worktree) : undefined;
  // A `.git` folder git does not read yet (empty, half-made) is a new repository once filled in.
  if (stat && !dirs) plan.watches.push({ kind: 'new-repo', worktree });
  if (!dirs) return;
  // The common dir first: a worktree's git dir inside it is then already writable (a later bind
  // over it would hide the pins already placed there).
  options.bind(dirs.commonDir);
  options.bind(dirs.gitDir);
  pinRepository(dirs, args, pins, plan);
}

function hasDotGit(dir: string): boolean {
  try {
    fs.lstatSync(path.join(dir, '.git'));
    return true;
  } catch {
    return false;
  }
}

/** Folders one level down (VS Code's git extension opens repositories there by itself). */
function nestedFolders(root: string): string[] {
  return subdirs(root).filter((dir) => !/\/(node_modules|\.git)$/.test(dir));
}

/** The root's repository, and those one folder down, pinned; new ones there are checked afterwards. */
export function planRepositories(
  root: string,
  bind: (dir: string) => void,
  args: string[],
  pins: PinState,
  plan: GitPlan,
): void {
  planGit(root, { enclosing: true, bind }, args, pins, plan);
  const nested = nestedFolders(root).filter(hasDotGit);
  for (const dir of nested) planGit(dir, { enclosing: false, bind }, args, pins, plan);
  plan.watches.push({ kind: 'nested', root, before: new Set(nested) });
}

function removed(p: string, detail: string): SandboxDenial {
  fs.rmSync(p, { recursive: true, force: true });
  return { kind: 'write', target: p, detail };
}

/** Keeps only the config that runs nothing; what was dropped is reported. */
function sanitizeConfigFile(config: string, submodule: boolean, what: string, out: SandboxDenial[]): void {
  // Rewriting through a link would write wherever it points, outside the sandbox's reach.
  if (fs.lstatSync(config, { throwIfNoEntry: false })?.isSymbolicLink()) {
    out.push(removed(config, `${what}: a link; removed`));
    return;
  }
  const text = readText(config);
  if (text === undefined) return;
  const clean = sanitizeGitConfig(text, { submodule });
  if (clean.dropped.length === 0) return;
  fs.writeFileSync(config, clean.text);
  out.push({
    kind: 'write',
    target: config,
    detail: `${what} (${clean.dropped.slice(0, 5).join(', ')}${clean.dropped.length > 5 ? ', …' : ''}); removed`,
  });
}

/** A git dir the command created: no hooks, no redirections, and only the config that runs nothing. */
function sanitizeRepository(gitDir: string, submodule: boolean, out: SandboxDenial[]): void {
  for (const hook of activeHooks(path.join(gitDir, 'hooks')))
    out.push(removed(hook, 'git hook written into a new git dir; removed'));
  for (const name of WORKTREE_ADMIN) {
    const p = path.join(gitDir, name);
    if (fs.existsSync(p)) out.push(removed(p, `${name} written into a new git dir; removed`));
  }
  sanitizeConfigFile(path.join(gitDir, 'config'), submodule, 'git config set in a new git dir', out);
  for (const module of moduleDirs(gitDir)) sanitizeRepository(module, true, out);
  for (const admin of subdirs(path.join(gitDir, 'worktrees'))) checkWorktreeAdmin(admin, gitDir, out);
}

/** A new linked worktree must point back at its own repository, with no config of its own. */
function checkWorktreeAdmin(admin: string, commonDir: string, out: SandboxDenial[]): void {
  const common = readText(path.join(admin, 'commondir'))?.trim();
  const resolved = common ? path.resolve(admin, common) : undefined;
  if (!resolved || !isDir(resolved) || fs.realpathSync(resolved) !== commonDir) {
    out.push(removed(admin, 'a worktree entry pointing at another repository; removed'));
    return;
  }
  const worktreeConfig = path.join(admin, 'config.worktree');
  if (fs.existsSync(worktreeConfig)) out.push(removed(worktreeConfig, 'config.worktree written; removed'));
}

function settleNewDotGit(
  worktree: string,
  plan: GitPlan,
  writable: (p: string) => boolean,
  out: SandboxDenial[],
) {
  const dotGit = path.join(worktree, '.git');
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(dotGit);
  } catch {
    return;
  }
  if (stat.isDirectory()) return sanitizeRepository(dotGit, false, out);
  const dirs = stat.isFile() ? fromDotGit(dotGit) : undefined;
  // A worktree git made of a repository pinned here (`git worktree add`) is git's own bookkeeping.
  if (dirs && dirs.gitDir !== dirs.commonDir && plan.commonDirs.has(dirs.commonDir)) return;
  // So is a submodule's (`<common>/modules/<name>`): the new-modules watch checks that git dir.
  if (dirs && [...plan.commonDirs].some((c) => dirs.gitDir.startsWith(path.join(c, 'modules') + path.sep)))
    return;
  if (dirs && writable(dirs.gitDir) && dirs.gitDir === dirs.commonDir)
    return sanitizeRepository(dirs.gitDir, false, out);
  out.push(removed(dotGit, 'a .git naming a git dir the sandbox cannot vouch for; removed'));
}

/** After the command (or while it runs): what it did to git's run-later files that pins cannot stop. */
export function settleGit(plan: GitPlan, writable: (p: string) => boolean): SandboxDenial[] {
  const out: SandboxDenial[] = [];
  for (const watch of plan.watches) {
    if (watch.kind === 'new-repo') settleNewDotGit(watch.worktree, plan, writable, out);
    else if (watch.kind === 'nested') {
      for (const dir of nestedFolders(watch.root))
        if (!watch.before.has(dir) && hasDotGit(dir)) settleNewDotGit(dir, plan, writable, out);
    } else if (watch.kind === 'new-modules') {
      for (const module of moduleDirs(watch.gitDir))
        if (!watch.before.has(module) && writable(module)) sanitizeRepository(module, true, out);
    } else {
      for (const admin of subdirs(path.join(watch.commonDir, 'worktrees')))
        if (!watch.before.has(admin) && writable(admin)) checkWorktreeAdmin(admin, watch.commonDir, out);
    }
  }
  return out;
}
