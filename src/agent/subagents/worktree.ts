import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// A writer sub-agent's own tree (seed 000 §7: isolation first, then parallelism). In a git repository
// it is a linked worktree (`git worktree add --no-checkout`) whose files Keel copies itself from the
// user's working tree as it is now — tracked and untracked-but-not-ignored files, uncommitted changes
// included — and a `base/` copy of the same files that the merge compares against. A folder that is
// not a repository gets the plain copy. Both live under `<tmp>/keel-writers/`, never in the user's
// tree.
//
// Threat: the repository is hostile. Its config and attributes can name programs git runs (hooks —
// post-checkout runs after a checkout —, core.fsmonitor, clean/smudge filters). So git runs here with
// hooks and fsmonitor off and never checks anything out (no filter runs: Keel writes the bytes), and
// it never runs inside a writer's tree once the writer started — the writer could have rewritten its
// `.git` file to point at a gitdir of its own making. Removal is `rm -rf` of Keel's own folder (links
// are removed, never followed) and `git worktree prune` in the user's repository.

const SAFE_GIT = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.untrackedCache=false',
  '-c',
  'core.sshCommand=false',
  '--no-pager',
];

/** Limits on what is copied: a writer on a huge tree is refused with a clear message instead. */
export const WRITER_MAX_FILES = 20_000;
export const WRITER_MAX_BYTES = 512 * 1024 * 1024;

/** Never copied into a writer's tree, never part of its result. */
const SKIP_TOP = new Set(['.git', '.keel']);

export class WorktreeError extends Error {}

function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return { ...env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', GIT_PAGER: 'cat' };
}

/** git with the repository's programs turned off, in `cwd` (the user's root, never a writer's tree). */
export function safeGit(cwd: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...SAFE_GIT, ...args],
      { cwd, env: gitEnv(), maxBuffer: 256 * 1024 * 1024, timeout: 60_000, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) reject(new WorktreeError(`git ${args[0]} failed: ${(stderr || error.message).trim()}`));
        else resolve(stdout);
      },
    );
  });
}

function safeGitSync(cwd: string, args: readonly string[]): void {
  spawnSync('git', [...SAFE_GIT, ...args], { cwd, env: gitEnv(), stdio: 'ignore', timeout: 10_000 });
}

/** `<tmp>/keel-writers`: made private; a link or someone else's folder there is refused. */
export function writersHome(): string {
  const home = path.join(os.tmpdir(), 'keel-writers');
  try {
    fs.mkdirSync(home, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stat = fs.lstatSync(home);
  if (!stat.isDirectory() || (process.getuid && stat.uid !== process.getuid()))
    throw new WorktreeError(`${home} is not a folder of this user's; remove it and try again.`);
  return fs.realpathSync(home);
}

export interface WriterTree {
  readonly id: string;
  /** The folder Keel owns (removed at the end): holds `tree/` and `base/`. */
  readonly dir: string;
  /** The writer's workspace root (inside `tree/`: the same place the user's root has in its repo). */
  readonly root: string;
  /** The snapshot the writer started from, at the same relative place. */
  readonly baseRoot: string;
  /** Relative paths of the snapshot's files. */
  readonly files: ReadonlySet<string>;
  /** The user's repository (absent: a plain copy). */
  readonly repo?: string;
  remove(): Promise<void>;
}

const live = new Map<string, WriterTree>();
let exitHook = false;

/** On any exit (a second Ctrl-C, process.exit): the trees still there go, synchronously. */
function removeAllNow(): void {
  for (const tree of live.values()) {
    fs.rmSync(tree.dir, { recursive: true, force: true });
    if (tree.repo) safeGitSync(tree.repo, ['worktree', 'prune']);
  }
  live.clear();
}

function relParts(rel: string): string[] | undefined {
  const parts = rel.split('/');
  if (rel === '' || path.isAbsolute(rel) || parts.some((p) => p === '' || p === '.' || p === '..'))
    return undefined;
  return SKIP_TOP.has(parts[0]!) || parts.includes('.git') ? undefined : parts;
}

/** mkdir -p that refuses to go through a link (a folder is only made where a real folder is). */
function realDirs(root: string, parts: readonly string[], made: Set<string>): boolean {
  let dir = root;
  for (const part of parts) {
    dir = path.join(dir, part);
    if (made.has(dir)) continue;
    const stat = fs.lstatSync(dir, { throwIfNoEntry: false });
    if (!stat) fs.mkdirSync(dir);
    else if (!stat.isDirectory()) return false;
    made.add(dir);
  }
  return true;
}

/** Copies one entry of the user's tree (a file or a link, never followed) to `dest`'s same place. */
function copyEntry(
  from: string,
  rel: string,
  dests: readonly string[],
  made: Set<string>,
): number | undefined {
  const parts = relParts(rel);
  if (!parts) return undefined;
  // A folder of the user's that is now a link (to a folder outside) is not gone through.
  let dir = from;
  for (const part of parts.slice(0, -1)) {
    dir = path.join(dir, part);
    if (made.has(`src:${dir}`)) continue;
    if (!fs.lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) return undefined;
    made.add(`src:${dir}`);
  }
  const src = path.join(from, ...parts);
  const stat = fs.lstatSync(src, { throwIfNoEntry: false });
  if (!stat || !(stat.isFile() || stat.isSymbolicLink())) return undefined;
  for (const dest of dests) {
    if (!realDirs(dest, parts.slice(0, -1), made)) return undefined;
    const to = path.join(dest, ...parts);
    if (stat.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(src), to);
    else {
      fs.copyFileSync(src, to, fs.constants.COPYFILE_FICLONE | fs.constants.COPYFILE_EXCL);
      fs.chmodSync(to, stat.mode & 0o777);
    }
  }
  return stat.isFile() ? stat.size : 0;
}

/** Every file under `root` (relative, "/"-separated), links listed not followed, `.git`/`.keel` skipped. */
export function listTree(root: string, skipDir?: (rel: string) => boolean): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.name === '.git' || (rel === '' && SKIP_TOP.has(e.name))) continue;
      if (e.isDirectory()) {
        if (!skipDir?.(r)) walk(path.join(dir, e.name), r);
      } else if (e.isFile() || e.isSymbolicLink()) out.push(r);
    }
  };
  walk(root, '');
  return out.sort();
}

async function repoOf(root: string): Promise<{ top: string; prefix: string } | undefined> {
  try {
    const out = await safeGit(root, ['rev-parse', '--show-toplevel', '--show-prefix']);
    const [top, prefix] = out.split('\n');
    return top ? { top, prefix: (prefix ?? '').replace(/\/$/, '') } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A new writer tree holding the user's files as they are now. `userRoot` is the canonical workspace
 * root. Throws WorktreeError with a message for the model when it cannot be made.
 */
export async function createWriterTree(userRoot: string): Promise<WriterTree> {
  const id = `w-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const dir = path.join(writersHome(), id);
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.writeFileSync(path.join(dir, 'owner.json'), JSON.stringify({ pid: process.pid, repo: userRoot }));
  const treeDir = path.join(dir, 'tree');
  const baseDir = path.join(dir, 'base');
  const repo = await repoOf(userRoot);
  let registered = false;
  const tree: WriterTree = {
    id,
    dir,
    root: repo?.prefix ? path.join(treeDir, ...repo.prefix.split('/')) : treeDir,
    baseRoot: repo?.prefix ? path.join(baseDir, ...repo.prefix.split('/')) : baseDir,
    files: new Set(),
    ...(repo ? { repo: repo.top } : {}),
    async remove() {
      live.delete(id);
      fs.rmSync(dir, { recursive: true, force: true });
      if (registered && repo) await safeGit(repo.top, ['worktree', 'prune']).catch(() => {});
    },
  };
  live.set(id, tree);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', removeAllNow);
  }
  try {
    let rels: string[];
    if (repo) {
      // No checkout: nothing of the repository's (hooks, filters) runs; the index is read, not refreshed.
      await safeGit(repo.top, ['worktree', 'add', '--no-checkout', '--detach', treeDir, 'HEAD']).catch(
        async (error: unknown) => {
          // A repository without a commit yet: the tree is a plain copy then.
          if (/invalid reference|not a valid|unknown revision/i.test(String(error))) {
            fs.mkdirSync(treeDir);
            return '';
          }
          throw error;
        },
      );
      registered = fs.existsSync(path.join(treeDir, '.git'));
      const listed = await safeGit(userRoot, [
        'ls-files',
        '-z',
        '--cached',
        '--others',
        '--exclude-standard',
      ]);
      rels = [...new Set(listed.split('\0').filter((r) => r.length > 0))];
    } else {
      fs.mkdirSync(treeDir);
      rels = listTree(userRoot, (r) => r.split('/').pop() === 'node_modules');
    }
    if (rels.length > WRITER_MAX_FILES)
      throw new WorktreeError(
        `the workspace has ${rels.length} files, more than a writer's tree takes (${WRITER_MAX_FILES}); use mode "general" instead.`,
      );
    fs.mkdirSync(baseDir);
    const made = new Set<string>();
    if (!realDirs(treeDir, repo?.prefix ? repo.prefix.split('/') : [], made))
      throw new WorktreeError('bad prefix');
    realDirs(baseDir, repo?.prefix ? repo.prefix.split('/') : [], made);
    let bytes = 0;
    const files = tree.files as Set<string>;
    for (const rel of rels) {
      const size = copyEntry(userRoot, rel, [tree.root, tree.baseRoot], made);
      if (size === undefined) continue;
      files.add(rel);
      bytes += size;
      if (bytes > WRITER_MAX_BYTES)
        throw new WorktreeError(
          `the workspace holds more than ${WRITER_MAX_BYTES / 1024 / 1024} MB of files, more than a writer's tree takes; use mode "general" instead.`,
        );
    }
    // The base is read-only to everyone but `rm -rf` (the writer's tools are rooted in tree/ anyway).
    if (repo && registered) await safeGit(tree.root, ['read-tree', 'HEAD']).catch(() => {});
    return tree;
  } catch (error) {
    await tree.remove();
    throw error instanceof WorktreeError ? error : new WorktreeError((error as Error).message);
  }
}

/**
 * At startup: trees a Keel process that is gone left behind (kill -9, a crash) are removed, and the
 * repository's worktree list pruned. Only folders whose owner process is dead are touched.
 */
export async function sweepStaleWriterTrees(userRoot: string): Promise<number> {
  if (!fs.existsSync(path.join(os.tmpdir(), 'keel-writers'))) return 0;
  let home: string;
  try {
    home = writersHome();
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of fs.readdirSync(home)) {
    const dir = path.join(home, name);
    let owner: { pid?: unknown; repo?: unknown } = {};
    try {
      owner = JSON.parse(fs.readFileSync(path.join(dir, 'owner.json'), 'utf8')) as typeof owner;
    } catch {
      continue;
    }
    if (owner.repo !== userRoot || typeof owner.pid !== 'number' || alive(owner.pid)) continue;
    fs.rmSync(dir, { recursive: true, force: true });
    removed++;
  }
  if (removed > 0) await safeGit(userRoot, ['worktree', 'prune']).catch(() => {});
  return removed;
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
