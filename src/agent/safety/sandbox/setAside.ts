import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { keelHome } from '../../trust/paths.ts';

// What the sandbox takes out of the user's tree after a command (a new `.vscode/settings.json`, a
// replaced link) is set aside under `<keelHome>/set-aside/`, never deleted. A file that appears at a
// pinned path while a long command runs cannot be told apart from one the user made meanwhile (VS
// Code's settings editor, a terminal): it must not be left where it would run, and it must not be
// lost either. The sandbox cannot read or write `<keelHome>`, so nothing there runs.

/** Past this, a copy across file systems is not made: the path is removed and the report says so. */
const MAX_COPY_BYTES = 32 * 1024 * 1024;

function size(p: string, limit: number): number {
  const stat = fs.lstatSync(p);
  if (!stat.isDirectory()) return stat.size;
  let total = 0;
  for (const name of fs.readdirSync(p)) {
    total += size(path.join(p, name), limit - total);
    if (total > limit) break;
  }
  return total;
}

/** Moves `p` out of the tree; returns where it went, or undefined when it was too big to keep. */
export function setAside(p: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dest = path.join(
    keelHome(env),
    'set-aside',
    `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(3).toString('hex')}`,
    path.resolve(p).replace(/^[/\\]+/, ''),
  );
  fs.mkdirSync(path.dirname(dest), { recursive: true, mode: 0o700 });
  try {
    fs.renameSync(p, dest);
    return dest;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
  }
  if (size(p, MAX_COPY_BYTES) > MAX_COPY_BYTES) {
    fs.rmSync(p, { recursive: true, force: true });
    return undefined;
  }
  // Links are copied as links: what they point at is not the tree's to copy.
  fs.cpSync(p, dest, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  fs.rmSync(p, { recursive: true, force: true });
  return dest;
}

/** The words a report uses for where a path went. */
export function keptAt(dest: string | undefined): string {
  return dest ? `kept at ${dest}` : 'too large to keep a copy';
}
