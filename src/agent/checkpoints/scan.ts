import * as fs from 'node:fs';
import * as path from 'node:path';
import { createIgnoreMatcher } from '../tools/fs/gitignore.ts';

// The cheap before/after scan that tells which files a command created, modified or deleted:
// one lstat per file (size, mtime, inode), no reads. Hashing happens only for entries that changed.
// Skipped: `.git` (anywhere), Keel's own state dir, and ignored files above the size cap.

export interface ScanEntry {
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
  readonly mode: number;
  /** Inode change time: set by the kernel on every write/rename, never by `touch -d` or `cp -p`. */
  readonly ctimeMs: number;
  /** Below an ignored directory (node_modules, dist…): watched, but no pre-image copy is kept. */
  readonly inIgnoredDir: boolean;
}

export type Scan = Map<string, ScanEntry>;

export interface ScanOptions {
  readonly root: string;
  /** Absolute directories never scanned (Keel's state dir). */
  readonly skipDirs: readonly string[];
  /** Ignored files bigger than this are not scanned at all. */
  readonly ignoredSizeCap: number;
}

export const DEFAULT_IGNORED_SIZE_CAP = 1024 * 1024;

export function scanWorkspace(options: ScanOptions): Scan {
  const out: Scan = new Map();
  const matcher = createIgnoreMatcher(options.root);
  const skip = new Set(options.skipDirs);
  const walk = (dirAbs: string, dirRel: string, ignoredDir: boolean) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dirAbs, { withFileTypes: true });
    } catch {
      return; // unreadable or vanished mid-scan: nothing we could restore there anyway
    }
    for (const entry of entries) {
      const name = entry.name;
      const abs = `${dirAbs}${path.sep}${name}`;
      const rel = dirRel === '' ? name : `${dirRel}/${name}`;
      if (entry.isDirectory()) {
        if (name === '.git' || skip.has(abs)) continue;
        walk(abs, rel, ignoredDir || matcher.isIgnored(rel, true));
        continue;
      }
      if (!entry.isFile()) continue; // symlinks, sockets, FIFOs: never followed, never restored
      let stat: fs.Stats;
      try {
        stat = fs.lstatSync(abs);
      } catch {
        continue;
      }
      // The ignore rules only matter for big files: asking them for every file would cost more than the stat.
      if (stat.size > options.ignoredSizeCap && (ignoredDir || matcher.isIgnored(rel, false))) continue;
      out.set(rel, entryOf(stat, ignoredDir));
    }
  };
  walk(options.root, '', false);
  return out;
}

export function entryOf(stat: fs.Stats, inIgnoredDir: boolean): ScanEntry {
  return {
    size: stat.size,
    mtimeMs: stat.mtimeMs,
    ino: stat.ino,
    mode: stat.mode & 0o7777,
    ctimeMs: stat.ctimeMs,
    inIgnoredDir,
  };
}

export function sameSignature(a: ScanEntry, b: ScanEntry): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;
}
