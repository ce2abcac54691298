import { createHash } from 'node:crypto';

// Per-session memory of what the model has seen. Keyed by canonical path (the path guard's output),
// so two spellings of one file share an entry. The hash is over the full bytes: an mtime can stay
// put across a change (coarse clocks, `touch -r`), content cannot.

/** Per-session record of which files were read, for read-before-edit and the optimistic lock. */
export interface ReadLedger {
  /** Record that `path` was read with this exact content hash (sha256 hex of the bytes). */
  recordRead(path: string, contentHash: string): void;
  /** Hash recorded at the last read or Keel write, if any. */
  lastHash(path: string): string | undefined;
  /** After Keel itself writes a file, the new content counts as read. */
  recordWrite(path: string, contentHash: string): void;
  forget(path: string): void;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function createReadLedger(): ReadLedger {
  const hashes = new Map<string, string>();
  return {
    recordRead(path, contentHash) {
      hashes.set(path, contentHash);
    },
    lastHash(path) {
      return hashes.get(path);
    },
    recordWrite(path, contentHash) {
      hashes.set(path, contentHash);
    },
    forget(path) {
      hashes.delete(path);
    },
  };
}
