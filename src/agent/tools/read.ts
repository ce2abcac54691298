import { z } from 'zod';
import { sniffImageType } from '../context/images.ts';
import { lazy } from '../lazy.ts';
import { MAX_BYTES } from './output.ts';
import { isUntrustedPath, wrapUntrusted } from '../safety/untrusted.ts';
import type { ToolContext, ToolDefinition, ToolResult } from './protocol.ts';
import { ok, partial } from './protocol.ts';
import {
  clipLine,
  failure,
  formatSize,
  looksBinary,
  notFound,
  resolvePath,
  runTool,
  sha256Hex,
} from './fs/common.ts';
import { type ImageInfo, readImage } from './fs/image.ts';

export const READ_DEFAULT_LIMIT = 2000;
export const READ_MAX_LINE_CHARS = 2000;
/** Above this, a whole-file read is refused: the model should page or search instead. */
export const READ_HUGE_BYTES = 10 * 1024 * 1024;
/** Above this, not even a paged read is attempted (the whole file would sit in memory). */
export const READ_HARD_MAX_BYTES = 256 * 1024 * 1024;

export const readInputSchema = lazy(() =>
  z.object({
    path: z.string(),
    offset: z.number().int().min(1).max(1e9).optional().describe('1-based first line'),
    limit: z.number().int().min(1).max(READ_DEFAULT_LIMIT).optional(),
  }),
);
export type ReadInput = z.infer<ReturnType<typeof readInputSchema>>;

export interface ReadData {
  readonly path: string;
  readonly totalLines: number;
  /** First and last line shown (1-based, inclusive); 0/0 for an empty file. */
  readonly startLine: number;
  readonly endLine: number;
  readonly size: number;
  /** More lines exist after endLine. */
  readonly truncated: boolean;
  readonly sha256: string;
  /** Set when the file is an image (PNG, JPEG, GIF, WebP by its bytes): the model sees the image. */
  readonly image?: ImageInfo;
}

const DESCRIPTION = `Read a file with line numbers (number, tab, text), up to ${READ_DEFAULT_LIMIT} lines; page with offset/limit. An image file shows as the image.
Edit/Write of a file need a Read of it first. Not for folders (LS). Never Bash cat/head/sed.
Example: {"path":"src/big.ts","offset":2001}`;

function decode(bytes: Uint8Array): string {
  // UTF-16 files are text even though they are full of NUL bytes.
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  const text = new TextDecoder('utf-8').decode(bytes);
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function isUtf16(bytes: Uint8Array): boolean {
  return (bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff);
}

async function readFile(input: ReadInput, ctx: ToolContext): Promise<ToolResult<ReadData>> {
  const target = resolvePath(ctx, input.path);
  const stat = await ctx.host.workspace.stat(target.path);
  if (!stat) return notFound(ctx, target.path, target.display, 'File');
  if (stat.type === 'directory') {
    failure(
      'INVALID_PARAM',
      `${target.display} is a directory, not a file.`,
      `Use LS with ${JSON.stringify({ path: target.display })}.`,
    );
  }
  if (stat.type !== 'file') {
    failure('INVALID_PARAM', `${target.display} is not a regular file.`, 'Read only regular files.');
  }
  const paged = input.offset !== undefined || input.limit !== undefined;
  if (stat.size > READ_HARD_MAX_BYTES || (stat.size > READ_HUGE_BYTES && !paged)) {
    failure(
      'TOO_LARGE',
      `${target.display} is ${formatSize(stat.size)}, too large to read whole.`,
      stat.size > READ_HARD_MAX_BYTES
        ? 'Use Grep to find the relevant lines in it.'
        : 'Read a slice with offset/limit (e.g. {"offset":1,"limit":200}) or use Grep to find the relevant lines.',
    );
  }

  const bytes = await ctx.host.workspace.readFile(target.path, ctx.signal);
  const imageType = sniffImageType(bytes);
  if (imageType) {
    const image = readImage(bytes, imageType, target.display, ctx);
    const hash = sha256Hex(bytes);
    ctx.ledger.recordRead(target.path, hash);
    const data: ReadData = {
      path: target.display,
      size: bytes.length,
      sha256: hash,
      totalLines: 0,
      startLine: 0,
      endLine: 0,
      truncated: false,
      image: image.info,
    };
    return { ...ok(data, image.text, { bytes: bytes.length }), images: [image.attachment] };
  }
  if (looksBinary(bytes) && !isUtf16(bytes)) {
    failure(
      'BINARY_FILE',
      `${target.display} is a binary file (${formatSize(bytes.length)}); it cannot be shown as text.`,
      'Read text files only. Use Glob or LS to find the source file you need.',
    );
  }
  const hash = sha256Hex(bytes);
  const base = { path: target.display, size: bytes.length, sha256: hash };

  if (bytes.length === 0) {
    ctx.ledger.recordRead(target.path, hash);
    return ok(
      { ...base, totalLines: 0, startLine: 0, endLine: 0, truncated: false },
      `(File ${target.display} is empty.)`,
      { lines: 0, bytes: 0 },
    );
  }

  const lines = decode(bytes).split('\n');
  // A final newline terminates the last line; it does not start an empty one.
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const totalLines = lines.length;
  const offset = input.offset ?? 1;
  if (offset > totalLines) {
    failure(
      'INVALID_PARAM',
      `offset ${offset} is past the end of ${target.display} (${totalLines} lines).`,
      `Use an offset between 1 and ${totalLines}.`,
    );
  }
  const limit = input.limit ?? READ_DEFAULT_LIMIT;
  const width = Math.max(6, String(Math.min(totalLines, offset + limit - 1)).length);
  const out: string[] = [];
  let used = 0;
  let line = offset;
  let byteCapped = false;
  for (; line <= totalLines && line < offset + limit; line++) {
    const rendered = `${String(line).padStart(width, ' ')}\t${clipLine(lines[line - 1]!.replace(/\r$/, ''), READ_MAX_LINE_CHARS)}`;
    const size = Buffer.byteLength(rendered, 'utf8') + 1;
    if (used + size > MAX_BYTES && out.length > 0) {
      byteCapped = true;
      break;
    }
    out.push(rendered);
    used += size;
  }
  const endLine = line - 1;
  const truncated = endLine < totalLines;
  ctx.ledger.recordRead(target.path, hash);

  const data: ReadData = { ...base, totalLines, startLine: offset, endLine, truncated };
  // Dependency, vendored and generated files are data the user did not write: marked, never obeyed.
  const shown = out.join('\n');
  let text = isUntrustedPath(target.display)
    ? wrapUntrusted(shown, { source: 'file', path: target.display })
    : shown;
  const stats = { lines: out.length, bytes: bytes.length };
  if (!truncated) return ok(data, text, stats);
  const next = JSON.stringify({ path: target.display, offset: endLine + 1 });
  text += `\n\n[Showing lines ${offset}-${endLine} of ${totalLines}. Continue with ${next}.]`;
  // An explicit limit that was honoured is a complete answer; our own caps make it partial.
  const cappedByUs = byteCapped || input.limit === undefined;
  return cappedByUs ? partial(data, text, stats) : ok(data, text, stats);
}

export function createReadTool(): ToolDefinition<ReadInput, ReadData> {
  return {
    name: 'Read',
    description: DESCRIPTION,
    get inputSchema() {
      return readInputSchema();
    },
    readOnly: true,
    concurrentRead: true,
    execute: (input, ctx) => runTool(ctx, () => readFile(input, ctx)),
  };
}
