import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type {
  ApprovalsPort,
  DirEntry,
  FileStat,
  Host,
  SandboxPort,
  StoragePort,
  WorkspacePort,
} from '../host.ts';
import { auditPath, createAuditLog } from '../safety/audit.ts';
import { createTrustRoom } from '../trust/room.ts';
import { createSandbox, type Sandbox } from '../safety/sandbox/sandbox.ts';
import { defaultProbeCacheFile } from '../safety/sandbox/probeCache.ts';
import type { SandboxSettingsInput } from '../safety/sandbox/settings.ts';
import { createNodeShell } from './nodeShell.ts';

// Node implementations of the host ports: used by the CLI, by tests, and (storage, shell) by the
// VS Code host too.

export function createNodeWorkspace(roots: readonly string[], trusted = true): WorkspacePort {
  const realRoots = roots.map((r) => fs.realpathSync(path.resolve(r)));
  return {
    roots: realRoots,
    async readFile(p) {
      return new Uint8Array(await fs.promises.readFile(p));
    },
    async stat(p): Promise<FileStat | undefined> {
      try {
        const s = await fs.promises.stat(p);
        return {
          type: s.isFile() ? 'file' : s.isDirectory() ? 'directory' : 'other',
          size: s.size,
          mtimeMs: s.mtimeMs,
          mode: s.mode & 0o7777,
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async readDirectory(p): Promise<DirEntry[]> {
      const entries = await fs.promises.readdir(p, { withFileTypes: true });
      return entries.map((e) => ({
        name: e.name,
        type: e.isFile() ? 'file' : e.isDirectory() ? 'directory' : e.isSymbolicLink() ? 'symlink' : 'other',
      }));
    },
    async writeFile(p, content, options) {
      await fs.promises.mkdir(path.dirname(p), { recursive: true });
      // Unique per write: two writes of one file at the same millisecond must not share a temp file.
      const tmp = path.join(
        path.dirname(p),
        `.${path.basename(p)}.keel-${process.pid}-${Date.now()}-${randomBytes(4).toString('hex')}.tmp`,
      );
      const handle = await fs.promises.open(tmp, 'w', options?.mode ?? 0o644);
      try {
        await handle.writeFile(content);
        await handle.sync();
      } finally {
        await handle.close();
      }
      if (options?.mode !== undefined) await fs.promises.chmod(tmp, options.mode);
      await fs.promises.rename(tmp, p);
    },
    async deleteFile(p) {
      await fs.promises.rm(p);
    },
    async rename(from, to) {
      await fs.promises.mkdir(path.dirname(to), { recursive: true });
      await fs.promises.rename(from, to);
    },
    isTrusted: () => trusted,
  };
}

// Append-only files stay open: reopening per line costs more than the write. fsync is separate
// (see StoragePort.sync) because it is what makes a turn slow, and a write() already survives kill -9.
const openAppends = new Map<string, number>();
const lastSync = new Map<string, number>();

function appendFd(p: string): number {
  let fd = openAppends.get(p);
  if (fd === undefined) {
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fd = fs.openSync(p, 'a');
    openAppends.set(p, fd);
  }
  return fd;
}

process.once('exit', () => {
  for (const fd of openAppends.values()) {
    try {
      fs.fsyncSync(fd);
      fs.closeSync(fd);
    } catch {
      // closing anyway
    }
  }
});

export function createNodeStorage(): StoragePort {
  return {
    appendLine(p, line) {
      const data = line.endsWith('\n') ? line : `${line}\n`;
      try {
        fs.writeSync(appendFd(p), data);
      } catch (error) {
        // The file may have been moved or truncated underneath us: reopen once.
        const stale = openAppends.get(p);
        openAppends.delete(p);
        if (stale !== undefined) fs.closeSync(stale);
        if ((error as NodeJS.ErrnoException).code !== 'EBADF') throw error;
        fs.writeSync(appendFd(p), data);
      }
    },
    sync(p) {
      // At most one flush per file per second, in the background: it costs milliseconds of kernel time
      // and a line that was written already survives the process; this guards against power loss.
      const fd = openAppends.get(p);
      const now = Date.now();
      if (fd === undefined || now - (lastSync.get(p) ?? 0) < 1000) return;
      lastSync.set(p, now);
      fs.fdatasync(fd, () => {});
    },
    readText(p) {
      try {
        return fs.readFileSync(p, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    writeText(p, text) {
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, text);
    },
    list(dir) {
      try {
        return fs.readdirSync(dir);
      } catch {
        return [];
      }
    },
  };
}

/** `.keel/` ignores itself so users never commit Keel's state by accident. */
export function ensureStateDir(stateDir: string): void {
  try {
    fs.mkdirSync(stateDir, { recursive: true });
    const ignore = path.join(stateDir, '.gitignore');
    if (!fs.existsSync(ignore)) fs.writeFileSync(ignore, '*\n');
  } catch (error) {
    throw new Error(stateDirProblem(stateDir, realCause(stateDir, error as NodeJS.ErrnoException)));
  }
}

/**
 * Node's recursive mkdir reports ENOENT on a read-only file system even though the parent exists; a
 * plain mkdir of the last step tells the real reason (EROFS, EACCES).
 */
function realCause(dir: string, error: NodeJS.ErrnoException): NodeJS.ErrnoException {
  if (error.code !== 'ENOENT' || !fs.existsSync(path.dirname(dir))) return error;
  try {
    fs.mkdirSync(dir);
    return error;
  } catch (plain) {
    return plain as NodeJS.ErrnoException;
  }
}

/** Why Keel cannot keep its state in the workspace, and what to do, instead of a bare errno. */
function stateDirProblem(stateDir: string, error: NodeJS.ErrnoException): string {
  const what = `Keel keeps its session logs, checkpoints and audit log in ${stateDir}`;
  if (error.code === 'EEXIST' || error.code === 'ENOTDIR')
    return `${what}, but a file of that name is in the way. Move the file, then try again.`;
  if (error.code === 'EROFS')
    return `${what}, but the workspace is on a read-only file system (EROFS). Open a folder you can write to.`;
  if (error.code === 'EACCES' || error.code === 'EPERM')
    return `${what}, but cannot write there (${error.code}). Open a folder you can write to, or fix its permissions.`;
  return `${what}, but cannot create it: ${error.message}`;
}

/** The sandbox's own audit lines (the proxy's domain decisions) in `<stateDir>/audit.jsonl`. */
export function sandboxAudit(stateDir: string): (entry: Record<string, unknown>) => void {
  const log = createAuditLog(createNodeStorage(), auditPath(stateDir), Date.now);
  return (entry) => log.write({ type: 'network_decision', ...entry });
}

/**
 * The sandbox is made (bubblewrap probed, a temp dir created) when something first asks for it — a
 * command, `keel run`'s notice — not with the host: `keel tool LS` never pays for the probe.
 */
function lazySandbox(make: () => Sandbox): SandboxPort & { dispose(): void } {
  let made: Sandbox | undefined;
  const get = () => {
    made ??= make();
    return made;
  };
  return {
    get info() {
      return get().info;
    },
    wrap: (argv, options) => get().wrap(argv, options),
    explain: (output) => get().explain(output),
    dispose: () => made?.dispose(),
  };
}

export interface NodeHostOptions {
  readonly workspace: string;
  /** More workspace folders after the first (absolute); `.keel` state stays in the first. */
  readonly extraRoots?: readonly string[];
  readonly approvals: ApprovalsPort;
  readonly trusted?: boolean;
  readonly ripgrepPath?: string;
  readonly log?: Host['log'];
  /** Run commands in the OS sandbox with these settings (absent: unconfined, as in unit tests). */
  readonly sandbox?: SandboxSettingsInput;
  /** How this host's user approves what the workspace supplies (default: `keel trust`). */
  readonly howToApproveTrust?: string;
}

export function createNodeHost(options: NodeHostOptions): Host {
  const workspace = createNodeWorkspace(
    [options.workspace, ...(options.extraRoots ?? [])],
    options.trusted ?? true,
  );
  const stateDir = path.join(workspace.roots[0]!, '.keel');
  ensureStateDir(stateDir);
  const settings = options.sandbox;
  const trust = createTrustRoom({
    root: workspace.roots[0]!,
    workspaceTrusted: workspace.isTrusted(),
    ...(options.howToApproveTrust ? { howToApprove: options.howToApproveTrust } : {}),
  });
  const sandbox = settings
    ? lazySandbox(() =>
        createSandbox({
          settings,
          roots: workspace.roots,
          stateDir,
          trustedDomains: trust.trustedDomains(),
          approvals: options.approvals,
          audit: sandboxAudit(stateDir),
          probeCacheFile: defaultProbeCacheFile(),
        }),
      )
    : undefined;
  if (sandbox) process.once('exit', () => sandbox.dispose());
  return {
    workspace,
    approvals: options.approvals,
    shell: createNodeShell(sandbox ? { sandbox } : {}),
    clock: { now: () => Date.now() },
    storage: createNodeStorage(),
    stateDir,
    trust,
    ...(options.ripgrepPath ? { ripgrepPath: options.ripgrepPath } : {}),
    ...(options.log ? { log: options.log } : {}),
  };
}
