import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

// Files Keel's own edit tools wrote on the host (after the user's approval where one is needed). A
// sandboxed command that runs for a while (a background job) is checked afterwards for files it must
// not leave behind (`.vscode/settings.json`, `.npmrc`…); one the Write tool made meanwhile, with the
// same content, is the user's and stays.

const MAX_ENTRIES = 2000;
const MAX_FILES_IN_FOLDER = 200;
const written = new Map<string, string>();

/** Called by the edit tools right after a write: the canonical path and the sha256 of what was written. */
export function recordHostWrite(canonicalPath: string, sha256: string): void {
  written.delete(canonicalPath);
  written.set(canonicalPath, sha256);
  if (written.size > MAX_ENTRIES) {
    const oldest = written.keys().next().value;
    if (oldest !== undefined) written.delete(oldest);
  }
}

function fileHash(p: string): string | undefined {
  try {
    return createHash('sha256').update(fs.readFileSync(p)).digest('hex');
  } catch {
    return undefined;
  }
}

/** The path (a file, or a folder and everything in it) is exactly what Keel's tools wrote there. */
export function hostAuthored(p: string): boolean {
  if (written.size === 0) return false;
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(p);
  } catch {
    return false;
  }
  if (stat.isFile()) {
    const expected = written.get(p);
    return expected !== undefined && fileHash(p) === expected;
  }
  if (!stat.isDirectory()) return false;
  const files: string[] = [];
  const walk = (dir: string): boolean => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!walk(full)) return false;
      } else if (entry.isFile()) {
        files.push(full);
        if (files.length > MAX_FILES_IN_FOLDER) return false;
      } else return false;
    }
    return true;
  };
  try {
    if (!walk(p)) return false;
  } catch {
    return false;
  }
  return files.every((f) => written.get(f) !== undefined && fileHash(f) === written.get(f));
}
