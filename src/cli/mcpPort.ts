import * as fs from 'node:fs';
import * as path from 'node:path';
import type { McpPort } from '../agent/host.ts';
import { inputEnvName } from '../agent/mcp/resolve.ts';
import type { RunArgs } from './args.ts';
import { UsageError } from './args.ts';
import { cliAuthorize, cliElicit } from './mcpPrompts.ts';

// MCP in the CLI. A server defined by the workspace (.vscode/mcp.json, .keel/mcp.json) starts only when
// the user approved its exact definition with `keel trust`, or names that very file with --mcp-config
// (--approve all does not: it answers questions a run asks, it does not trust the repository); `${input:id}` comes from the
// environment variable KEEL_MCP_INPUT_<ID>; tools the server marks read-only run without asking under
// --approve safe, auto or all.

export function createCliMcpPort(
  args: { readonly mcpConfig: readonly string[]; readonly approve?: RunArgs['approve'] },
  workspace: string,
  env: NodeJS.ProcessEnv = process.env,
): McpPort {
  const named = args.mcpConfig.map((file) => {
    const abs = path.resolve(file);
    if (!fs.existsSync(abs) || !fs.statSync(abs).isFile())
      throw new UsageError(`--mcp-config: no such file: ${abs}`);
    return fs.realpathSync(abs);
  });
  const isTTY = process.stdin.isTTY === true;
  const elicit = cliElicit(args.approve, isTTY);
  const authorize = cliAuthorize(args.approve, isTTY);
  return {
    ...(elicit ? { elicit } : {}),
    ...(authorize ? { authorize } : {}),
    namedConfigFiles: named,
    allowReadOnlyCalls: () => args.approve === 'safe' || args.approve === 'auto' || args.approve === 'all',
    approveServer: async () => false,
    resolveInput: async (input) => env[inputEnvName(input.id)],
    howToApprove: (_server, file) =>
      `to allow it, review and approve it with \`keel trust\`, or run keel again with --mcp-config ${path.relative(workspace, file) || file} (approves that file's servers).`,
  };
}
