import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// Where the user's side of Keel lives, outside every workspace: user-level config (MEMORY.md,
// mcp.json), and per workspace the state that grants anything (trust approvals, network allowances,
// the ledger of what Keel itself wrote under `.keel/`). A repository cannot commit files here, and
// the command sandbox cannot read or write it.

/** `~/.keel`, or `KEEL_HOME` when set (tests, and users who keep dotfiles elsewhere). */
export function keelHome(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.KEEL_HOME?.trim();
  return override ? path.resolve(override) : path.join(os.homedir(), '.keel');
}

/** A workspace's stable id: its symlink-resolved primary root, hashed. */
export function workspaceId(root: string): string {
  let real = path.resolve(root);
  try {
    real = fs.realpathSync(real);
  } catch {
    // not there (yet): the resolved path is the best key
  }
  return createHash('sha256').update(real).digest('hex').slice(0, 24);
}

/** `<keelHome>/workspaces/<id>/`: per-workspace state that only Keel and the user write. */
export function workspaceStateHome(root: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(keelHome(env), 'workspaces', workspaceId(root));
}
