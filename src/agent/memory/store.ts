import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ledgerForStateDir, sha256 } from '../trust/ledger.ts';
import { keelHome } from '../trust/paths.ts';
import { workspaceMemoryTrusted } from '../trust/memoryTrust.ts';
import { appendDayLog } from './dailyLog.ts';

// Semantic memory (seed 000 §5): MEMORY.md files of short dated bullets under headings, one per
// workspace (`.keel/memory/MEMORY.md`) and one per user (`~/.keel/MEMORY.md`). Every change first
// saves the previous version under `.keel/memory/history/` and appends a journal line, so any change
// (the agent's, a consolidation's or a rollback's) can be undone.

export type MemoryScope = 'workspace' | 'user';

export interface MemoryPaths {
  /** `<stateDir>/memory/MEMORY.md` */
  readonly workspace: string;
  /** `~/.keel/MEMORY.md`; null = no user memory (tests, sub-agents). */
  readonly user: string | null;
  /** `<stateDir>/memory/history/` — backups and `journal.jsonl`. */
  readonly history: string;
  /** `<root>/.keel`: what Keel writes here it records in the state ledger (src/agent/trust/). */
  readonly stateDir: string;
}

export function memoryPaths(stateDir: string, userFile?: string | null): MemoryPaths {
  return {
    workspace: path.join(stateDir, 'memory', 'MEMORY.md'),
    user: userFile === undefined ? path.join(keelHome(), 'MEMORY.md') : userFile,
    history: path.join(stateDir, 'memory', 'history'),
    stateDir,
  };
}

/** One change as the UIs show it (diff card) and rollback undoes it. */
export interface MemoryChange {
  readonly id: string;
  readonly scope: MemoryScope;
  readonly file: string;
  /** Content before the change; null = the file did not exist. */
  readonly before: string | null;
  /** Content after the change; null = the file was removed. */
  readonly after: string | null;
  /** 'agent' (Memory tool), 'consolidation', 'rollback', 'undo'. */
  readonly origin: string;
  readonly summary: string;
  readonly ts: number;
  /** Set on an undo/rollback: the change it reverted. */
  readonly undoes?: string;
}

interface JournalLine {
  readonly id: string;
  readonly ts: number;
  readonly scope: MemoryScope;
  readonly file: string;
  /** Backup of the previous version (file name under history/), or null when there was none. */
  readonly backup: string | null;
  readonly origin: string;
  readonly summary: string;
  /** For a rollback/undo: the change it reverted. */
  readonly undoes?: string;
}

export class MemoryError extends Error {}

/**
 * Nothing from the Keel folder (`.keel` or `~/.keel`) down to the file may be a link: a linked
 * `.keel/memory` must not turn a memory write into a write anywhere else.
 */
function assertPlainPath(file: string): void {
  const parts = file.split(path.sep);
  const keelAt = parts.lastIndexOf('.keel');
  for (let i = keelAt < 0 ? parts.length - 1 : keelAt; i < parts.length; i++) {
    const at = parts.slice(0, i + 1).join(path.sep);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(at);
    } catch {
      return; // does not exist yet: nor does anything below it
    }
    if (st.isSymbolicLink()) throw new MemoryError(`Refusing to write memory through a link: ${at}`);
    if (i === parts.length - 1 && !st.isFile() && !st.isDirectory())
      throw new MemoryError(`Not a regular file: ${at}`);
  }
}

export function readMemoryFile(file: string): string | undefined {
  try {
    assertPlainPath(file);
    const st = fs.lstatSync(file);
    if (!st.isFile()) return undefined;
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function journalPath(paths: MemoryPaths): string {
  return path.join(paths.history, 'journal.jsonl');
}

const rel = (paths: MemoryPaths, file: string) =>
  path.relative(path.dirname(paths.stateDir), file).split(path.sep).join('/');

/** Journal lines Keel wrote itself: a planted journal or backup cannot steer a rollback. */
function readJournal(paths: MemoryPaths): JournalLine[] {
  const text = readMemoryFile(journalPath(paths));
  if (!text) return [];
  const own = ledgerForStateDir(paths.stateDir).ownLines(rel(paths, journalPath(paths)));
  const out: JournalLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim() || !own.has(sha256(line))) continue;
    try {
      out.push(JSON.parse(line) as JournalLine);
    } catch {
      // a torn last line (crash mid-write) is skipped, never fatal
    }
  }
  return out;
}

function stamp(ts: number): string {
  return new Date(ts).toISOString().replace(/[-:.]/g, '');
}

/**
 * Replace a memory file's content, saving the previous version first. Returns the change, or
 * undefined when the content is unchanged.
 */
export function writeMemory(
  paths: MemoryPaths,
  scope: MemoryScope,
  next: string | null,
  meta: { origin: string; summary: string; now: number; undoes?: string },
): MemoryChange | undefined {
  const file = scope === 'user' ? paths.user : paths.workspace;
  if (!file) throw new MemoryError('User memory is not available in this session.');
  assertPlainPath(file);
  assertPlainPath(paths.history);
  const before = readMemoryFile(file) ?? null;
  if (before === next) return undefined;
  // Building on a workspace MEMORY.md Keel did not write would launder the repository's text into
  // Keel's own (rollback and undo restore Keel's own saved versions, so they may replace it).
  if (
    scope === 'workspace' &&
    before !== null &&
    meta.origin !== 'rollback' &&
    meta.origin !== 'undo' &&
    !workspaceMemoryTrusted(paths.stateDir, before)
  )
    throw new MemoryError(
      '.keel/memory/MEMORY.md was not written by Keel here (it came with the repository or a command changed it): review it with `keel trust` (VS Code: "Keel: Review Workspace Trust") before Keel uses or changes it.',
    );
  const ledger = ledgerForStateDir(paths.stateDir);
  fs.mkdirSync(paths.history, { recursive: true });
  const id = `mem_${stamp(meta.now)}_${createHash('sha256').update(`${file}\n${before}\n${next}\n${Math.random()}`).digest('hex').slice(0, 6)}`;
  let backup: string | null = null;
  if (before !== null) {
    backup = `${id}-${scope}.md`;
    fs.writeFileSync(path.join(paths.history, backup), before);
    ledger.recordFile(rel(paths, path.join(paths.history, backup)), before);
  }
  const line: JournalLine = {
    id,
    ts: meta.now,
    scope,
    file,
    backup,
    origin: meta.origin,
    summary: meta.summary,
    ...(meta.undoes ? { undoes: meta.undoes } : {}),
  };
  // Journal first: a crash between the two leaves a journal line whose change did not happen, and
  // rolling it back restores the same content — nothing is lost either way.
  const journalLine = JSON.stringify(line);
  ledger.recordLine(rel(paths, journalPath(paths)), journalLine);
  fs.appendFileSync(journalPath(paths), `${journalLine}\n`);
  if (next === null) fs.rmSync(file, { force: true });
  else {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, next);
    if (scope === 'workspace') ledger.recordFile(rel(paths, file), next);
    fs.renameSync(tmp, file);
  }
  const change: MemoryChange = {
    id,
    scope,
    file,
    before,
    after: next,
    origin: meta.origin,
    summary: meta.summary,
    ts: meta.now,
    ...(meta.undoes ? { undoes: meta.undoes } : {}),
  };
  appendDayLog(paths, change);
  return change;
}

function backupContent(paths: MemoryPaths, line: JournalLine): string | null {
  if (line.backup === null) return null;
  const file = path.join(paths.history, path.basename(line.backup));
  const text = readMemoryFile(file);
  if (text === undefined) throw new MemoryError(`The saved version ${line.backup} is missing from history.`);
  if (!ledgerForStateDir(paths.stateDir).isOwnFile(rel(paths, file), text))
    throw new MemoryError(`The saved version ${line.backup} was changed outside Keel; it is not restored.`);
  return text;
}

/** Undo one change by id (the panel's Undo): restores the version saved before it. */
export function undoChange(paths: MemoryPaths, changeId: string, now: number): MemoryChange | undefined {
  const line = readJournal(paths).find((l) => l.id === changeId);
  if (!line) throw new MemoryError(`No memory change ${changeId} in ${journalPath(paths)}.`);
  return writeMemory(paths, line.scope, backupContent(paths, line), {
    origin: 'undo',
    summary: `undo of: ${line.summary}`,
    now,
    undoes: line.id,
  });
}

/**
 * `keel memory rollback`: undo the most recent change not yet undone (rollbacks themselves are not
 * rolled back, so calling it again walks further back).
 */
export function rollbackLast(paths: MemoryPaths, now: number): MemoryChange | undefined {
  const journal = readJournal(paths);
  const undone = new Set(journal.flatMap((l) => (l.undoes ? [l.undoes] : [])));
  const last = [...journal].reverse().find((l) => !l.undoes && !undone.has(l.id));
  if (!last) return undefined;
  return writeMemory(paths, last.scope, backupContent(paths, last), {
    origin: 'rollback',
    summary: `rollback of: ${last.summary}`,
    now,
    undoes: last.id,
  });
}
