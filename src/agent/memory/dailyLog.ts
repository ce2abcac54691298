import * as fs from 'node:fs';
import * as path from 'node:path';
import { ledgerForStateDir } from '../trust/ledger.ts';
import { dateOf } from './document.ts';
import type { MemoryChange, MemoryPaths } from './store.ts';

// The daily log (seed 000 §5, "memory/YYYY-MM-DD.md: append-only, keeps the raw details"): next to
// the curated MEMORY.md, `.keel/memory/<date>.md` gets one record per memory change — when, who
// (the agent, a consolidation, an undo), which file, and the exact lines added and removed. MEMORY.md
// is what the prompt carries; the day logs are found with MemorySearch, never injected.
// Threat: `.keel/` can come with the repository, so a planted day log could put words in the
// user's mouth through MemorySearch. Like MEMORY.md, a day log counts only in a version Keel wrote
// (hash in the state ledger outside the workspace); one that is not is set aside, never built on.

export const DAY_LOG_NAME = /^\d{4}-\d{2}-\d{2}\.md$/;

const rel = (paths: MemoryPaths, file: string) =>
  path.relative(path.dirname(paths.stateDir), file).split(path.sep).join('/');

export function dayLogPath(paths: MemoryPaths, ts: number): string {
  return path.join(path.dirname(paths.workspace), `${dateOf(ts)}.md`);
}

/** The text of a day log if Keel wrote it as it is now; undefined otherwise (missing, foreign, a link). */
export function ownDayLog(stateDir: string, file: string): string | undefined {
  try {
    const st = fs.lstatSync(file);
    if (!st.isFile()) return undefined;
    const text = fs.readFileSync(file, 'utf8');
    const key = path.relative(path.dirname(stateDir), file).split(path.sep).join('/');
    return ledgerForStateDir(stateDir).isOwnFile(key, text) ? text : undefined;
  } catch {
    return undefined;
  }
}

function lines(text: string | null): string[] {
  return (text ?? '').split('\n').filter((l) => l.trim() !== '');
}

export function dayLogRecord(change: MemoryChange): string {
  const before = new Set(lines(change.before));
  const after = new Set(lines(change.after));
  const added = [...after].filter((l) => !before.has(l) && !l.startsWith('#'));
  const removed = [...before].filter((l) => !after.has(l) && !l.startsWith('#'));
  const time = new Date(change.ts).toISOString().slice(11, 16);
  const file = change.scope === 'user' ? '~/.keel/MEMORY.md' : '.keel/memory/MEMORY.md';
  return [
    `## ${time} UTC — ${change.origin}: ${change.summary.replace(/\s+/g, ' ')}`,
    `- file: ${file} (change ${change.id})`,
    ...added.map((l) => `- added: ${l.replace(/^\s*[-*]\s+/, '')}`),
    ...removed.map((l) => `- removed: ${l.replace(/^\s*[-*]\s+/, '')}`),
  ].join('\n');
}

/** Appends the change to its day's log. Never throws: the log is a record, not the memory itself. */
export function appendDayLog(paths: MemoryPaths, change: MemoryChange): void {
  try {
    const file = dayLogPath(paths, change.ts);
    const exists = fs.existsSync(file) || isLink(file);
    const own = ownDayLog(paths.stateDir, file);
    if (exists && own === undefined) fs.renameSync(file, `${file}.not-keel-${change.ts}`);
    const base = own ?? `# Memory log ${dateOf(change.ts)}\n`;
    const next = `${base.replace(/\n*$/, '\n')}\n${dayLogRecord(change)}\n`;
    ledgerForStateDir(paths.stateDir).recordFile(rel(paths, file), next);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, next);
    fs.renameSync(tmp, file);
  } catch {
    // A full disk or a vanished folder loses one record of the day log; MEMORY.md and its journal hold the change.
  }
}

function isLink(file: string): boolean {
  try {
    return fs.lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}
