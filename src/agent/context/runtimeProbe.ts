import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { RuntimeFacts } from './antiDrift.ts';
import { cachedDirtyCount } from './gitDirty.ts';

// The runtime layer's facts on Node: the day, the OS, the shell commands run in, the workspace and its git branch.
// The branch is read from the repository's HEAD file, never by running git (a repository's own config
// can make git run programs: core.fsmonitor, filters). Threat: a hostile repository writes its HEAD (or a
// `.git` file pointing elsewhere) to smuggle text into the model's context or to hang the read (a FIFO,
// /dev/zero): only a regular file is read, at most 4 KB, and only a plain ref name is kept — anything
// else is left out of the layer. The dirty state is the one fact that needs git: gitDirty.ts runs it
// with the repository's programs turned off, bounded in time, and keeps only a count.

const MAX_HEAD_BYTES = 4096;
const REF_NAME = /^[A-Za-z0-9._/-]{1,120}$/;
const SHA = /^[0-9a-f]{40,64}$/;

function readSmallFile(file: string): string | undefined {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile() || stat.size > MAX_HEAD_BYTES) return undefined;
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The git directory of `workspace`: `.git/`, or the one a `.git` file (worktree) names. */
function gitDir(workspace: string): string | undefined {
  const dotGit = path.join(workspace, '.git');
  try {
    const stat = fs.statSync(dotGit);
    if (stat.isDirectory()) return dotGit;
    if (!stat.isFile()) return undefined;
  } catch {
    return undefined;
  }
  const m = /^gitdir:\s*(.+)\s*$/m.exec(readSmallFile(dotGit) ?? '');
  return m?.[1] ? path.resolve(workspace, m[1].trim()) : undefined;
}

/** The checked-out branch ("main"), or "detached at <sha>", or undefined. */
export function gitBranch(workspace: string): string | undefined {
  const dir = gitDir(workspace);
  if (!dir) return undefined;
  const head = readSmallFile(path.join(dir, 'HEAD'))?.trim();
  if (!head) return undefined;
  const ref = /^ref:\s*refs\/heads\/(.+)$/.exec(head)?.[1];
  if (ref !== undefined) return REF_NAME.test(ref) && !ref.includes('..') ? ref : undefined;
  return SHA.test(head) ? `detached at ${head.slice(0, 12)}` : undefined;
}

export function nodeRuntimeFacts(workspace: string | undefined): (now: number) => RuntimeFacts {
  const system = `${os.type()} ${os.release()} (${process.arch})`;
  const dirtyAt = workspace ? cachedDirtyCount(workspace) : undefined;
  return (now) => {
    const branch = workspace ? gitBranch(workspace) : undefined;
    // Only in a repository (a branch was read): no git at all elsewhere.
    const dirty = branch !== undefined ? dirtyAt?.(now) : undefined;
    return {
      date: new Date(now).toISOString().slice(0, 10),
      os: system,
      // What the Bash tool runs commands with (not the user's login shell).
      shell: 'bash',
      ...(workspace ? { workspace } : {}),
      ...(branch ? { branch } : {}),
      ...(dirty !== undefined ? { dirty } : {}),
    };
  };
}
