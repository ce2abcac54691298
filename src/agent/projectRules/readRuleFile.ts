import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PathGuard } from '../safety/paths/pathGuard.ts';

// Reading one rules file the way a tool reads a path: through the path guard, so a symlink is
// followed only while it stays inside the workspace (a cloned repo can ship `CLAUDE.md -> ~/.ssh/…`),
// and only a bounded head is read, so a 5 MB file costs 64 KB of I/O and is then only indexed.

/** More than any file the prefix would inline (render.ts caps far lower); the rest is never read. */
export const RULE_READ_BYTES = 64 * 1024;

export type RuleRead =
  | { readonly ok: true; readonly text: string; readonly size: number; readonly complete: boolean }
  | { readonly ok: false; readonly reason: 'missing' | 'outside' | 'not_a_file' | 'binary' | 'unreadable' };

/** The canonical folder `rel` names, when it is a folder inside the workspace ('outside': a link out). */
export function ruleDir(guard: PathGuard, rel: string): string | 'outside' | undefined {
  const resolved = guard.resolve(rel);
  if (!resolved.ok || !insideRoots(guard, resolved.path)) return 'outside';
  try {
    return fs.statSync(resolved.path).isDirectory() ? resolved.path : undefined;
  } catch {
    return undefined;
  }
}

function insideRoots(guard: PathGuard, canonical: string): boolean {
  // The guard also admits Keel's state dir; rules files are the repository's, so only the roots count.
  return guard.roots.some((root) => {
    const real = safeRealpath(root);
    const rel = path.relative(real, canonical);
    return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
  });
}

function safeRealpath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

export function readRuleFile(guard: PathGuard, rel: string): RuleRead {
  const resolved = guard.resolve(rel);
  if (!resolved.ok) return { ok: false, reason: 'outside' };
  if (!insideRoots(guard, resolved.path)) return { ok: false, reason: 'outside' };
  let fd: number | undefined;
  try {
    // Open the canonical path the guard checked, never the input (what was checked is what is read).
    fd = fs.openSync(resolved.path, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0));
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return { ok: false, reason: 'not_a_file' };
    const want = Math.min(stat.size, RULE_READ_BYTES);
    const buffer = Buffer.alloc(want);
    let got = 0;
    while (got < want) {
      const n = fs.readSync(fd, buffer, got, want - got, got);
      if (n === 0) break;
      got += n;
    }
    const head = buffer.subarray(0, got);
    if (head.includes(0)) return { ok: false, reason: 'binary' };
    const complete = got >= stat.size;
    let text = head.toString('utf8');
    // A cut in the middle of a multi-byte character leaves a replacement character: drop it.
    if (!complete) text = text.replace(/\uFFFD+$/, '');
    return { ok: true, text, size: stat.size, complete };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, reason: 'missing' };
    if (code === 'EISDIR') return { ok: false, reason: 'not_a_file' };
    if (code === 'ELOOP') return { ok: false, reason: 'outside' };
    return { ok: false, reason: 'unreadable' };
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
