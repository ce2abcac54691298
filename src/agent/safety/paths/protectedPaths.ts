import { execFile } from 'node:child_process';
import * as path from 'node:path';

// Files the user did not author (VCS metadata, Keel's own state, lock files, generated/ignored files)
// and secrets may be changed only after the user says yes. This module only classifies; the caller
// asks. Paths given here are canonical (already through the path guard).

export type ProtectedReason = 'vcs' | 'keel_state' | 'lockfile' | 'secret' | 'git_ignored';

export type ProtectedVerdict =
  | { readonly protected: false }
  | { readonly protected: true; readonly reason: ProtectedReason; readonly detail: string };

export interface ProtectedScope {
  readonly roots: readonly string[];
  readonly stateDir: string;
}

export interface ProtectedPaths {
  check(canonicalPath: string, signal?: AbortSignal): Promise<ProtectedVerdict>;
}

export const LOCK_FILES: ReadonlySet<string> = new Set([
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lock',
  'bun.lockb',
  'deno.lock',
  'cargo.lock',
  'poetry.lock',
  'pipfile.lock',
  'pdm.lock',
  'uv.lock',
  'gemfile.lock',
  'composer.lock',
  'go.sum',
  'flake.lock',
  'mix.lock',
  'pubspec.lock',
  'podfile.lock',
  'package.resolved',
  'packages.lock.json',
  'gradle.lockfile',
  'conda-lock.yml',
]);

const VCS_DIRS = new Set(['.git', '.hg', '.svn']);
// Templates are authored and committed; they hold no secrets.
const ENV_TEMPLATES = /^\.env\.(example|sample|template|dist|defaults)$/i;
const SECRET_NAMES = new Set(['.netrc', '.npmrc', '.pypirc']);
const SECRET_PATTERNS = [/^\.env/i, /\.(pem|key|p12|pfx)$/i, /^id_(rsa|dsa|ecdsa|ed25519)(\.|$)/i];

const ok: ProtectedVerdict = { protected: false };
const yes = (reason: ProtectedReason, detail: string): ProtectedVerdict => ({
  protected: true,
  reason,
  detail,
});

function within(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Inside Keel's state dir, only what the agent keeps as its own notes is freely writable. */
function keelOwned(relInsideState: string): boolean {
  const parts = relInsideState.split(path.sep).filter(Boolean);
  const first = parts[0]?.toLowerCase() ?? '';
  if (first === 'memory' || first === 'long-tasks') return true;
  return parts.length === 1 && /^(todos?|progress)([._-].*)?$/i.test(first);
}

/**
 * The rules that need no process: decided from the path alone. `undefined` means "not decided:
 * ask git whether it is ignored".
 */
export function classifyStatic(canonicalPath: string, scope: ProtectedScope): ProtectedVerdict | undefined {
  const stateDir = path.resolve(scope.stateDir);
  if (within(stateDir, canonicalPath)) {
    return keelOwned(path.relative(stateDir, canonicalPath))
      ? ok
      : yes('keel_state', "inside Keel's state directory (.keel/)");
  }
  const root = scope.roots.find((r) => within(r, canonicalPath));
  const rel = root ? path.relative(root, canonicalPath) : canonicalPath;
  // Lower-cased: on case-insensitive file systems `.GIT/config` is the same file.
  const parts = rel.split(path.sep).filter(Boolean);
  const lower = parts.map((p) => p.toLowerCase());
  const vcs = lower.find((p) => VCS_DIRS.has(p));
  if (vcs) return yes('vcs', `inside version-control metadata (${vcs}/)`);
  const keelIndex = lower.indexOf('.keel');
  if (keelIndex >= 0) {
    return keelOwned(parts.slice(keelIndex + 1).join(path.sep))
      ? ok
      : yes('keel_state', "inside Keel's state directory (.keel/)");
  }
  const base = parts.at(-1) ?? '';
  if (LOCK_FILES.has(base.toLowerCase()))
    return yes('lockfile', `a lock file (${base}) maintained by a tool`);
  if (
    !ENV_TEMPLATES.test(base) &&
    (SECRET_NAMES.has(base.toLowerCase()) || SECRET_PATTERNS.some((re) => re.test(base)))
  ) {
    return yes('secret', `may hold secrets (${base})`);
  }
  return undefined;
}

function gitEnv(): NodeJS.ProcessEnv {
  // A GIT_DIR/GIT_WORK_TREE inherited from a hook or a parent git would point at the wrong repo.
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
  return env;
}

/** Exit 0 = ignored; 1 = not ignored; anything else (no repo, no git) = treat as not ignored. */
export function isGitIgnored(canonicalPath: string, cwd: string, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    try {
      execFile(
        'git',
        ['check-ignore', '-q', '--', canonicalPath],
        { cwd, timeout: 3000, env: gitEnv(), ...(signal ? { signal } : {}) },
        (error) => resolve(error === null),
      );
    } catch {
      resolve(false);
    }
  });
}

export interface ProtectedPathsOptions {
  /** Ask git about ignored files (default true). */
  readonly git?: boolean;
  /** How long a git answer is trusted (default 15 s): .gitignore may change during a session. */
  readonly cacheMs?: number;
  readonly now?: () => number;
}

export function createProtectedPaths(
  scope: ProtectedScope,
  options: ProtectedPathsOptions = {},
): ProtectedPaths {
  const cacheMs = options.cacheMs ?? 15_000;
  const now = options.now ?? Date.now;
  const cache = new Map<string, { at: number; ignored: Promise<boolean> }>();
  return {
    async check(canonicalPath, signal) {
      const decided = classifyStatic(canonicalPath, scope);
      if (decided) return decided;
      if (options.git === false) return ok;
      const root = scope.roots.find((r) => within(r, canonicalPath));
      if (!root) return ok;
      let entry = cache.get(canonicalPath);
      if (!entry || now() - entry.at > cacheMs) {
        entry = { at: now(), ignored: isGitIgnored(canonicalPath, root, signal) };
        cache.set(canonicalPath, entry);
      }
      const ignored = await entry.ignored;
      // An aborted git call answers "not ignored"; that answer must not outlive the abort.
      if (signal?.aborted) cache.delete(canonicalPath);
      return ignored ? yes('git_ignored', 'ignored by git (generated or local-only file)') : ok;
    },
  };
}
