import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../../lazy.ts';
import type { ApprovalsPort } from '../../host.ts';
import { classifyAddress, describeRefusal } from './addressClass.ts';

// Which domains a sandboxed command may reach through Keel's network proxy. A domain on the
// allow-list (setting, plus the registries the user's package managers are configured with, plus the
// workspace's registries the user approved with `keel trust`) or one the user allowed "always" for this workspace passes; any other asks
// through the host's approvals (modal in VS Code, the `--approve` policy in the CLI): allow once (the
// domain for the next minute — one command's burst of connections), always for this workspace
// (saved outside the workspace in `<keelHome>/workspaces/<id>/network.json`), or deny (the command gets HTTP 403 with the
// reason; remembered for the session so a retry loop does not ask again). Every decision is audited.

/**
 * The registries the user's package managers are configured to use — npm/pnpm/yarn (`registry=` and
 * `@scope:registry=` in `.npmrc`, `npmRegistryServer` in `.yarnrc.yml`, `npm_config_registry`), pip/uv
 * (`index-url`/`extra-index-url` in pip.conf, `PIP_INDEX_URL`, `UV_INDEX_URL`…) and Go (`GOPROXY`) —
 * read on the host side at session start (the sandbox hides `~/.npmrc` itself, which may hold tokens).
 * These pass without asking; Keel ships no hard-coded hosts, so a tool's built-in default registry asks
 * once ("allow for this session" keeps it for the workspace). A registry whose host is an address of
 * this machine, link-local or a metadata endpoint, in any spelling, is left out (`onRefused` says why).
 */
export function configuredRegistryDomains(options: {
  readonly home: string;
  readonly roots: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly onRefused?: (host: string, reason: string) => void;
}): string[] {
  const env = options.env ?? process.env;
  const urls: string[] = [];
  const read = (file: string) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  for (const key of [
    'npm_config_registry',
    'NPM_CONFIG_REGISTRY',
    'YARN_NPM_REGISTRY_SERVER',
    'PIP_INDEX_URL',
    'PIP_EXTRA_INDEX_URL',
    'UV_INDEX_URL',
    'UV_DEFAULT_INDEX',
    'UV_EXTRA_INDEX_URL',
    'GOPROXY',
  ])
    urls.push(...(env[key] ?? '').split(/[\s,|]+/));
  // Only the user's own files: a workspace's .npmrc (or any other file it ships, or a command wrote)
  // reaches the allow-list only through the trust room, once the user approved it (src/agent/trust/).
  for (const dir of [options.home]) {
    for (const m of read(path.join(dir, '.npmrc')).matchAll(/^\s*(?:@[\w.-]+:)?registry\s*=\s*(\S+)/gm))
      urls.push(m[1] ?? '');
    for (const m of read(path.join(dir, '.yarnrc.yml')).matchAll(
      /^\s*npmRegistryServer:\s*["']?([^"'\s]+)/gm,
    ))
      urls.push(m[1] ?? '');
  }
  for (const file of [
    path.join(options.home, '.config', 'pip', 'pip.conf'),
    path.join(options.home, '.pip', 'pip.conf'),
    '/etc/pip.conf',
  ])
    for (const m of read(file).matchAll(/^\s*(?:extra-)?index-url\s*=\s*(.+)$/gm))
      urls.push(...(m[1] ?? '').split(/\s+/));
  const hosts = new Set<string>();
  for (const url of urls) {
    try {
      const parsed = new URL(url.trim());
      if (!/^https?:$/.test(parsed.protocol) || !parsed.hostname) continue;
      // A repository's `.npmrc` naming `http://[::ffff:7f00:1]:8080/` must not put the host's loopback
      // on the list (the proxy refuses it too; this keeps it off what Keel reports as allowed).
      const host = normaliseHost(parsed.hostname);
      const local = classifyAddress(host);
      if (local?.refused) options.onRefused?.(host, describeRefusal(host, local));
      else hosts.add(host);
    } catch {
      // Not a URL ("direct", "off", a blank): nothing to allow.
    }
  }
  return [...hosts].sort();
}

/** The setting's domains and the registries the package managers are configured with. */
export function allowedDomainsFor(
  options: {
    readonly home?: string;
    readonly roots: readonly string[];
    readonly trustedDomains?: readonly string[];
  },
  settings: { readonly allowedDomains: readonly string[] },
  onRefused?: (host: string, reason: string) => void,
): string[] {
  return [
    ...settings.allowedDomains,
    // Approved or not, an address of this machine never goes on the list (the proxy refuses it too).
    ...(options.trustedDomains ?? []).filter((host) => {
      const local = classifyAddress(normaliseHost(host));
      if (local?.refused) onRefused?.(host, describeRefusal(host, local));
      return !local?.refused;
    }),
    ...configuredRegistryDomains({
      home: options.home ?? os.homedir(),
      roots: options.roots,
      ...(onRefused ? { onRefused } : {}),
    }),
  ];
}

/** `example.com` matches itself; `*.example.com` or `.example.com` match its subdomains (and itself). */
export function domainMatches(host: string, pattern: string): boolean {
  const h = normaliseHost(host);
  const p = pattern.trim().toLowerCase().replace(/\.$/, '');
  if (p.startsWith('*.') || p.startsWith('.')) {
    const base = p.replace(/^\*?\./, '');
    return h === base || h.endsWith(`.${base}`);
  }
  return h === p;
}

export function normaliseHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '');
}

export const WORKSPACE_NETWORK_FILE = 'network.json';

const workspaceFileSchema = lazy(() => z.object({ allowedDomains: z.array(z.string().min(1)).default([]) }));

function readWorkspaceDomains(file: string | undefined): string[] {
  if (!file) return [];
  try {
    return workspaceFileSchema().parse(JSON.parse(fs.readFileSync(file, 'utf8'))).allowedDomains;
  } catch {
    // Missing or hand-broken: nothing extra is allowed (fail closed).
    return [];
  }
}

export interface DomainDecision {
  readonly allowed: boolean;
  /** allow-list | workspace | session | once | user | denied-before | no-approvals */
  readonly source: string;
  /** One line the command (403 body) and the model read. */
  readonly reason: string;
}

export interface DomainPolicyOptions {
  readonly allowedDomains: readonly string[];
  /** `<stateDir>/network.json`: "always for this workspace" answers. */
  readonly workspaceFile?: string;
  readonly approvals?: ApprovalsPort;
  readonly audit?: (entry: Record<string, unknown>) => void;
  readonly now?: () => number;
}

export interface DomainPolicy {
  decide(host: string, port: number, method: string): Promise<DomainDecision>;
}

const ONCE_GRACE_MS = 60_000;

export function createDomainPolicy(options: DomainPolicyOptions): DomainPolicy {
  const now = options.now ?? Date.now;
  const session = new Set<string>();
  const denied = new Set<string>();
  const once = new Map<string, number>();
  const pending = new Map<string, Promise<DomainDecision>>();

  async function ask(host: string, port: number): Promise<DomainDecision> {
    if (!options.approvals)
      return { allowed: false, source: 'no-approvals', reason: `${host} is not on the allowed domains` };
    const answer = await options.approvals.ask({
      kind: 'network',
      title: `Network access to ${host}`,
      detail: `A sandboxed command wants to connect to ${host}:${port} through Keel's network proxy; ${host} is not on the allowed domains (keel.sandbox.allowedDomains).\n\nAllow once: ${host} for the next minute. Allow for this session: always, for this workspace (saved outside the workspace, in Keel's folder of your home). Deny: the command gets HTTP 403.`,
      risk: 'medium',
      sessionKey: `domain:${host}`,
      message: { id: 'network_domain', host, port },
    });
    if (answer === 'deny') {
      denied.add(host);
      return { allowed: false, source: 'user', reason: `access to ${host} was not approved` };
    }
    if (answer === 'allow_session') {
      session.add(host);
      saveWorkspaceDomain(options.workspaceFile, host);
      return { allowed: true, source: 'user', reason: `allowed for this workspace by the user` };
    }
    once.set(host, now() + ONCE_GRACE_MS);
    return { allowed: true, source: 'user', reason: 'allowed once by the user' };
  }

  function decideNow(host: string): DomainDecision | undefined {
    if (options.allowedDomains.some((p) => domainMatches(host, p)))
      return { allowed: true, source: 'allow-list', reason: 'on the allowed domains' };
    if (readWorkspaceDomains(options.workspaceFile).some((p) => domainMatches(host, p)))
      return { allowed: true, source: 'workspace', reason: 'allowed for this workspace' };
    if (session.has(host)) return { allowed: true, source: 'session', reason: 'allowed earlier' };
    if ((once.get(host) ?? 0) > now()) return { allowed: true, source: 'once', reason: 'allowed once' };
    if (denied.has(host))
      return {
        allowed: false,
        source: 'denied-before',
        reason: `access to ${host} was not approved earlier in this session`,
      };
    return undefined;
  }

  return {
    async decide(rawHost, port, method) {
      const host = normaliseHost(rawHost);
      let decision = decideNow(host);
      if (!decision) {
        // Concurrent connections to one new domain share one question.
        let question = pending.get(host);
        if (!question) {
          question = ask(host, port).finally(() => pending.delete(host));
          pending.set(host, question);
        }
        decision = await question;
      }
      options.audit?.({
        type: 'network_decision',
        domain: host,
        port,
        method,
        decision: decision.allowed ? 'allow' : 'deny',
        source: decision.source,
      });
      return decision;
    },
  };
}

function saveWorkspaceDomain(file: string | undefined, host: string): void {
  if (!file) return;
  const current = readWorkspaceDomains(file);
  if (current.includes(host)) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify({ allowedDomains: [...current, host].sort() }, null, 2)}\n`);
}
