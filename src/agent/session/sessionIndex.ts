import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { isKeelSessionLog } from '../trust/ledger.ts';
import { readLines } from './logLines.ts';

// The history list (`.keel/sessions/*.jsonl`, newest first) without reading whole logs: what each
// log contributes (title, message count, header) is kept in `.keel/sessions/.index.json` with the
// byte offset scanned so far. Logs are append-only (P2), so a log that grew is scanned only from
// that offset; a log whose first line changed or that shrank below it is scanned again; a deleted
// log drops out. The index is a cache: missing, unreadable or from another version, it is rebuilt.

export interface SessionSummary {
  readonly id: string;
  readonly title: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly messageCount: number;
  /** Model replies (assistant messages): 0 = the run failed before any answer (no key, no server). */
  readonly replies: number;
  /**
   * Keel did not create this log here (it came with the repository, or predates the ledger): it
   * cannot be resumed, and its title is the repository's text.
   */
  readonly foreign?: boolean;
  /** A reset session: the session it continues, and why that one was reset. */
  readonly continuedFrom?: string;
  readonly continuedReason?: string;
}

export const INDEX_FILE = '.index.json';
const TITLE_CHARS = 80;
const HEAD_BYTES = 64 * 1024;

const entrySchema = z.object({
  id: z.string(),
  createdAt: z.number(),
  /** A sub-agent's log (it belongs to its parent session: not a chat of its own). */
  child: z.boolean(),
  /** The header's `continuedFrom` / `continuedReason` (a session a reset continued into). */
  continuedFrom: z.string().optional(),
  continuedReason: z.string().optional(),
  /** The log's first line as read: a log replaced by another one does not keep a stale entry. */
  head: z.string(),
  title: z.string().nullable(),
  messageCount: z.number().int().nonnegative(),
  /** Absent in indexes written before it was counted: such an entry is scanned again. */
  replies: z.number().int().nonnegative().optional(),
  /** Offset just past the last complete line counted. */
  scanned: z.number().int().nonnegative(),
  /** Size and mtime when last looked at: both unchanged means nothing to read. */
  size: z.number().int().nonnegative(),
  mtimeMs: z.number(),
});
type Entry = z.infer<typeof entrySchema>;

const indexSchema = z.object({ version: z.literal(1), entries: z.record(z.string(), entrySchema) });

export interface ListOptions {
  /** Told when the index had to be rebuilt or could not be saved (the list is still complete). */
  readonly log?: (message: string) => void;
}

function readIndex(file: string, log: ListOptions['log']): Record<string, Entry> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      log?.(`session index ${file} unreadable (${String(error)}); rebuilding it`);
    return {};
  }
  try {
    const parsed = indexSchema.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data.entries;
    log?.(
      `session index ${file} is not valid (${parsed.error.issues[0]?.message ?? 'bad shape'}); rebuilding it`,
    );
  } catch (error) {
    log?.(`session index ${file} is corrupt (${(error as Error).message}); rebuilding it`);
  }
  return {};
}

function firstLine(fd: number): string | undefined {
  const buf = Buffer.allocUnsafe(HEAD_BYTES);
  const read = fs.readSync(fd, buf, 0, HEAD_BYTES, 0);
  const nl = buf.subarray(0, read).indexOf(10);
  if (nl >= 0) return buf.toString('utf8', 0, nl);
  if (read < HEAD_BYTES) return undefined; // no complete first line yet
  for (const { bytes } of readLines(fd)) return bytes.toString('utf8');
  return undefined;
}

const MESSAGE_LINE = Buffer.from('{"type":"message_appended"');
const TYPED_LINE = Buffer.from('{"type":');
const ASSISTANT = Buffer.from(',"message":{"role":"assistant"');

/** Scans `fd` from `entry.scanned` on, adding messages and the title; undefined for a bad header. */
function scan(fd: number, head: string, from: Entry | undefined, stat: fs.Stats): Entry | undefined {
  let entry: Entry;
  if (from) entry = { ...from };
  else {
    let header: Record<string, unknown>;
    try {
      header = JSON.parse(head) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    if (header.type !== 'session' || typeof header.id !== 'string' || typeof header.createdAt !== 'number')
      return undefined;
    entry = {
      id: header.id,
      createdAt: header.createdAt,
      child: typeof header.parent === 'string',
      ...(typeof header.continuedFrom === 'string' ? { continuedFrom: header.continuedFrom } : {}),
      ...(typeof header.continuedReason === 'string' ? { continuedReason: header.continuedReason } : {}),
      head,
      title: null,
      messageCount: 0,
      replies: 0,
      scanned: Buffer.byteLength(head) + 1,
      size: 0,
      mtimeMs: 0,
    };
  }
  let seen = entry.scanned;
  for (const { bytes, end } of readLines(fd, entry.scanned, (f) => {
    seen = f.start + f.bytes.length;
  })) {
    entry.scanned = end;
    seen = end;
    // Our writer puts the event type first; only message lines are parsed, and only until the title.
    const isMessage = bytes.subarray(0, MESSAGE_LINE.length).equals(MESSAGE_LINE);
    if (
      isMessage &&
      bytes.subarray(MESSAGE_LINE.length, MESSAGE_LINE.length + ASSISTANT.length).equals(ASSISTANT)
    )
      entry.replies = (entry.replies ?? 0) + 1;
    if (!isMessage && bytes.subarray(0, TYPED_LINE.length).equals(TYPED_LINE)) continue;
    if (!isMessage || entry.title === null) {
      let event: { type?: unknown; message?: { role?: unknown; text?: unknown } };
      try {
        event = JSON.parse(bytes.toString('utf8')) as typeof event;
      } catch {
        continue;
      }
      if (event?.type !== 'message_appended' || typeof event.message !== 'object') continue;
      if (entry.title === null && event.message.role === 'user' && typeof event.message.text === 'string')
        entry.title = event.message.text.slice(0, TITLE_CHARS);
    }
    entry.messageCount++;
  }
  entry.size = Math.max(seen, stat.size);
  entry.mtimeMs = stat.mtimeMs;
  return entry;
}

function summarise(dir: string, name: string, known: Entry | undefined): Entry | undefined {
  const file = path.join(dir, name);
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const stat = fs.fstatSync(fd);
    const current = known?.replies === undefined ? undefined : known;
    if (current && current.size === stat.size && current.mtimeMs === stat.mtimeMs) return current;
    const head = firstLine(fd);
    if (head === undefined) return undefined;
    // Append-only: a log that still starts the same and did not shrink is read from where we stopped.
    const resume = current && current.head === head && stat.size >= current.scanned ? current : undefined;
    return scan(fd, head, resume, stat);
  } catch {
    return undefined; // an unreadable log is left out of the list, never deleted
  } finally {
    fs.closeSync(fd);
  }
}

/** Past sessions, newest first, for `--resume` and the extension's history list. */
export function listSessions(stateDir: string, options: ListOptions = {}): SessionSummary[] {
  const dir = path.join(stateDir, 'sessions');
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return [];
  }
  const indexFile = path.join(dir, INDEX_FILE);
  const before = readIndex(indexFile, options.log);
  const after: Record<string, Entry> = {};
  let changed = false;
  const out: SessionSummary[] = [];
  for (const name of names) {
    const known = Object.hasOwn(before, name) ? before[name] : undefined;
    const entry = summarise(dir, name, known);
    if (entry !== known) changed = true;
    if (entry) after[name] = entry;
  }
  for (const name of names) {
    const entry = Object.hasOwn(after, name) ? after[name] : undefined;
    if (!entry || entry.child) continue;
    out.push({
      id: entry.id,
      // A reset session starts from a handoff, not a prompt: it goes by the title of the work it continues.
      title: entry.title ?? inheritedTitle(entry, after) ?? '(empty session)',
      createdAt: entry.createdAt,
      updatedAt: entry.mtimeMs,
      messageCount: entry.messageCount,
      replies: entry.replies ?? 0,
      ...(isKeelSessionLog(path.join(dir, name)) ? {} : { foreign: true }),
      ...(entry.continuedFrom ? { continuedFrom: entry.continuedFrom } : {}),
      ...(entry.continuedReason ? { continuedReason: entry.continuedReason } : {}),
    });
  }
  changed ||= Object.keys(before).some((name) => !Object.hasOwn(after, name));
  if (changed) saveIndex(indexFile, after, options.log);
  return out.sort((a, b) => b.updatedAt - a.updatedAt);
}

/** The title of the first session up a reset chain that has one (entries are keyed by file name). */
function inheritedTitle(entry: Entry, entries: Record<string, Entry>): string | undefined {
  let from = entry.continuedFrom;
  for (let hop = 0; from && hop < 50; hop++) {
    const name = `${from}.jsonl`;
    const parent = Object.hasOwn(entries, name) ? entries[name] : undefined;
    if (!parent) return undefined;
    if (parent.title) return parent.title;
    from = parent.continuedFrom;
  }
  return undefined;
}

function saveIndex(file: string, entries: Record<string, Entry>, log: ListOptions['log']): void {
  // Written aside and renamed: a reader never sees half an index; the last writer wins (it is a cache).
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    fs.writeFileSync(tmp, JSON.stringify({ version: 1, entries }));
    fs.renameSync(tmp, file);
  } catch (error) {
    log?.(`could not save the session index ${file}: ${String(error)}`);
    fs.rmSync(tmp, { force: true });
  }
}
