import * as fs from 'node:fs';
import * as path from 'node:path';
import { workspaceHooksItem } from '../hooks/trustItem.ts';
import { describeTransport, loadMcpConfig, type McpServerConfig } from '../mcp/config.ts';
import { sha256, type StateLedger } from './ledger.ts';

// What a workspace supplies that would steer Keel: programs it would run, network it would open,
// text it would put in the prompt with more authority than project text. Each item names its file,
// says what it would grant, and carries the hash an approval is bound to. Plain project text
// (AGENTS.md, skills, source files) is not here: it is read, labelled as the repository's, and never
// grants anything.

export type SteeringKind = 'mcp_server' | 'network' | 'memory' | 'task' | 'hooks';

export interface SteeringItem {
  /** Stable key of the approval (`mcp:.vscode/mcp.json#name`). */
  readonly id: string;
  readonly kind: SteeringKind;
  /** Workspace-relative file it comes from. */
  readonly file: string;
  readonly title: string;
  /** What approving it grants, one line each, in words the user can check. */
  readonly grants: readonly string[];
  readonly hash: string;
  /** Network items: the domains approving it allows. */
  readonly domains?: readonly string[];
}

export const WORKSPACE_MCP_FILES = ['.vscode/mcp.json', '.keel/mcp.json'] as const;
export const WORKSPACE_MEMORY_FILE = '.keel/memory/MEMORY.md';
/** Where older Keel versions kept "allow for this workspace" answers; a committed one is the repo's. */
export const LEGACY_NETWORK_FILE = '.keel/network.json';
export const TASK_FILES = ['keel-task/init.sh', 'keel-task/feature_list.json'] as const;

const readText = (file: string): string | undefined => {
  try {
    const st = fs.lstatSync(file);
    return st.isFile() ? fs.readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
};

const ENV_REF = /\$\{env:([^}]+)\}/g;

/** What a workspace-defined MCP server would do when started, including the secrets it would get. */
export function mcpServerGrants(server: McpServerConfig): string[] {
  const spec = server.transport;
  const out: string[] = [];
  const refs = (value: string) => [...value.matchAll(ENV_REF)].map((m) => m[1]!);
  if (spec.type === 'stdio') {
    out.push(`runs ${describeTransport(spec)}${spec.cwd ? ` in ${spec.cwd}` : ''}`);
    for (const [k, v] of Object.entries(spec.env)) {
      if (v === null) continue;
      const names = refs(String(v));
      out.push(
        names.length
          ? `passes your environment variable${names.length > 1 ? 's' : ''} ${names.join(', ')} to it as ${k}`
          : `sets ${k}=${String(v).slice(0, 80)}`,
      );
    }
    if (spec.envFile !== undefined) out.push(`loads variables from ${spec.envFile} into its environment`);
  } else {
    out.push(`connects to ${spec.url}`);
    for (const [k, v] of Object.entries(spec.headers)) {
      const names = refs(v);
      out.push(names.length ? `sends your ${names.join(', ')} in the ${k} header` : `sends the header ${k}`);
    }
    const o = spec.oauth;
    const secret = (value: string | undefined, what: string, to: string) => {
      const names = value === undefined ? [] : refs(value);
      if (value !== undefined)
        out.push(`sends ${names.length ? `your ${names.join(', ')}` : 'a fixed value'} as ${what} to ${to}`);
    };
    secret(o?.clientSecret, 'its OAuth client secret', 'the authorization server the server names');
    if (o?.privateKeyJwt)
      out.push(
        `signs OAuth client assertions with the key ${o.privateKeyJwt.keyFile} (only a key inside the workspace is used)`,
      );
    secret(o?.crossAppAccess?.idToken, 'your identity token', o?.crossAppAccess?.idpTokenEndpoint ?? '');
  }
  if ([spec.type === 'stdio' ? spec.command : spec.url].some((v) => v.includes('${env:')))
    out.push('its command line reads your environment');
  return out;
}

function mcpItems(root: string): SteeringItem[] {
  const sources = WORKSPACE_MCP_FILES.map((rel) => ({
    file: path.join(root, rel),
    scope: 'workspace' as const,
  }));
  const { servers } = loadMcpConfig(sources, readText);
  return servers.map((s) => {
    const rel = path.relative(root, s.file).split(path.sep).join('/');
    return {
      id: `mcp:${rel}#${s.name}`,
      kind: 'mcp_server' as const,
      file: rel,
      title: `MCP server "${s.name}"`,
      grants: mcpServerGrants(s),
      hash: s.hash,
    };
  });
}

/** Registries named by package-manager files in the workspace (what used to feed the allow-list). */
export function workspaceRegistryFiles(root: string): Array<{ file: string; domains: string[] }> {
  const found: Array<{ file: string; domains: string[] }> = [];
  const patterns: Array<[string, RegExp]> = [
    ['.npmrc', /^\s*(?:@[\w.-]+:)?registry\s*=\s*(\S+)/gm],
    ['.yarnrc.yml', /^\s*npmRegistryServer:\s*["']?([^"'\s]+)/gm],
    ['.yarnrc', /^\s*registry\s+["']?([^"'\s]+)/gm],
    ['bunfig.toml', /^\s*registry\s*=\s*["']([^"']+)/gm],
    ['pip.conf', /^\s*(?:extra-)?index-url\s*=\s*(\S+)/gm],
  ];
  for (const [rel, re] of patterns) {
    const text = readText(path.join(root, rel));
    if (!text) continue;
    const domains = new Set<string>();
    for (const m of text.matchAll(re)) {
      try {
        const url = new URL(m[1]!.trim());
        if (/^https?:$/.test(url.protocol) && url.hostname)
          domains.add(url.hostname.toLowerCase().replace(/^\[|\]$/g, ''));
      } catch {
        // not a URL: nothing to allow
      }
    }
    if (domains.size) found.push({ file: rel, domains: [...domains].sort() });
  }
  return found;
}

function networkItems(root: string): SteeringItem[] {
  const out: SteeringItem[] = [];
  for (const { file, domains } of workspaceRegistryFiles(root))
    out.push({
      id: `network:${file}`,
      kind: 'network',
      file,
      title: `Package registries in ${file}`,
      grants: [`sandboxed commands may reach ${domains.join(', ')} without asking`],
      hash: sha256(domains.join('\n')),
      domains,
    });
  const legacy = readText(path.join(root, LEGACY_NETWORK_FILE));
  if (legacy !== undefined) {
    let domains: string[] = [];
    try {
      const parsed = JSON.parse(legacy) as { allowedDomains?: unknown };
      if (Array.isArray(parsed.allowedDomains))
        domains = parsed.allowedDomains.filter((d): d is string => typeof d === 'string' && d.length > 0);
    } catch {
      // unreadable: it grants nothing, and says so
    }
    out.push({
      id: `network:${LEGACY_NETWORK_FILE}`,
      kind: 'network',
      file: LEGACY_NETWORK_FILE,
      title: 'Network allowances in .keel/network.json',
      grants: [
        domains.length
          ? `sandboxed commands may reach ${[...domains].sort().join(', ')} without asking`
          : 'nothing (no valid allowedDomains)',
      ],
      hash: sha256([...domains].sort().join('\n')),
      domains,
    });
  }
  return out;
}

function memoryItems(root: string, ledger: StateLedger): SteeringItem[] {
  const text = readText(path.join(root, WORKSPACE_MEMORY_FILE));
  if (text === undefined || !text.trim() || ledger.isOwnFile(WORKSPACE_MEMORY_FILE, text)) return [];
  const entries = text.split('\n').filter((l) => /^\s*[-*]\s/.test(l)).length;
  return [
    {
      id: `memory:${WORKSPACE_MEMORY_FILE}`,
      kind: 'memory',
      file: WORKSPACE_MEMORY_FILE,
      title: 'Workspace memory not written by Keel here',
      grants: [
        `its ${entries} entr${entries === 1 ? 'y goes' : 'ies go'} into every session's system prompt as remembered facts and decisions`,
      ],
      hash: sha256(text),
    },
  ];
}

function taskItems(root: string, ledger: StateLedger): SteeringItem[] {
  const texts = TASK_FILES.map((rel) => readText(path.join(root, rel)));
  if (texts.every((t) => t === undefined)) return [];
  if (TASK_FILES.every((rel, i) => texts[i] === undefined || ledger.isOwnFile(rel, texts[i]!))) return [];
  const init = texts[0];
  const grants: string[] = [];
  if (init !== undefined) {
    const lines = init.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
    grants.push(
      `keel task run runs keel-task/init.sh at each session start (${lines.length} command line${lines.length === 1 ? '' : 's'}: ${lines.slice(0, 2).join(' ; ').slice(0, 120)})`,
    );
  }
  if (texts[1] !== undefined)
    grants.push(
      "its feature list's verify commands run when a session checks a feature and, for passing ones, at each session start",
    );
  return [
    {
      id: 'task:keel-task',
      kind: 'task',
      file: 'keel-task/',
      title: 'Long task (keel-task/) not set up by Keel here',
      grants,
      hash: sha256(texts.map((t) => t ?? '').join('\0')),
    },
  ];
}

/** Everything the workspace at `root` supplies that would steer Keel, in a fixed order. */
export function collectSteeringItems(root: string, ledger: StateLedger): SteeringItem[] {
  const hooks = workspaceHooksItem(root);
  return [
    ...mcpItems(root),
    ...networkItems(root),
    ...memoryItems(root, ledger),
    ...taskItems(root, ledger),
    ...(hooks ? [hooks] : []),
  ];
}
