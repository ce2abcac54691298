import * as path from 'node:path';
import type { Host } from '../host.ts';

// Output limits (DESIGN.md §3): at most 2000 lines / 50 KB reach the model; head and tail are kept
// (errors usually sit at the end), and the full text is spilled to a file whose path the model gets.

export const MAX_LINES = 2000;
export const MAX_BYTES = 50 * 1024;

export interface LimitedOutput {
  readonly text: string;
  readonly truncated: boolean;
  /** Workspace-relative path of the full output, when truncated. */
  readonly spillPath?: string;
  readonly totalLines: number;
  readonly totalBytes: number;
}

export interface LimitOptions {
  readonly host: Host;
  /** Used in the spill file name, e.g. "bash-stdout". */
  readonly label: string;
  readonly toolUseId: string;
  readonly maxLines?: number;
  readonly maxBytes?: number;
}

function takeBytes(lines: string[], budget: number, fromEnd: boolean): string[] {
  const taken: string[] = [];
  let used = 0;
  const ordered = fromEnd ? [...lines].reverse() : lines;
  for (const line of ordered) {
    const size = Buffer.byteLength(line, 'utf8') + 1;
    if (used + size > budget) break;
    taken.push(line);
    used += size;
  }
  return fromEnd ? taken.reverse() : taken;
}

export function limitOutput(text: string, options: LimitOptions): LimitedOutput {
  const maxLines = options.maxLines ?? MAX_LINES;
  const maxBytes = options.maxBytes ?? MAX_BYTES;
  const totalBytes = Buffer.byteLength(text, 'utf8');
  const lines = text.split('\n');
  const totalLines = lines.length;
  if (totalLines <= maxLines && totalBytes <= maxBytes) {
    return { text, truncated: false, totalLines, totalBytes };
  }
  const safeId = options.toolUseId.replace(/[^A-Za-z0-9_-]/g, '_');
  const safeLabel = options.label.replace(/[^A-Za-z0-9_-]/g, '_');
  const spillAbs = path.join(options.host.stateDir, 'tool-output', `${safeId}-${safeLabel}.txt`);
  options.host.storage.writeText(spillAbs, text);
  const root = options.host.workspace.roots[0] ?? '';
  const spillPath = path.relative(root, spillAbs);

  // Lines longer than the whole byte budget are cut so head/tail are never empty.
  const clipped = lines.map((l) => (l.length > maxBytes / 4 ? `${l.slice(0, maxBytes / 4)}… [line cut]` : l));
  const headLines = Math.floor(maxLines / 2);
  const head = takeBytes(clipped.slice(0, headLines), Math.floor(maxBytes / 2), false);
  const tail = takeBytes(
    clipped.slice(Math.max(head.length, clipped.length - headLines)),
    Math.floor(maxBytes / 2),
    true,
  );
  const omitted = totalLines - head.length - tail.length;
  const marker = `\n[… ${omitted} lines omitted (${totalLines} lines, ${totalBytes} bytes in all). Full output: ${spillPath} — use Read with offset/limit, or Grep, on that file …]\n`;
  return {
    text: head.join('\n') + marker + tail.join('\n'),
    truncated: true,
    spillPath,
    totalLines,
    totalBytes,
  };
}
