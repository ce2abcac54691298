import * as path from 'node:path';
import type { StoragePort } from '../host.ts';
import { canonicalJson } from './guards/loopDetector.ts';

// `.keel/audit.jsonl`: an append-only record of what Keel asked and did — every approval request and
// decision, every command with its exit code and duration, every file it created, changed or deleted.
// One JSON object per line, keys sorted so identical events serialise identically; each line is
// written before write() returns (StoragePort.appendLine is a synchronous write), so a crash of the
// process loses nothing already done.

export interface AuditEntry {
  readonly type:
    | 'approval_request'
    | 'approval_decision'
    | 'auto_approval'
    | 'command'
    | 'file_change'
    | 'policy_block'
    | 'mcp_call'
    | 'network_decision'
    | 'hook';
  readonly [key: string]: unknown;
}

/** Shapes the tools are expected to write (documentation for callers; any extra fields are kept). */
export type AuditRecord =
  | { type: 'approval_request'; kind: string; title: string; detail: string; risk: string; tool?: string }
  | { type: 'approval_decision'; kind: string; detail: string; decision: string; tool?: string }
  | {
      type: 'auto_approval';
      tool: string;
      command: string;
      decision: string;
      classes: string[];
      reason: string;
    }
  | {
      type: 'command';
      command: string;
      cwd: string;
      exitCode: number | null;
      durationMs: number;
      timedOut?: boolean;
    }
  | { type: 'file_change'; action: 'create' | 'modify' | 'delete' | 'rename'; path: string; tool?: string }
  | { type: 'policy_block'; rule: string; detail: string; tool?: string }
  | {
      type: 'mcp_call';
      server: string;
      mcp_tool: string;
      status: string;
      duration_ms: number;
      code?: string;
    }
  | {
      type: 'hook';
      event: string;
      command: string;
      source: string;
      exit_code: number | null;
      duration_ms: number;
      decision: string;
    };

export interface AuditLog {
  write(entry: AuditEntry & Record<string, unknown>): void;
}

export const AUDIT_FILE = 'audit.jsonl';

/** `<stateDir>/audit.jsonl`. */
export function auditPath(stateDir: string): string {
  return path.join(stateDir, AUDIT_FILE);
}

export function createAuditLog(storage: StoragePort, logPath: string, now: () => number): AuditLog {
  return {
    write(entry) {
      // `ts` is the log's own clock: a caller cannot back-date an entry.
      storage.appendLine(logPath, canonicalJson({ ...entry, ts: now() }));
    },
  };
}
