import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkpointsRoot } from './store.ts';

// Disk use of checkpoints, and pruning by a size budget (oldest sessions first).

export const DEFAULT_CHECKPOINT_BUDGET_BYTES = 512 * 1024 * 1024;

export interface SessionCheckpointStats {
  readonly sessionId: string;
  readonly bytes: number;
  readonly blobs: number;
  readonly changes: number;
  readonly prompts: number;
  readonly updatedAt: number;
}

export interface CheckpointStats {
  readonly dir: string;
  readonly totalBytes: number;
  readonly sessions: SessionCheckpointStats[];
}

function dirSize(dir: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return { bytes, files };
  }
  for (const e of entries) {
    const abs = path.join(dir, e.name);
    if (e.isDirectory()) {
      const sub = dirSize(abs);
      bytes += sub.bytes;
      files += sub.files;
    } else if (e.isFile()) {
      bytes += fs.statSync(abs).size;
      files++;
    }
  }
  return { bytes, files };
}

function lineCount(file: string): number {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.trim()).length;
  } catch {
    return 0;
  }
}

function mtime(file: string, fallback: string): number {
  for (const f of [file, fallback]) {
    try {
      return fs.statSync(f).mtimeMs;
    } catch {
      // try the next
    }
  }
  return 0;
}

export function checkpointStats(stateDir: string): CheckpointStats {
  const dir = checkpointsRoot(stateDir);
  let names: string[] = [];
  try {
    names = fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    // no checkpoints yet
  }
  const sessions = names.map((sessionId): SessionCheckpointStats => {
    const sdir = path.join(dir, sessionId);
    const total = dirSize(sdir);
    return {
      sessionId,
      bytes: total.bytes,
      blobs: dirSize(path.join(sdir, 'blobs')).files,
      changes: lineCount(path.join(sdir, 'changes.jsonl')),
      prompts: lineCount(path.join(sdir, 'prompts.jsonl')),
      updatedAt: mtime(path.join(sdir, 'changes.jsonl'), sdir),
    };
  });
  sessions.sort((a, b) => a.updatedAt - b.updatedAt);
  return { dir, totalBytes: sessions.reduce((n, s) => n + s.bytes, 0), sessions };
}

/** Deletes whole session checkpoint folders, oldest first, until the total fits the budget. */
export function pruneCheckpoints(
  stateDir: string,
  budgetBytes: number,
  keep: readonly string[] = [],
): string[] {
  const stats = checkpointStats(stateDir);
  let total = stats.totalBytes;
  const removed: string[] = [];
  for (const s of stats.sessions) {
    if (total <= budgetBytes) break;
    if (keep.includes(s.sessionId)) continue;
    fs.rmSync(path.join(stats.dir, s.sessionId), { recursive: true, force: true });
    total -= s.bytes;
    removed.push(s.sessionId);
  }
  return removed;
}
