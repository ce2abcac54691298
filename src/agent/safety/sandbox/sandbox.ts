import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ApprovalsPort, SandboxDenial, SandboxedArgv, SandboxInfo, SandboxPort } from '../../host.ts';
import { explainOutput } from './denials.ts';
import { workspaceStateHome } from '../../trust/paths.ts';
import { allowedDomainsFor, createDomainPolicy, WORKSPACE_NETWORK_FILE } from './domains.ts';
import { type NetworkHolder, PROXY_PORT, startNetworkHolder } from './netns.ts';
import { findExecutable, type SandboxStatus } from './probe.ts';
import { probeSandboxCached } from './probeCache.ts';
import { type DomainProxy, type ProxyDenial, startDomainProxy } from './proxy.ts';
import { planRunLater, settleRunLater } from './runLater.ts';
import { seccompProgram } from './seccomp.ts';
import {
  keelDirs,
  resolveDenyPath,
  SHELL_STARTUP_FILES,
  type SandboxSettings,
  type SandboxSettingsInput,
  sandboxSettingsSchema,
} from './settings.ts';

// The session's OS sandbox (Linux: bubblewrap + a seccomp filter). Each command gets a fresh view:
// `/` read-only (so /tmp too: $TMPDIR points at the session temp dir), the workspace roots and a
// per-session temp dir writable, the run-later set inside them pinned (runLater.ts: git hooks and
// config, `.vscode/`, `.npmrc`, `.keel/`… — what host tools act on later), the secrets on the deny
// list and Keel's own user folder hidden, new user/PID/IPC/network namespaces, no capabilities, and
// seccomp refusing new AF_UNIX sockets and io_uring. Everything is decided per wrap, so a `.git` or
// a secret that appears during the session is covered from the next command on.

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
  /** Where a working probe is remembered for the rest of the boot (absent: probe every time). */
  readonly probeCacheFile?: string;
  /** Asks about a domain not on the allow-list (the host's approvals); absent = such domains are refused. */
  readonly approvals?: ApprovalsPort;
  /** Where the proxy's domain decisions are recorded (the audit log). */
  readonly audit?: (entry: Record<string, unknown>) => void;
  /** Where the proxy really connects for a host name (tests: reserved `*.test` names → loopback). */
  readonly resolveHost?: (host: string) => string;
  /** Domains the workspace supplies (its registries) that the user approved (src/agent/trust/). */
  readonly trustedDomains?: readonly string[];
}

export interface Sandbox extends SandboxPort {
  readonly status: SandboxStatus;
  /** The per-session temp dir ($TMPDIR inside the sandbox); undefined without a sandbox. */
  readonly tempDir: string | undefined;
  /** Paths on the deny list, absolute. */
  readonly denyRead: readonly string[];
  /** Network inside the sandbox: through the domain proxy, or none (with why). Waits for the bridge. */
  readonly network: { readonly proxy: boolean; readonly reason?: string };
  dispose(): void;
}

const PROXY_URL = `http://127.0.0.1:${PROXY_PORT}`;
const PROXY_ENV: Readonly<Record<string, string>> = {
  HTTP_PROXY: PROXY_URL,
  HTTPS_PROXY: PROXY_URL,
  ALL_PROXY: PROXY_URL,
  http_proxy: PROXY_URL,
  https_proxy: PROXY_URL,
  all_proxy: PROXY_URL,
  // Servers a command starts inside the sandbox are reached directly.
  NO_PROXY: 'localhost,127.0.0.1,::1',
  no_proxy: 'localhost,127.0.0.1,::1',
  // Node's own fetch honours the variables only when asked to (Node ≥ 22.21 / 24).
  NODE_USE_ENV_PROXY: '1',
  // Version checks nobody asked for would each be a question about a registry.
  npm_config_update_notifier: 'false',
  NO_UPDATE_NOTIFIER: '1',
};

interface NetworkFilter {
  readonly proxy: DomainProxy;
  readonly holder: NetworkHolder;
  readonly nsenter: string;
  readonly denials: (ProxyDenial & { seq: number })[];
  seq: number;
}

/** The domain proxy and the namespace bridging it in, or why there is none. */
function startNetworkFilter(
  options: SandboxOptions,
  settings: SandboxSettings,
  status: SandboxStatus,
  tempDir: string,
): { filter?: NetworkFilter; reason?: string } {
  if (!settings.networkProxy)
    return { reason: 'the network proxy is turned off (keel.sandbox.networkProxy)' };
  const socat = findExecutable(settings.socatPath);
  if (!socat) return { reason: `${settings.socatPath} is not installed (apt-get install socat)` };
  const nsenter = findExecutable('nsenter');
  if (!nsenter) return { reason: 'nsenter (util-linux) is not installed' };
  const socketPath = path.join(tempDir, 'proxy.sock');
  const policy = createDomainPolicy({
    allowedDomains: allowedDomainsFor(options, settings, (domain, reason) =>
      options.audit?.({ type: 'network_allowlist_refused', domain, source: 'registry-config', reason }),
    ),
    ...(options.roots[0]
      ? { workspaceFile: path.join(workspaceStateHome(options.roots[0]), WORKSPACE_NETWORK_FILE) }
      : {}),
    ...(options.approvals ? { approvals: options.approvals } : {}),
    ...(options.audit ? { audit: options.audit } : {}),
  });
  const denials: NetworkFilter['denials'] = [];
  const state = { seq: 0 };
  const proxy = startDomainProxy({
    socketPath,
    decide: (host, port, method) => policy.decide(host, port, method),
    ...(options.resolveHost ? { resolve: options.resolveHost } : {}),
    onDenied: (denial) => {
      denials.push({ ...denial, seq: ++state.seq });
      if (denials.length > 100) denials.splice(0, denials.length - 100);
    },
  });
  // Not waited for here: the bridge comes up in the background while the session starts, and the
  // first command (or whoever asks about the network) waits for it (networkFilter() below).
  const holder = startNetworkHolder({ bwrap: status.bwrap as string, socat, socketPath, dir: tempDir });
  return {
    filter: {
      proxy,
      holder,
      nsenter,
      denials,
      get seq() {
        return state.seq;
      },
    },
  };
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
  const settings = sandboxSettingsSchema().parse(options.settings ?? {});
  const home = options.home ?? os.homedir();
  const status =
    options.status ??
    probeSandboxCached({
      bwrapPath: settings.bwrapPath,
      enabled: settings.enabled,
      ...(options.probeCacheFile ? { cacheFile: options.probeCacheFile } : {}),
    });
  let info: SandboxInfo = {
    tier: status.tier,
    summary: status.summary,
    ...(status.reason ? { reason: status.reason } : {}),
    ...(status.fix ? { fix: status.fix } : {}),
    ...(settings.failIfUnavailable ? { failIfUnavailable: true } : {}),
  };
  const sessionRoots = options.roots.map(realOrSelf);
  // Keel's own folder (MCP tokens, trust approvals) is hidden whatever the configured list says.
  const denyRead = [
    ...new Set([...settings.denyRead.map((entry) => resolveDenyPath(entry, home)), ...keelDirs(home)]),
  ];

  let tempDir: string | undefined;
  let filterFile: string | undefined;
  if (status.tier === 'bwrap') {
    tempDir = fs.realpathSync(fs.mkdtempSync(path.join(options.tmpBase ?? os.tmpdir(), 'keel-sandbox-')));
    fs.mkdirSync(path.join(tempDir, 'tmp'));
    filterFile = path.join(tempDir, 'seccomp.bpf');
    fs.writeFileSync(filterFile, seccompProgram() as Buffer, { mode: 0o400 });
  }
  const sessionTmp = tempDir ? path.join(tempDir, 'tmp') : undefined;
  const network: { filter?: NetworkFilter; reason?: string } = tempDir
    ? startNetworkFilter(options, settings, status, tempDir)
    : {};
  const noNetworkInfo = info;
  if (network.filter) {
    info = {
      ...info,
      summary: info.summary.replace(
        'no network,',
        `network only through Keel's domain proxy (${allowedDomainsFor(options, settings).length} allowed domains; others ask),`,
      ),
    };
  }
  let bridgeChecked = false;
  /** The proxy's filter once its bridge listens; a bridge that failed leaves no network at all. */
  function networkFilter(): NetworkFilter | undefined {
    if (!bridgeChecked && network.filter) {
      bridgeChecked = true;
      const failed = network.filter.holder.ready();
      if (failed) {
        network.filter.proxy.close();
        network.filter.holder.dispose();
        delete network.filter;
        network.reason = failed;
        info = noNetworkInfo;
      }
    }
    return network.filter;
  }

  function wrap(
    argv: readonly string[],
    wrapOptions: { cwd: string; network?: boolean; writable?: readonly string[]; roots?: readonly string[] },
  ): SandboxedArgv | undefined {
    if (status.tier !== 'bwrap' || !status.bwrap || !filterFile || !sessionTmp) return undefined;
    // A writer sub-agent's commands write its own tree only, not the workspace.
    const roots = wrapOptions.roots ? wrapOptions.roots.map(realOrSelf) : sessionRoots;
    const writable = (p: string) => roots.some((root) => inside(root, p));
    const filter = networkFilter();
    const args = [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-ipc',
      // With the proxy, the command joins the session's namespace (its only way out is the proxy).
      ...(wrapOptions.network || filter ? [] : ['--unshare-net']),
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
    const extraWritable = (wrapOptions.writable ?? []).filter((dir) => exists(dir));
    const hiddenBy = (dir: string) => denyRead.some((d) => inside(d, dir) || inside(realOrSelf(d), dir));
    for (const dir of extraWritable) if (!hiddenBy(dir)) args.push('--bind', dir, dir);
    // Git dirs outside the roots that commands must write (a linked worktree's objects and refs).
    const bound = new Set<string>();
    const bind = (dir: string) => {
      if (writable(dir) || [...bound].some((b) => inside(b, dir))) return;
      bound.add(dir);
      args.push('--bind', dir, dir);
    };
    // Pinned inside the writable roots: what host tools act on later.
    const stateDir = options.stateDir;
    const extra = [
      ...(stateDir && writable(stateDir) ? [{ path: stateDir, why: "Keel's state", base: stateDir }] : []),
      ...[...keelDirs(home), ...SHELL_STARTUP_FILES.map((name) => path.join(home, name))]
        .filter((p) => writable(p))
        .map((p) => ({
          path: p,
          why: "Keel's user folder, or a shell start-up file",
          base: path.dirname(p),
        })),
    ];
    const plan = planRunLater(roots, { bind, extra }, args);
    // Secrets: an empty read-only folder over a folder, /dev/null over a file.
    for (const denied of denyRead) {
      for (const p of new Set([denied, realOrSelf(denied)])) {
        const stat = exists(p);
        if (!stat || roots.some((root) => inside(p, root))) continue;
        if (fs.statSync(p, { throwIfNoEntry: false })?.isDirectory()) {
          args.push('--tmpfs', p);
          // A folder a command must write inside a hidden one (an MCP server's npm cache in ~/.keel).
          for (const dir of extraWritable) if (inside(p, dir)) args.push('--bind', dir, dir);
          args.push('--remount-ro', p);
        } else args.push('--ro-bind', '/dev/null', p);
      }
    }
    const settleWritable = (p: string) => writable(p) || [...bound].some((dir) => inside(dir, p));
    args.push('--chdir', wrapOptions.cwd, '--seccomp', '3', '--', ...argv);
    const fd = fs.openSync(filterFile, 'r');
    let released = false;
    const mark = filter?.seq ?? 0;
    const bwrap = status.bwrap;
    return {
      ...(filter
        ? {
            // The holder's namespaces arrive as fds 4 and 5: a recycled PID cannot redirect them.
            file: filter.nsenter,
            args: [
              '--preserve-credentials',
              '--user=/proc/self/fd/4',
              '--net=/proc/self/fd/5',
              '--',
              bwrap,
              // Inside the holder's namespace the caller is root: keep the user's own uid and gid.
              '--uid',
              String(process.getuid?.() ?? 0),
              '--gid',
              String(process.getgid?.() ?? 0),
              ...args,
            ],
            fds: [fd, ...filter.holder.nsFds],
            env: { TMPDIR: sessionTmp, ...PROXY_ENV },
          }
        : { file: bwrap, args, fds: [fd], env: { TMPDIR: sessionTmp } }),
      release() {
        if (released) return;
        released = true;
        fs.closeSync(fd);
      },
      sweep: () => settleRunLater(plan, settleWritable),
      // A refused domain is named when the command failed; a command that succeeded anyway (an
      // update check it can live without) is not turned into an error (the audit has the refusal).
      settle: (outcome) => [
        ...settleRunLater(plan, settleWritable),
        ...(outcome?.failed === false ? [] : (filter?.denials ?? []))
          .filter((d) => d.seq > mark)
          .map((d): SandboxDenial => ({ kind: 'network', target: `${d.host}:${d.port}`, detail: d.reason })),
      ],
    };
  }

  return {
    status,
    get info() {
      return info;
    },
    tempDir,
    denyRead,
    get network() {
      return networkFilter()
        ? { proxy: true }
        : { proxy: false, ...(network.reason ? { reason: network.reason } : {}) };
    },
    wrap,
    // Behind the proxy no command has a direct route out, whatever it was approved for.
    explain: (output) =>
      explainOutput({ ...output, ...(network.filter ? { network: false } : {}), denyRead }),
    dispose() {
      network.filter?.proxy.close();
      network.filter?.holder.dispose();
      if (tempDir) fs.rmSync(tempDir, { recursive: true, force: true });
    },
  };
}
