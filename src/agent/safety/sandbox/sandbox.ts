import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SandboxDenial, SandboxedArgv, SandboxInfo, SandboxPort } from '../../host.ts';
import { explainOutput } from './denials.ts';
import { activeHooks, findGitDirs, type GitDirs } from './gitDirs.ts';
import { probeSandbox, type SandboxStatus } from './probe.ts';
import { seccompProgram } from './seccomp.ts';
import {
  resolveDenyPath,
  SHELL_STARTUP_FILES,
  type SandboxSettingsInput,
  sandboxSettingsSchema,
} from './settings.ts';

// The session's OS sandbox (Linux: bubblewrap + a seccomp filter). Each command gets a fresh view:
// `/` read-only (so /tmp too: $TMPDIR points at the session temp dir), the workspace roots and a per-session temp dir writable, git hooks
// and config, `.keel/` and shell start-up files read-only again inside them, the secrets on the
// deny list hidden, new user/PID/IPC/network namespaces, no capabilities, and seccomp refusing new
// AF_UNIX sockets and io_uring. Everything is decided per wrap, so a `.git` or a secret that appears
// during the session is covered from the next command on.

export interface SandboxOptions {
  readonly settings?: SandboxSettingsInput;
  /** Writable workspace roots (canonical). */
  readonly roots: readonly string[];
  /** Keel's state dir (`.keel/`): read-only for commands. */
  readonly stateDir?: string;
  readonly home?: string;
  /** Where the per-session temp dir is made (default: the OS temp dir). */
  readonly tmpBase?: string;
  /** A status probed earlier (tests, doctor); probed now when absent. */
  readonly status?: SandboxStatus;
}

export interface Sandbox extends SandboxPort {
  readonly status: SandboxStatus;
  /** The per-session temp dir ($TMPDIR inside the sandbox); undefined without a sandbox. */
  readonly tempDir: string | undefined;
  /** Paths on the deny list, absolute. */
  readonly denyRead: readonly string[];
  dispose(): void;
}

function exists(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch {
    return undefined;
  }
}

function inside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function realOrSelf(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

export function createSandbox(options: SandboxOptions): Sandbox {
  const settings = sandboxSettingsSchema.parse(options.settings ?? {});
  const home = options.home ?? os.homedir();
  const status = options.status ?? probeSandbox({ bwrapPath: settings.bwrapPath, enabled: settings.enabled });
  const info: SandboxInfo = {
    tier: status.tier,
    summary: status.summary,
    ...(status.reason ? { reason: status.reason } : {}),
    ...(status.fix ? { fix: status.fix } : {}),
    ...(settings.failIfUnavailable ? { failIfUnavailable: true } : {}),
  };
  const roots = options.roots.map(realOrSelf);
  const denyRead = settings.denyRead.map((entry) => resolveDenyPath(entry, home));
  const writable = (p: string) => roots.some((root) => inside(root, p));

  let tempDir: string | undefined;
  let filterFile: string | undefined;
  if (status.tier === 'bwrap') {
    tempDir = fs.realpathSync(fs.mkdtempSync(path.join(options.tmpBase ?? os.tmpdir(), 'keel-sandbox-')));
    fs.mkdirSync(path.join(tempDir, 'tmp'));
    filterFile = path.join(tempDir, 'seccomp.bpf');
    fs.writeFileSync(filterFile, seccompProgram() as Buffer, { mode: 0o400 });
  }
  const sessionTmp = tempDir ? path.join(tempDir, 'tmp') : undefined;

  function gitArgs(args: string[], dirs: GitDirs): void {
    for (const dir of new Set([dirs.gitDir, dirs.commonDir])) {
      if (!writable(dir)) args.push('--bind', dir, dir);
    }
    const hooks = path.join(dirs.commonDir, 'hooks');
    // A missing hooks folder would let a command create one; make it now so it can be pinned.
    if (!exists(hooks)) fs.mkdirSync(hooks, { recursive: true });
    args.push('--ro-bind', hooks, hooks);
    for (const file of [
      path.join(dirs.commonDir, 'config'),
      path.join(dirs.gitDir, 'config.worktree'),
      path.join(dirs.commonDir, 'info', 'attributes'),
    ]) {
      if (exists(file)) args.push('--ro-bind', file, file);
    }
  }

  function wrap(
    argv: readonly string[],
    wrapOptions: { cwd: string; network?: boolean },
  ): SandboxedArgv | undefined {
    if (status.tier !== 'bwrap' || !status.bwrap || !filterFile || !sessionTmp) return undefined;
    const args = [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-ipc',
      ...(wrapOptions.network ? [] : ['--unshare-net']),
      '--die-with-parent',
      // No --new-session: callers spawn detached (a new session without a terminal), which already
      // rules out TIOCSTI; it costs a few ms per command. UTS/cgroup namespaces protect nothing here.
      '--cap-drop',
      'ALL',
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--proc',
      '/proc',
    ];
    for (const root of roots) args.push('--bind', root, root);
    args.push('--bind', sessionTmp, sessionTmp);
    // Pinned read-only again inside the writable roots.
    const gitless: string[] = [];
    for (const root of roots) {
      const dirs = findGitDirs(root);
      if (dirs) gitArgs(args, dirs);
      else gitless.push(root);
      for (const name of ['.keel', ...SHELL_STARTUP_FILES]) {
        const p = path.join(root, name);
        if (exists(p)) args.push('--ro-bind', p, p);
      }
    }
    if (options.stateDir && exists(options.stateDir) && writable(options.stateDir))
      args.push('--ro-bind', options.stateDir, options.stateDir);
    for (const name of SHELL_STARTUP_FILES) {
      const p = path.join(home, name);
      if (writable(p) && exists(p)) args.push('--ro-bind', p, p);
    }
    // Secrets: an empty read-only folder over a folder, /dev/null over a file.
    for (const denied of denyRead) {
      for (const p of new Set([denied, realOrSelf(denied)])) {
        const stat = exists(p);
        if (!stat || roots.some((root) => inside(p, root))) continue;
        if (fs.statSync(p, { throwIfNoEntry: false })?.isDirectory())
          args.push('--tmpfs', p, '--remount-ro', p);
        else args.push('--ro-bind', '/dev/null', p);
      }
    }
    args.push('--chdir', wrapOptions.cwd, '--seccomp', '3', '--', ...argv);
    const fd = fs.openSync(filterFile, 'r');
    let released = false;
    return {
      file: status.bwrap,
      args,
      fds: [fd],
      env: { TMPDIR: sessionTmp },
      release() {
        if (released) return;
        released = true;
        fs.closeSync(fd);
      },
      settle: () => settleGitless(gitless),
    };
  }

  return {
    status,
    info,
    tempDir,
    denyRead,
    wrap,
    explain: (output) => explainOutput({ ...output, denyRead }),
    dispose() {
      if (tempDir) fs.rmSync(tempDir, { recursive: true, force: true });
    },
  };
}

/**
 * A `.git` made by the command itself (`git init && echo … > .git/hooks/pre-commit`) was not there to
 * pin: remove any hook it planted and any hooksPath/fsmonitor it set, and report it.
 */
function settleGitless(gitless: readonly string[]): SandboxDenial[] {
  const denials: SandboxDenial[] = [];
  for (const root of gitless) {
    const dirs = findGitDirs(root);
    if (!dirs || !inside(root, dirs.commonDir)) continue;
    for (const hook of activeHooks(path.join(dirs.commonDir, 'hooks'))) {
      fs.rmSync(hook, { recursive: true, force: true });
      denials.push({ kind: 'write', target: hook, detail: 'git hook written into a new .git; removed' });
    }
    const config = path.join(dirs.commonDir, 'config');
    const text = exists(config) ? fs.readFileSync(config, 'utf8') : '';
    const cleaned = text.replace(/^\s*(hookspath|fsmonitor)\s*=.*\n?/gim, '');
    if (cleaned !== text) {
      fs.writeFileSync(config, cleaned);
      denials.push({
        kind: 'write',
        target: config,
        detail: 'core.hooksPath/fsmonitor set in a new .git; removed',
      });
    }
  }
  return denials;
}
