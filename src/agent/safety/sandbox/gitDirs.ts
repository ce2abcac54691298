import * as fs from 'node:fs';
import * as path from 'node:path';

// Where git keeps a workspace's repository: `.git` as a folder, a `.git` file naming the real one
// (worktrees, submodules), or a repository enclosing the workspace. Commands may write objects and
// refs there, but its hooks and config decide what runs later outside Keel: those stay read-only.

export interface GitDirs {
  /** The per-worktree git dir (HEAD, index). */
  readonly gitDir: string;
  /** The shared dir (objects, refs, hooks, config); the same as gitDir outside worktrees. */
  readonly commonDir: string;
}

function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
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
    const match = /^gitdir:\s*(.+?)\s*$/m.exec(fs.readFileSync(dotGit, 'utf8'));
    if (!match?.[1]) return undefined;
    gitDir = path.resolve(path.dirname(dotGit), match[1]);
    if (!isDir(gitDir)) return undefined;
  } else if (!stat.isDirectory()) return undefined;
  let commonDir = gitDir;
  try {
    const common = fs.readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim();
    if (common) commonDir = path.resolve(gitDir, common);
  } catch {
    // Not a linked worktree.
  }
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
