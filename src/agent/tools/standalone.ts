import * as path from 'node:path';
import type { Host } from '../host.ts';
import { createAuditLog } from '../safety/audit.ts';
import { createReadLedger } from '../safety/guards/readLedger.ts';
import { createPathGuard } from '../safety/paths/pathGuard.ts';
import type { ToolContext } from './protocol.ts';

// One tool call outside a session (`keel tool`, Keel's tools offered to VS Code's other agents): the
// same path guard over the host's roots, a fresh read ledger and the workspace's audit log, under a
// caller's name so the audit says who asked.

export function standaloneToolContext(
  host: Host,
  caller: string,
  signal: AbortSignal,
  extra: Partial<Pick<ToolContext, 'acceptsImages'>> = {},
): ToolContext {
  const audit = createAuditLog(host.storage, path.join(host.stateDir, 'audit.jsonl'), () => host.clock.now());
  return {
    host,
    sessionId: caller,
    toolUseId: `toolu_${caller.replace(/[^\w-]/g, '_')}_${host.clock.now()}`,
    signal,
    ledger: createReadLedger(),
    guard: createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir }),
    audit: (entry) => audit.write({ ...entry, session: caller }),
    update: () => {},
    ...extra,
  };
}
