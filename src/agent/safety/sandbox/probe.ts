import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { seccompProgram } from './seccomp.ts';

// Which confinement this machine offers, probed once per session by running what a command would
// run: `bwrap --unshare-user --unshare-net … -- true`. The answer is always shown to the user
// (status bar, panel, `keel run`'s first line on stderr, `keel doctor`).

export type SandboxTier = 'bwrap' | 'none';

export interface SandboxStatus {
  readonly tier: SandboxTier;
  /** One line for the status bar tooltip, the panel header and stderr. */
  readonly summary: string;
  /** Why there is no sandbox (tier none). */
  readonly reason?: string;
  /** What the user can do about it. */
  readonly fix?: string;
  /** The bwrap executable that worked (tier bwrap). */
  readonly bwrap?: string;
  /** Off by the user's choice (setting / flag), not for want of support. */
  readonly disabled?: boolean;
  /** Detail lines for `keel doctor`. */
  readonly checks: readonly { readonly name: string; readonly ok: boolean; readonly detail: string }[];
}

export interface ProbeOptions {
  readonly bwrapPath: string;
  readonly enabled?: boolean;
  readonly platform?: NodeJS.Platform;
  readonly env?: NodeJS.ProcessEnv;
}

/** `name` on PATH, or the path itself when it contains a slash. */
export function findExecutable(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = name.includes('/')
    ? [path.resolve(name)]
    : (env.PATH ?? '/usr/bin:/bin')
        .split(':')
        .filter(Boolean)
        .map((dir) => path.join(dir, name));
  for (const candidate of candidates) {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

function readTrimmed(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

const UNSANDBOXED =
  'commands run without an OS sandbox; the command policy and approvals are the only barrier';

function none(
  reason: string,
  fix: string | undefined,
  checks: SandboxStatus['checks'],
  disabled = false,
): SandboxStatus {
  return {
    tier: 'none',
    summary: disabled
      ? `Sandbox off (by setting): ${UNSANDBOXED}.`
      : `No sandbox (${reason}): ${UNSANDBOXED}.`,
    reason,
    ...(fix ? { fix } : {}),
    ...(disabled ? { disabled } : {}),
    checks,
  };
}

export function probeSandbox(options: ProbeOptions): SandboxStatus {
  const platform = options.platform ?? process.platform;
  const checks: { name: string; ok: boolean; detail: string }[] = [];
  if (options.enabled === false) {
    checks.push({
      name: 'setting',
      ok: false,
      detail: 'the sandbox is turned off (keel.sandbox.enabled / --no-sandbox)',
    });
    return none(
      'turned off',
      'Turn keel.sandbox.enabled back on (CLI: drop --no-sandbox / KEEL_SANDBOX=off).',
      checks,
      true,
    );
  }
  if (platform === 'win32') {
    checks.push({ name: 'platform', ok: false, detail: 'native Windows has no supported sandbox' });
    return none(
      'native Windows',
      'Open the folder in WSL2 (Remote - WSL): Keel then runs the Linux sandbox there.',
      checks,
    );
  }
  if (platform === 'darwin') {
    // sandbox-exec support is not built yet; say so rather than pretend.
    checks.push({ name: 'platform', ok: false, detail: 'macOS sandbox-exec is not supported by this build' });
    return none('macOS sandbox-exec not supported yet', undefined, checks);
  }
  if (platform !== 'linux') {
    checks.push({ name: 'platform', ok: false, detail: `${platform} has no supported sandbox` });
    return none(`${platform} unsupported`, undefined, checks);
  }
  checks.push({ name: 'platform', ok: true, detail: `linux ${process.arch}` });
  const filter = seccompProgram();
  checks.push({
    name: 'seccomp',
    ok: filter !== undefined,
    detail: filter
      ? `filter generated (${filter.length / 8} instructions)`
      : `no syscall table for ${process.arch}`,
  });
  if (!filter) return none(`no seccomp filter for ${process.arch}`, undefined, checks);
  const bwrap = findExecutable(options.bwrapPath, options.env);
  if (!bwrap) {
    checks.push({ name: 'bubblewrap', ok: false, detail: `${options.bwrapPath} not found` });
    return none(
      'bubblewrap not installed',
      'Install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap).',
      checks,
    );
  }
  const userns = readTrimmed('/proc/sys/user/max_user_namespaces');
  const apparmor = readTrimmed('/proc/sys/kernel/apparmor_restrict_unprivileged_userns');
  const run = spawnSync(
    bwrap,
    [
      '--unshare-user',
      '--unshare-net',
      '--unshare-pid',
      '--die-with-parent',
      '--ro-bind',
      '/',
      '/',
      '--proc',
      '/proc',
      '--',
      'true',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000, encoding: 'utf8' },
  );
  if (run.status !== 0) {
    const stderr = (run.stderr || String(run.error ?? '')).trim().split('\n')[0] ?? '';
    checks.push({ name: 'bubblewrap', ok: false, detail: `${bwrap}: ${stderr || `exit ${run.status}`}` });
    if (userns === '0') {
      checks.push({ name: 'user namespaces', ok: false, detail: 'user.max_user_namespaces = 0' });
      return none(
        'user namespaces are off',
        'Enable them: sudo sysctl -w user.max_user_namespaces=15000',
        checks,
      );
    }
    if (apparmor === '1') {
      checks.push({
        name: 'AppArmor',
        ok: false,
        detail: 'kernel.apparmor_restrict_unprivileged_userns = 1',
      });
      return none(
        "AppArmor blocks bubblewrap's user namespace",
        'Ubuntu 24.04+: add an AppArmor profile for /usr/bin/bwrap allowing userns (see the README), or sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0',
        checks,
      );
    }
    return none(
      `bubblewrap cannot start (${stderr || `exit ${run.status}`})`,
      'Run `keel doctor` for details.',
      checks,
    );
  }
  checks.push({ name: 'bubblewrap', ok: true, detail: `${bwrap}: user, network and PID namespaces work` });
  return {
    tier: 'bwrap',
    summary:
      'Sandbox on (bubblewrap + seccomp): writes only in the workspace and a temp dir, secrets unreadable, no network, no Unix sockets.',
    bwrap,
    checks,
  };
}
