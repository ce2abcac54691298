import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { McpInput, McpServerConfig, McpTransportSpec } from './config.ts';

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
    const o = spec.oauth;
    // The client secret may come from ${env:…}/${input:…} like a header, never written in the file.
    const oauth = o
      ? { ...o, ...(o.clientSecret !== undefined ? { clientSecret: await sub(o.clientSecret) } : {}) }
      : undefined;
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
