import { spawnSync } from 'node:child_process';

// The runtime layer's "dirty state": how many files `git status --porcelain` lists as changed or
// untracked, a count only (no file name reaches the model: names are the repository's to choose).
//
// Threat: the repository is hostile, and git runs programs its config names — core.fsmonitor on every
// status, clean filters (filter.<driver>.clean/process, chosen by .gitattributes) when a file's index
// entry is racy and git re-reads it, hooks, and the same again inside submodules. So git runs here with
// fsmonitor, the untracked cache and hooks off, every filter driver its config defines emptied (a
// driver with no command is no filter), submodules not entered, no optional locks (status writes
// nothing), none of the caller's GIT_* variables, and a hard time limit: a hang or a huge tree costs at
// most PROBE_TIMEOUT_MS and then the count is simply left out. Keel's own `.keel/` is not counted (its
// logs change on every call). The probe is synchronous and cached (CACHE_MS): it is asked before each
// model call, and runs at most once in that time.

const PROBE_TIMEOUT_MS = 1_500;
const CACHE_MS = 30_000;

const SAFE_GIT = [
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.untrackedCache=false',
  '-c',
  'core.hooksPath=/dev/null',
  '--no-pager',
  '--no-optional-locks',
];

function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return { ...env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' };
}

function git(cwd: string, args: readonly string[]): string | undefined {
  const r = spawnSync('git', [...SAFE_GIT, ...args], {
    cwd,
    env: gitEnv(),
    encoding: 'utf8',
    timeout: PROBE_TIMEOUT_MS,
    maxBuffer: 16 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return r.status === 0 && !r.error ? r.stdout : undefined;
}

/** `-c filter.X.clean= …` for every filter driver the repository's config (includes too) defines. */
function emptiedFilters(cwd: string): string[] | undefined {
  const r = spawnSync(
    'git',
    [...SAFE_GIT, 'config', '--includes', '--name-only', '--get-regexp', '^filter\\.'],
    { cwd, env: gitEnv(), encoding: 'utf8', timeout: PROBE_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  if (r.error) return undefined;
  // Exit 1: no such key (no filters). Anything else: a config git cannot read — do not run status.
  if (r.status === 1) return [];
  if (r.status !== 0) return undefined;
  const drivers = new Set<string>();
  for (const key of r.stdout.split('\n')) {
    const m = /^filter\.(.+)\.[^.]+$/.exec(key.trim());
    if (m?.[1]) drivers.add(m[1]);
  }
  return [...drivers].flatMap((d) => [
    '-c',
    `filter.${d}.clean=`,
    '-c',
    `filter.${d}.smudge=`,
    '-c',
    `filter.${d}.process=`,
  ]);
}

/** Changed and untracked files (`.keel/` aside); undefined when not a repository, or git failed or was slow. */
export function gitDirtyCount(workspace: string): number | undefined {
  const filters = emptiedFilters(workspace);
  if (filters === undefined) return undefined;
  const out = git(workspace, [
    ...filters,
    'status',
    '--porcelain',
    '-z',
    '--ignore-submodules=all',
    '--',
    '.',
    ':(exclude).keel',
  ]);
  if (out === undefined) return undefined;
  // -z: one NUL-terminated entry per file; a rename's second field (its old name) follows it.
  const entries = out.split('\0').filter((e) => e !== '');
  let count = 0;
  for (let i = 0; i < entries.length; i++) {
    count++;
    if (/^[RC]/.test(entries[i]!)) i++;
  }
  return count;
}

/** gitDirtyCount, asked again at most every CACHE_MS. */
export function cachedDirtyCount(workspace: string): (now: number) => number | undefined {
  let at = Number.NEGATIVE_INFINITY;
  let value: number | undefined;
  return (now) => {
    if (now - at >= CACHE_MS || now < at) {
      value = gitDirtyCount(workspace);
      at = now;
    }
    return value;
  };
}
