import * as path from 'node:path';
import { WORKSPACE_MEMORY_FILE } from './items.ts';
import { ledgerForStateDir, sha256 } from './ledger.ts';
import { trustStore } from './store.ts';

// The workspace MEMORY.md speaks with the user's voice (it is labelled as their remembered facts), so
// only two versions of it may reach a prompt or be built upon: one Keel wrote itself, or one the user
// approved (`keel trust`, or the VS Code dialog). A MEMORY.md that came with the checkout, or that a
// command rewrote, is the repository's.

export function workspaceMemoryTrusted(
  stateDir: string,
  text: string,
  env: NodeJS.ProcessEnv = process.env,
  /** False in an untrusted VS Code workspace: approvals count for nothing there. */
  approvalsCount = true,
): boolean {
  if (ledgerForStateDir(stateDir, env).isOwnFile(WORKSPACE_MEMORY_FILE, text)) return true;
  if (!approvalsCount) return false;
  const approved = trustStore(path.dirname(stateDir), env).read()[`memory:${WORKSPACE_MEMORY_FILE}`];
  return approved?.hash === sha256(text);
}

/** Keel wrote this version of the workspace MEMORY.md (or a file of its history). */
export function recordMemoryWrite(
  stateDir: string,
  rel: string,
  text: string,
  env: NodeJS.ProcessEnv = process.env,
): void {
  ledgerForStateDir(stateDir, env).recordFile(rel, text);
}
