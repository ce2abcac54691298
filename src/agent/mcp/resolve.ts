import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_DENY_READ, keelDirs, resolveDenyPath } from '../safety/sandbox/settings.ts';
import type { McpInput, McpOAuthSpec, McpServerConfig, McpTransportSpec } from './config.ts';

// Variable substitution in an MCP server definition, as VS Code does it (`${workspaceFolder}`,
// `${env:X}`, `${input:id}`, …). Runs only when a server starts, so a secret is read only when needed.

export interface SubstitutionContext {
  readonly workspaceFolder: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `${input:id}`: VS Code asks (SecretStorage), the CLI reads an environment variable. */
  readonly input: (input: McpInput) => Promise<string | undefined>;
}

export class McpConfigError extends Error {}

const VARIABLE = /\$\{([^}]+)\}/g;

async function substitute(value: string, server: McpServerConfig, ctx: SubstitutionContext): Promise<string> {
  let out = '';
  let last = 0;
  for (const match of value.matchAll(VARIABLE)) {
    out += value.slice(last, match.index);
    last = match.index + match[0].length;
    const name = match[1]!;
    if (name === 'workspaceFolder') out += ctx.workspaceFolder;
    else if (name === 'workspaceFolderBasename') out += path.basename(ctx.workspaceFolder);
    else if (name === 'userHome') out += os.homedir();
    else if (name === 'pathSeparator' || name === '/') out += path.sep;
    else if (name.startsWith('env:')) out += ctx.env[name.slice(4)] ?? '';
    else if (name.startsWith('input:')) {
      const id = name.slice(6);
      const input = server.inputs.find((i) => i.id === id) ?? { type: 'promptString', id };
      const answer = await ctx.input(input);
      if (answer === undefined)
        throw new McpConfigError(`MCP server "${server.name}" needs the input "${id}", which was not given.`);
      out += answer;
    } else
      throw new McpConfigError(
        `MCP server "${server.name}" in ${server.file} uses the unknown variable \${${name}}.`,
      );
  }
  return out + value.slice(last);
}

/** The transport with every `${…}` replaced. Throws McpConfigError naming the variable. */
export async function resolveTransport(
  server: McpServerConfig,
  ctx: SubstitutionContext,
): Promise<McpTransportSpec> {
  const sub = (v: string) => substitute(v, server, ctx);
  const spec = server.transport;
  if (spec.type !== 'stdio') {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(spec.headers)) headers[k] = await sub(v);
    const oauth = spec.oauth ? await resolveOAuth(spec.oauth, server, ctx, sub) : undefined;
    return { type: spec.type, url: await sub(spec.url), headers, ...(oauth ? { oauth } : {}) };
  }
  const env: Record<string, string> = {};
  if (spec.envFile !== undefined) {
    const file = path.resolve(ctx.workspaceFolder, await sub(spec.envFile));
    // A workspace's own server gets variables from the workspace, never a file of the user's (their
    // cloud credentials): the user's files are theirs to hand over, in their own config.
    if (server.scope === 'workspace' && !isInside(ctx.workspaceFolder, file))
      throw new McpConfigError(
        `MCP server "${server.name}" is defined by the workspace (${server.file}) and names an envFile outside it (${file}); a workspace server may only read an envFile inside the workspace. Define the server in your own ~/.keel/mcp.json to hand it that file.`,
      );
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (error) {
      throw new McpConfigError(
        `MCP server "${server.name}": cannot read its envFile ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}).`,
      );
    }
    Object.assign(env, parseDotenv(text));
  }
  for (const [k, v] of Object.entries(spec.env)) if (v !== null) env[k] = await sub(String(v));
  const args: string[] = [];
  for (const a of spec.args) args.push(await sub(a));
  const cwd =
    spec.cwd !== undefined ? path.resolve(ctx.workspaceFolder, await sub(spec.cwd)) : ctx.workspaceFolder;
  return { type: 'stdio', command: await sub(spec.command), args, env, cwd };
}

/**
 * The OAuth settings with every secret substituted (a client secret or ID token may come from
 * ${env:…}/${input:…} like a header, never written in the file) and the private key read.
 *
 * Threat: a repository's own mcp.json naming a key of the user's (`~/.ssh/…`, the key their company's
 * authorization server trusts) would make Keel sign client assertions with it and send them to a URL
 * the repository chose; with an authorization server metadata claiming the real issuer, that
 * assertion is accepted there for the user's client. So a workspace-defined server may only use a key
 * file inside the workspace (even once approved), like envFile; the user's own configuration (user or
 * named) may name a file in Keel's own folder or a default secrets folder (~/.ssh, …) — places the
 * command sandbox never shows, so a sandboxed command cannot read the key. Its text never appears in
 * an error.
 */
async function resolveOAuth(
  o: McpOAuthSpec,
  server: McpServerConfig,
  ctx: SubstitutionContext,
  sub: (v: string) => Promise<string>,
): Promise<McpOAuthSpec> {
  let privateKeyJwt = o.privateKeyJwt;
  if (privateKeyJwt) {
    const named = await sub(privateKeyJwt.keyFile);
    const expanded =
      named === '~' || named.startsWith('~/') ? path.join(os.homedir(), named.slice(1)) : named;
    const base = server.scope === 'workspace' ? ctx.workspaceFolder : path.dirname(server.file);
    const file = path.resolve(base, expanded);
    if (server.scope === 'workspace' && !isInside(ctx.workspaceFolder, file))
      throw new McpConfigError(
        `MCP server "${server.name}" is defined by the workspace (${server.file}) and names a private key outside it (${file}); Keel signs only with keys inside the workspace for a workspace server. Define the server in your own ~/.keel/mcp.json to use that key.`,
      );
    if (server.scope !== 'workspace' && !sandboxHidden(file, ctx.env))
      throw new McpConfigError(
        `MCP server "${server.name}": its private key ${file} is where a sandboxed command could read it. Keep it in ${path.join(keelDirs(os.homedir(), ctx.env).at(-1) ?? '~/.keel', 'keys')} (or ~/.ssh), which the command sandbox never shows, and point oauth.privateKeyJwt.keyFile there.`,
      );
    let privateKey: string;
    try {
      privateKey = fs.readFileSync(file, 'utf8');
    } catch (error) {
      throw new McpConfigError(
        `MCP server "${server.name}": cannot read its oauth.privateKeyJwt.keyFile ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)}).`,
      );
    }
    if (!/-----BEGIN PRIVATE KEY-----/.test(privateKey))
      throw new McpConfigError(
        `MCP server "${server.name}": ${file} is not a PKCS#8 PEM private key ("-----BEGIN PRIVATE KEY-----"); convert it with: openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8.pem`,
      );
    privateKeyJwt = { ...privateKeyJwt, keyFile: file, privateKey };
  }
  const x = o.crossAppAccess;
  return {
    ...o,
    ...(o.clientSecret !== undefined ? { clientSecret: await sub(o.clientSecret) } : {}),
    ...(privateKeyJwt ? { privateKeyJwt } : {}),
    ...(x
      ? {
          crossAppAccess: {
            ...x,
            idToken: await sub(x.idToken),
            ...(x.idpClientSecret !== undefined ? { idpClientSecret: await sub(x.idpClientSecret) } : {}),
          },
        }
      : {}),
  };
}

/** Inside Keel's own folder or a default secrets folder: unreadable from the command sandbox. */
function sandboxHidden(file: string, env: Readonly<Record<string, string | undefined>>): boolean {
  const home = os.homedir();
  const hidden = [
    ...keelDirs(home, env as NodeJS.ProcessEnv),
    ...DEFAULT_DENY_READ.map((e) => resolveDenyPath(e, home)),
  ];
  return hidden.some((dir) => isInside(dir, file));
}

function isInside(root: string, file: string): boolean {
  let real = file;
  try {
    real = fs.realpathSync(file);
  } catch {
    // missing: the read below says so
  }
  let base = root;
  try {
    base = fs.realpathSync(root);
  } catch {
    // keep the given root
  }
  const rel = path.relative(base, real);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** KEY=VALUE lines (optionally `export`ed, optionally quoted); `#` comments and blank lines skipped. */
export function parseDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(raw);
    if (!m || raw.trim().startsWith('#')) continue;
    let value = m[2]!;
    const quoted = /^(['"])(.*)\1$/.exec(value);
    if (quoted) value = quoted[1] === '"' ? quoted[2]!.replace(/\\n/g, '\n') : quoted[2]!;
    else value = value.replace(/\s+#.*$/, '');
    out[m[1]!] = value;
  }
  return out;
}

/** The environment variable the CLI reads for `${input:id}`: KEEL_MCP_INPUT_<ID>. */
export function inputEnvName(id: string): string {
  return `KEEL_MCP_INPUT_${id.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}
