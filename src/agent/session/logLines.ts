import * as fs from 'node:fs';

// Reads a JSONL file line by line through a fixed buffer, synchronously (session resume is sync),
// so a 50 MB log is never one string in memory nor a 50 MB array of lines: only the line being
// looked at and what the caller keeps of it.

export interface LogLine {
  /**
   * The line without its '\n'. Decoded only when asked, and a view into the read buffer: valid until
   * the generator resumes (copy it to keep it), so a scan that skips most lines copies nothing.
   */
  readonly bytes: Buffer;
  /** Byte offset just past this line's '\n'. */
  readonly end: number;
}

export interface TrailingFragment {
  /** Byte offset where the unterminated last line starts. */
  readonly start: number;
  readonly bytes: Buffer;
}

const CHUNK_BYTES = 1 << 20;

/**
 * Every '\n'-terminated line of `fd` from byte `from` on. Bytes after the last '\n' (a torn write)
 * are not a line: they are handed to `onFragment`.
 */
export function* readLines(
  fd: number,
  from = 0,
  onFragment?: (fragment: TrailingFragment) => void,
): Generator<LogLine> {
  // A small log gets a buffer its size (+1: the read that sees the end), not a whole chunk.
  const size = Math.max(0, fs.fstatSync(fd).size - from);
  const chunkBytes = Math.max(4096, Math.min(CHUNK_BYTES, size + 1));
  const chunk = Buffer.allocUnsafe(chunkBytes);
  let carry: Buffer | undefined;
  let position = from;
  let lineStart = from;
  for (;;) {
    const read = fs.readSync(fd, chunk, 0, chunkBytes, position);
    if (read === 0) break;
    position += read;
    let at = 0;
    for (;;) {
      const nl = chunk.indexOf(10, at);
      if (nl < 0 || nl >= read) break;
      const piece = chunk.subarray(at, nl);
      const bytes = carry ? Buffer.concat([carry, piece]) : piece;
      carry = undefined;
      lineStart += bytes.length + 1;
      yield { bytes, end: lineStart };
      at = nl + 1;
    }
    if (at < read) {
      const rest = chunk.subarray(at, read);
      carry = carry ? Buffer.concat([carry, rest]) : Buffer.from(rest);
    }
  }
  if (carry && carry.length > 0) onFragment?.({ start: lineStart, bytes: carry });
}

/** Opens `file` for reading; ENOENT becomes a clear error naming the log. */
export function openLog(file: string): number {
  try {
    return fs.openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`No session log at ${file}`);
    throw error;
  }
}
