import { createHash } from 'node:crypto';

// MEMORY.md as data: `## Heading` sections holding `- YYYY-MM-DD: text` bullets. Hand edits are kept
// as they are (unknown lines stay in place); only the entry being added, replaced or removed changes.

export const MEMORY_TITLE = '# Memory';
const DEFAULT_HEADING = 'Notes';
/** An entry citing a file: `[path@hash8]` (hash = first 8 hex of the file's sha256). */
export const FILE_REF = /\[([^\]\s@]+)@([0-9a-f]{8})\]/g;

export function fileHash(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 8);
}

export function dateOf(ts: number): string {
  return new Date(ts).toISOString().slice(0, 10);
}

export interface MemoryEntry {
  readonly heading: string;
  /** The bullet line, without the leading `- `. */
  readonly text: string;
  readonly line: number;
}

const normalise = (s: string) => s.replace(/\s+/g, ' ').trim().toLowerCase();

export function parseEntries(doc: string): MemoryEntry[] {
  const out: MemoryEntry[] = [];
  let heading = '';
  doc.split('\n').forEach((raw, line) => {
    const h = /^#{2,6}\s+(.*)$/.exec(raw);
    if (h) heading = h[1]!.trim();
    const b = /^\s*[-*]\s+(.*)$/.exec(raw);
    if (b) out.push({ heading, text: b[1]!.trim(), line });
  });
  return out;
}

/** Find the one entry containing `needle` (whitespace/case-insensitive). */
function findEntry(doc: string, needle: string): MemoryEntry {
  const n = normalise(needle);
  const hits = parseEntries(doc).filter((e) => normalise(e.text).includes(n));
  if (hits.length === 0) throw new EntryError('NO_MATCH', `No memory entry contains "${needle}".`);
  if (hits.length > 1)
    throw new EntryError('AMBIGUOUS_MATCH', `${hits.length} memory entries contain "${needle}".`);
  return hits[0]!;
}

export class EntryError extends Error {
  constructor(
    readonly code: 'NO_MATCH' | 'AMBIGUOUS_MATCH' | 'INVALID_PARAM',
    message: string,
  ) {
    super(message);
  }
}

/** One line, no markdown structure smuggled in. */
export function cleanEntryText(text: string): string {
  const one = text
    .replace(/\r?\n+/g, ' ')
    .replace(/^\s*(?:[-*]|#+)\s+/, '')
    .trim();
  if (one.length < 3) throw new EntryError('INVALID_PARAM', 'The entry text is empty or too short.');
  if (one.length > 500)
    throw new EntryError('INVALID_PARAM', 'An entry is one short fact (at most 500 characters).');
  return one;
}

export function hasEntry(doc: string, text: string): boolean {
  const n = normalise(text);
  return parseEntries(doc).some((e) => normalise(e.text).replace(/^\d{4}-\d{2}-\d{2}:\s*/, '') === n);
}

export function addEntry(doc: string | undefined, heading: string | undefined, bullet: string): string {
  const title =
    (heading ?? DEFAULT_HEADING)
      .replace(/^#+\s*/, '')
      .replace(/\s+/g, ' ')
      .trim() || DEFAULT_HEADING;
  const lines = (doc ?? `${MEMORY_TITLE}\n`).replace(/\r\n/g, '\n').replace(/\n*$/, '').split('\n');
  const at = lines.findIndex((l) => {
    const h = /^#{2,6}\s+(.*)$/.exec(l);
    return h !== null && h[1]!.trim().toLowerCase() === title.toLowerCase();
  });
  if (at < 0) return `${[...lines, '', `## ${title}`, `- ${bullet}`].join('\n')}\n`;
  // After the section's last bullet (or its heading).
  let end = at;
  for (let i = at + 1; i < lines.length && !/^#{1,6}\s/.test(lines[i]!); i++) if (lines[i]!.trim()) end = i;
  lines.splice(end + 1, 0, `- ${bullet}`);
  return `${lines.join('\n')}\n`;
}

export function replaceEntry(doc: string, needle: string, bullet: string): string {
  const entry = findEntry(doc, needle);
  const lines = doc.split('\n');
  lines[entry.line] = `- ${bullet}`;
  return lines.join('\n');
}

export function removeEntry(doc: string, needle: string): string {
  const entry = findEntry(doc, needle);
  const lines = doc.split('\n');
  lines.splice(entry.line, 1);
  return lines.join('\n');
}
