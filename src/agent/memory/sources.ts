import { isKeelSessionLog } from '../trust/ledger.ts';
import { workspaceMemoryTrusted } from '../trust/memoryTrust.ts';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AgentMessage } from '../messages.ts';
import { DAY_LOG_NAME, ownDayLog } from './dailyLog.ts';
import { parseEntries } from './document.ts';

// What episodic memory searches: every session log of the workspace (`.keel/sessions/*.jsonl`), the
// compaction archives (`.keel/archive/*.jsonl`), the MEMORY.md files and the day logs next to them. Only Keel's own regular files:
// a log that is a link (or sits under one) could point anywhere, and a FIFO would block.

export type SourceKind = 'log' | 'archive' | 'memory';

export interface SourceFile {
  readonly kind: SourceKind;
  /** Stable key and the label hits show: `.keel/sessions/<id>.jsonl`, `~/.keel/MEMORY.md`. */
  readonly key: string;
  readonly abs: string;
  /** The session a log or archive belongs to ('' for memory files). */
  readonly session: string;
}

/** Max characters of one message that are indexed (a huge tool output is still found by its start and end). */
export const MAX_INDEXED_CHARS = 60_000;

export function isOwnFile(abs: string): boolean {
  try {
    if (!fs.lstatSync(abs).isFile()) return false;
    return fs.realpathSync(abs) === abs;
  } catch {
    return false;
  }
}

function jsonlIn(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir)
      .filter((n) => n.endsWith('.jsonl'))
      .sort();
  } catch {
    return [];
  }
}

export function listSources(
  stateDir: string,
  memoryFiles: ReadonlyArray<{ key: string; abs: string }>,
): SourceFile[] {
  const out: SourceFile[] = [];
  let realState: string;
  try {
    realState = fs.realpathSync(stateDir);
  } catch {
    realState = stateDir;
  }
  if (realState !== stateDir) return []; // `.keel` itself is a link: nothing in it is ours to read
  for (const name of jsonlIn(path.join(stateDir, 'sessions'))) {
    const abs = path.join(stateDir, 'sessions', name);
    // A log Keel did not create here (it came with the repository) is not searched: its "user"
    // messages would come back as things the user said.
    if (isOwnFile(abs) && isKeelSessionLog(abs))
      out.push({ kind: 'log', key: `.keel/sessions/${name}`, abs, session: name.slice(0, -'.jsonl'.length) });
  }
  for (const name of jsonlIn(path.join(stateDir, 'archive'))) {
    const abs = path.join(stateDir, 'archive', name);
    const cut = name.indexOf('-compaction-');
    const owner = cut > 0 ? name.slice(0, cut) : name.slice(0, -'.jsonl'.length);
    if (isOwnFile(abs) && isKeelSessionLog(path.join(stateDir, 'sessions', `${owner}.jsonl`)))
      out.push({
        kind: 'archive',
        key: `.keel/archive/${name}`,
        abs,
        session: cut > 0 ? name.slice(0, cut) : name.slice(0, -'.jsonl'.length),
      });
  }
  for (const m of memoryFiles) {
    if (!isOwnFile(m.abs)) continue;
    // The workspace MEMORY.md counts only in a version Keel wrote or the user approved.
    if (m.abs.startsWith(`${stateDir}${path.sep}`)) {
      let text = '';
      try {
        text = fs.readFileSync(m.abs, 'utf8');
      } catch {
        continue;
      }
      if (!workspaceMemoryTrusted(stateDir, text)) continue;
    }
    out.push({ kind: 'memory', ...m, session: '' });
  }
  // The day logs next to MEMORY.md (dailyLog.ts), in a version Keel wrote only.
  const memoryDir = path.join(stateDir, 'memory');
  for (const name of safeList(memoryDir)
    .filter((n) => DAY_LOG_NAME.test(n))
    .sort()) {
    const abs = path.join(memoryDir, name);
    if (isOwnFile(abs) && ownDayLog(stateDir, abs) !== undefined)
      out.push({ kind: 'memory', key: `.keel/memory/${name}`, abs, session: '' });
  }
  return out;
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

export function searchableText(message: AgentMessage): string | undefined {
  switch (message.role) {
    case 'user':
      return message.text;
    case 'assistant':
      return message.content
        .map((b) =>
          b.type === 'text'
            ? b.text
            : // A MemorySearch call holds exactly the words of every later search for the same thing:
              // indexed, the asking call itself would be the best hit. Its result is indexed.
              b.type === 'tool_use' && b.name !== 'MemorySearch'
              ? `${b.name} ${JSON.stringify(b.input)}`
              : '',
        )
        .filter((t) => t.length > 0)
        .join('\n');
    case 'tool_result':
      return `${message.toolName} result:\n${message.content}`;
    case 'reminder':
    case 'summary':
      return message.text;
    default:
      return undefined;
  }
}

function isMessage(value: unknown): value is AgentMessage {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { id?: unknown }).id === 'string' &&
    typeof (value as { role?: unknown }).role === 'string'
  );
}

/** The message one JSONL line holds: log lines carry it in `message_appended`, archive lines are messages. */
export function messageOfLine(line: string): AgentMessage | undefined {
  if (!line.trim()) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (isMessage(parsed)) return parsed;
  if (typeof parsed === 'object' && parsed !== null) {
    const inner = (parsed as { type?: unknown; message?: unknown }).message;
    if ((parsed as { type?: unknown }).type === 'message_appended' && isMessage(inner)) return inner;
  }
  return undefined;
}

export interface MessageLine {
  readonly message: AgentMessage;
  readonly text: string;
  /** Byte offset and length of the line in its file. */
  readonly off: number;
  readonly len: number;
}

/**
 * Complete lines of `file` from byte `from`: the messages they hold and how many bytes were consumed
 * (a half-written last line is left for the next update).
 */
export function readMessageLines(file: string, from: number): { lines: MessageLine[]; consumed: number } {
  const fd = fs.openSync(file, 'r');
  let buf: Buffer;
  try {
    const size = fs.fstatSync(fd).size;
    buf = Buffer.alloc(Math.max(0, size - from));
    let got = 0;
    while (got < buf.length) {
      const n = fs.readSync(fd, buf, got, buf.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    buf = buf.subarray(0, got);
  } finally {
    fs.closeSync(fd);
  }
  const lines: MessageLine[] = [];
  let start = 0;
  for (let nl = buf.indexOf(10, start); nl >= 0; nl = buf.indexOf(10, start)) {
    const message = messageOfLine(buf.toString('utf8', start, nl));
    const text = message ? searchableText(message) : undefined;
    if (message && text?.trim()) lines.push({ message, text, off: from + start, len: nl - start });
    start = nl + 1;
  }
  return { lines, consumed: start };
}

/** One line back by its offset (hits store offsets, not text: the index stays small). */
export function readMessageAt(file: string, off: number, len: number): AgentMessage | undefined {
  if (!isOwnFile(file)) return undefined;
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(len);
    const n = fs.readSync(fd, buf, 0, len, off);
    return messageOfLine(buf.toString('utf8', 0, n));
  } finally {
    fs.closeSync(fd);
  }
}

export interface MemoryEntryDoc {
  readonly id: string;
  readonly heading: string;
  readonly text: string;
}

export function memoryEntryDocs(key: string, doc: string): MemoryEntryDoc[] {
  return parseEntries(doc).map((e, i) => ({
    id: `${key}#${i + 1}`,
    heading: e.heading,
    text: e.heading ? `${e.heading}: ${e.text}` : e.text,
  }));
}
