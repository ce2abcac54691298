import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { z } from 'zod';
import { keelHome } from '../trust/paths.ts';

// MCP server configuration in VS Code's own `mcp.json` format:
//   {"inputs": [...], "servers": {"name": {"type": "stdio", "command", "args", "env", "cwd"}
//                                        | {"type": "http", "url", "headers"}}}
// Read from the workspace (`.vscode/mcp.json`, `.keel/mcp.json`), the user (`~/.keel/mcp.json`) and, in
// the CLI, files named with `--mcp-config`. Parsing is pure and synchronous (session start freezes the
// prefix from it); variables are substituted only when a server starts, so a secret is read only when
// it is really needed. This module must not import the MCP SDK (sessions without MCP never load it).

export type McpScope = 'workspace' | 'user' | 'named';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const stdioSchema = z
  .object({
    type: z.literal('stdio').optional(),
    command: z.string().min(1, 'command is empty'),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.union([z.string(), z.number(), z.null()])).default({}),
    envFile: z.string().optional(),
    cwd: z.string().optional(),
    description: z.string().max(200).optional(),
    timeout: z.number().int().positive().optional(),
    startTimeout: z.number().int().positive().optional(),
  })
  .loose();
/** Asymmetric JWS algorithms a private_key_jwt client assertion may be signed with (RFC 7518). */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
] as const;

const httpsUrl = (what: string) =>
  z.url(`${what} must be an https URL`).refine((u) => {
    const url = new URL(u);
    return url.protocol === 'https:' && url.pathname !== '/';
  }, `${what} must be an https URL with a path (e.g. https://example.com/keel-client.json)`);

const oauthSchema = z
  .object({
    clientId: z.string().min(1).optional(),
    clientSecret: z.string().optional(),
    scope: z.string().optional(),
    grant: z.enum(['authorization_code', 'client_credentials']).optional(),
    /** SEP-991: the https URL of this client's metadata document, used as its client_id. */
    clientIdMetadataUrl: httpsUrl('clientIdMetadataUrl').optional(),
    /** RFC 7523 §2.2 client authentication: a signed JWT instead of a client secret. */
    privateKeyJwt: z
      .object({
        keyFile: z.string().min(1, 'keyFile is empty'),
        alg: z.enum(JWT_ALGORITHMS),
      })
      .strict()
      .optional(),
    /** The authorization server these credentials belong to; they are sent to no other. */
    issuer: z.url('issuer must be a URL').optional(),
    /** SEP-990 cross-app access: an enterprise IdP's ID token → ID-JAG (RFC 8693) → access token (RFC 7523). */
    crossAppAccess: z
      .object({
        idpTokenEndpoint: z.url('idpTokenEndpoint must be a URL'),
        idpClientId: z.string().min(1),
        idpClientSecret: z.string().optional(),
        idToken: z.string().min(1, 'idToken is empty'),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    const problem = (message: string) => ctx.addIssue({ code: 'custom', message });
    if (o.clientIdMetadataUrl && o.clientId)
      problem('give either clientId (a pre-registered client) or clientIdMetadataUrl, not both');
    if (o.privateKeyJwt && !o.clientId)
      problem('privateKeyJwt needs clientId (the client the key is registered for)');
    if (o.privateKeyJwt && o.clientSecret) problem('give either clientSecret or privateKeyJwt, not both');
    if (o.grant === 'client_credentials' && !o.clientId)
      problem('grant client_credentials needs clientId and clientSecret or privateKeyJwt');
    if (o.grant === 'client_credentials' && o.clientId && !o.clientSecret && !o.privateKeyJwt)
      problem('grant client_credentials needs clientSecret or privateKeyJwt');
    if (o.crossAppAccess && !o.clientId)
      problem(
        "crossAppAccess needs clientId (and clientSecret or privateKeyJwt) of the client at the MCP server's authorization server",
      );
    if (o.crossAppAccess && o.grant === 'client_credentials')
      problem('crossAppAccess replaces grant client_credentials; give one');
  });

const httpSchema = z
  .object({
    type: z.enum(['http', 'sse']),
    url: z.url('url must be an http(s) URL'),
    headers: z.record(z.string(), z.string()).default({}),
    oauth: oauthSchema.optional(),
    description: z.string().max(200).optional(),
    timeout: z.number().int().positive().optional(),
    startTimeout: z.number().int().positive().optional(),
  })
  .loose();

const inputSchema = z
  .object({
    type: z.string().default('promptString'),
    id: z.string().min(1),
    description: z.string().optional(),
    password: z.boolean().optional(),
  })
  .loose();

const fileSchema = z
  .object({
    inputs: z.array(inputSchema).default([]),
    servers: z.record(z.string(), z.unknown()).default({}),
  })
  .loose();

export type McpInput = z.infer<typeof inputSchema>;

export type McpTransportSpec =
  | {
      readonly type: 'stdio';
      readonly command: string;
      readonly args: readonly string[];
      readonly env: Readonly<Record<string, string | number | null>>;
      readonly cwd?: string;
      /** A dotenv file whose variables come before `env` (VS Code's `envFile`). */
      readonly envFile?: string;
    }
  | {
      readonly type: 'http' | 'sse';
      readonly url: string;
      readonly headers: Readonly<Record<string, string>>;
      /** OAuth settings (a pre-registered client, a scope, machine-to-machine client credentials). */
      readonly oauth?: McpOAuthSpec;
    };

export interface McpOAuthSpec {
  readonly clientId?: string;
  readonly clientSecret?: string;
  readonly scope?: string;
  readonly grant?: 'authorization_code' | 'client_credentials';
  readonly clientIdMetadataUrl?: string;
  readonly privateKeyJwt?: {
    readonly keyFile: string;
    readonly alg: (typeof JWT_ALGORITHMS)[number];
    /** The PEM read from keyFile: set only by resolveTransport, never parsed from a file. */
    readonly privateKey?: string;
  };
  readonly issuer?: string;
  readonly crossAppAccess?: {
    readonly idpTokenEndpoint: string;
    readonly idpClientId: string;
    readonly idpClientSecret?: string;
    readonly idToken: string;
  };
}

export interface McpServerConfig {
  readonly name: string;
  /** Absolute path of the file that defined it. */
  readonly file: string;
  /** workspace = shipped with the project (needs approval); user = ~/.keel; named = --mcp-config. */
  readonly scope: McpScope;
  readonly transport: McpTransportSpec;
  readonly description?: string;
  /** Per-call timeout in ms, when the config sets one (`timeout`). */
  readonly timeoutMs?: number;
  /** Startup timeout in ms, when the config sets one (`startTimeout`). */
  readonly startTimeoutMs?: number;
  /** `inputs` of the defining file (for `${input:id}`). */
  readonly inputs: readonly McpInput[];
  /** sha256 of the definition as written (before substitution): what an approval is bound to. */
  readonly hash: string;
}

export interface McpConfigSource {
  readonly file: string;
  readonly scope: McpScope;
}

export interface LoadedMcpConfig {
  readonly servers: readonly McpServerConfig[];
  /** One sentence per problem (bad JSON, bad server entry, duplicate name); nothing is dropped silently. */
  readonly problems: readonly string[];
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Strips `//` and `/* *\/` comments and trailing commas (VS Code's mcp.json is JSONC). */
export function stripJsonc(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
    } else out += c;
  }
  return out.replace(/,(\s*[}\]])/g, '$1');
}

function issues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(entry)'}: ${i.message}`).join('; ');
}

/** Parses one mcp.json text. Problems name the file and the server. */
export function parseMcpConfig(text: string, source: McpConfigSource): LoadedMcpConfig {
  const problems: string[] = [];
  let raw: unknown;
  try {
    raw = JSON.parse(stripJsonc(text));
  } catch (error) {
    return { servers: [], problems: [`${source.file}: not valid JSON (${(error as Error).message}).`] };
  }
  const file = fileSchema.safeParse(raw);
  if (!file.success) return { servers: [], problems: [`${source.file}: ${issues(file.error)}.`] };
  const servers: McpServerConfig[] = [];
  for (const [name, entry] of Object.entries(file.data.servers)) {
    if (!NAME.test(name)) {
      problems.push(
        `${source.file}: server name "${name}" must be 1-64 letters, digits, '.', '_' or '-' (skipped).`,
      );
      continue;
    }
    const type = (entry as { type?: unknown } | null)?.type;
    const isRemote =
      type === 'http' || type === 'sse' || (type === undefined && !!(entry as { url?: unknown } | null)?.url);
    if (!isRemote && type !== undefined && type !== 'stdio') {
      problems.push(
        `${source.file}: server "${name}": unknown type ${JSON.stringify(type)} (stdio, http or sse; skipped).`,
      );
      continue;
    }
    let transport: McpTransportSpec;
    let extra: {
      description?: string | undefined;
      timeout?: number | undefined;
      startTimeout?: number | undefined;
    };
    if (isRemote) {
      const parsed = httpSchema.safeParse(
        type === undefined ? { ...(entry as object), type: 'http' } : entry,
      );
      if (!parsed.success) {
        problems.push(`${source.file}: server "${name}": ${issues(parsed.error)} (skipped).`);
        continue;
      }
      transport = {
        type: parsed.data.type,
        url: parsed.data.url,
        headers: parsed.data.headers,
        ...(parsed.data.oauth ? { oauth: parsed.data.oauth } : {}),
      };
      extra = parsed.data;
    } else {
      const parsed = stdioSchema.safeParse(entry);
      if (!parsed.success) {
        problems.push(`${source.file}: server "${name}": ${issues(parsed.error)} (skipped).`);
        continue;
      }
      const d = parsed.data;
      transport = {
        type: 'stdio',
        command: d.command,
        args: d.args,
        env: d.env,
        ...(d.cwd !== undefined ? { cwd: d.cwd } : {}),
        ...(d.envFile !== undefined ? { envFile: d.envFile } : {}),
      };
      extra = d;
    }
    const d = extra;
    servers.push({
      name,
      file: source.file,
      scope: source.scope,
      transport,
      ...(d.description ? { description: d.description.replace(/\s+/g, ' ').trim() } : {}),
      ...(d.timeout ? { timeoutMs: d.timeout } : {}),
      ...(d.startTimeout ? { startTimeoutMs: d.startTimeout } : {}),
      inputs: file.data.inputs,
      hash: createHash('sha256').update(canonical(transport)).digest('hex'),
    });
  }
  return { servers, problems };
}

/**
 * Loads every source in order; a later source's server replaces an earlier one of the same name (the
 * caller orders them user → workspace → named, so what the user names last wins).
 */
export function loadMcpConfig(
  sources: readonly McpConfigSource[],
  readText: (file: string) => string | undefined,
): LoadedMcpConfig {
  const byName = new Map<string, McpServerConfig>();
  const problems: string[] = [];
  const seenFiles = new Set<string>();
  for (const source of sources) {
    if (seenFiles.has(source.file)) continue;
    seenFiles.add(source.file);
    const text = readText(source.file);
    if (text === undefined) {
      if (source.scope === 'named') problems.push(`${source.file}: file not found or not readable.`);
      continue;
    }
    const loaded = parseMcpConfig(text, source);
    problems.push(...loaded.problems);
    for (const server of loaded.servers) {
      const earlier = byName.get(server.name);
      if (earlier)
        problems.push(`MCP server "${server.name}" in ${server.file} replaces the one in ${earlier.file}.`);
      byName.set(server.name, server);
    }
  }
  const servers = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { servers, problems };
}

/** The usual places, lowest priority first; `named` files (CLI `--mcp-config`) come last and win. */
export function defaultMcpSources(options: {
  readonly workspaceRoot: string;
  readonly userConfig?: string | null;
  readonly named?: readonly string[];
}): McpConfigSource[] {
  const named = (options.named ?? []).map((f) => path.resolve(options.workspaceRoot, f));
  const userConfig =
    options.userConfig === null ? [] : [options.userConfig ?? path.join(keelHome(), 'mcp.json')];
  const workspaceFiles = [
    path.join(options.workspaceRoot, '.vscode', 'mcp.json'),
    path.join(options.workspaceRoot, '.keel', 'mcp.json'),
  ];
  return [
    ...userConfig.map((file) => ({ file, scope: 'user' as const })),
    // A workspace file the user named explicitly is approved by that act (its scope is `named`).
    ...workspaceFiles
      .filter((f) => !named.includes(f))
      .map((file) => ({ file, scope: 'workspace' as const })),
    ...named.map((file) => ({ file, scope: 'named' as const })),
  ];
}

/** The exact command line (or URL) a server runs, for approval dialogs and errors. */
export function describeTransport(spec: McpTransportSpec): string {
  if (spec.type !== 'stdio') return `${spec.type.toUpperCase()} ${spec.url}`;
  const quote = (s: string) => (/^[A-Za-z0-9_./:=@%+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  return [spec.command, ...spec.args].map(quote).join(' ');
}
