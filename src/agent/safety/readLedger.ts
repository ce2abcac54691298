import { createHash } from 'node:crypto';
import type { ReadLedger } from '../tools/protocol.ts';

// Per-session memory of what the model has seen. Keyed by canonical path (the path guard's output),
// so two spellings of one file share an entry. The hash is over the full bytes: an mtime can stay
// put across a change (coarse clocks, `touch -r`), content cannot.

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
