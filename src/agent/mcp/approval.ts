import type { McpPort } from '../host.ts';
import { mcpServerGrants } from '../trust/items.ts';
import type { TrustRoom } from '../trust/room.ts';
import { describeTransport, type McpServerConfig } from './config.ts';

// May a workspace-defined server start? Only with the user's approval of its exact definition: kept
// in the trust room (`keel trust`, the VS Code modal); asked of the host when the room has none and
// the workspace is trusted (VS Code asks, the CLI says no); never in an untrusted workspace.

export async function approveWorkspaceServer(
  config: McpServerConfig,
  port: McpPort,
  trust: TrustRoom | undefined,
  signal?: AbortSignal,
): Promise<boolean> {
  const item = trust?.mcpItem(config);
  if (item && trust?.isApproved(item)) return true;
  if (trust?.workspaceTrusted === false) return false;
  const approved = await port.approveServer(
    {
      server: config.name,
      file: config.file,
      commandLine: describeTransport(config.transport),
      grants: mcpServerGrants(config),
      hash: config.hash,
    },
    signal,
  );
  if (approved && item) trust?.approve([item], Date.now());
  return approved;
}
