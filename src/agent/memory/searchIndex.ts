import { ledgerForStateDir } from '../trust/ledger.ts';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type MiniSearch from 'minisearch';
import type { AgentMessage } from '../messages.ts';
import { dateOf } from './document.ts';
import {
  isOwnFile,
  listSources,
  MAX_INDEXED_CHARS,
  memoryEntryDocs,
  readMessageAt,
  readMessageLines,
  type SourceFile,
  searchableText,
} from './sources.ts';

// Episodic memory: one BM25 index (MiniSearch) over every session log, compaction archive and memory
// file of the workspace, kept on disk under `.keel/memory/index/` and updated incrementally — logs are
// append-only, so each update reads only the bytes added since the last one. Hits store where their
// message is (file, offset, length), not its text: the index stays small and a hit can be shown in full.

// 3: tabs and other control characters split words (see TOKEN_SEPARATORS); MemorySearch calls not indexed.
const INDEX_VERSION = 3;
/**
 * Rewriting a large index costs far more than indexing a few new lines, so an ordinary save waits until
 * this much new text is unsaved; the next process re-reads the unsaved tail of the logs (cheap).
 */
export const SAVE_AFTER_BYTES = 4 * 1024 * 1024;

interface Doc {
  readonly id: string;
  readonly text: string;
  readonly session: string;
  readonly role: string;
  readonly ts: number;
  readonly src: string;
  readonly off: number;
  readonly len: number;
  /** Memory entries only: the entry itself (short), shown as the snippet. */
  readonly entry?: string;
}

type Stored = Omit<Doc, 'id' | 'text'>;

interface FileState {
  size: number;
  mtimeMs: number;
  /** Bytes of a log/archive already indexed (always at a line end). */
  done: number;
  /** Memory files: the entry doc ids (discarded when the file changes). */
  ids?: string[];
}

interface Manifest {
  version: number;
  files: Record<string, FileState>;
}

// The commonest English words say nothing about which message is meant and are most of the postings.
const STOP_WORDS = new Set(
  'a an and are as at be but by for from has have in is it its of on or that the this to was were will with'.split(
    ' ',
  ),
);

/**
 * Where words split: spaces, punctuation, and control characters too. MiniSearch's default leaves out
 * the tab, and Read shows every line as `   3\tfirst word …`: a fact at the start of a line was indexed
 * as "3\tfirst" and never found by its own first word — while the session's own MemorySearch call,
 * holding every query word, was (issue 23: "finds only its own current call").
 */
const TOKEN_SEPARATORS = /[\p{Z}\p{P}\p{Cc}]+/u;

const OPTIONS = {
  fields: ['text'],
  tokenize: (text: string) => text.split(TOKEN_SEPARATORS),
  processTerm: (term: string) => {
    const t = term.toLowerCase();
    return t.length < 2 || STOP_WORDS.has(t) ? null : t;
  },
  storeFields: ['session', 'role', 'ts', 'src', 'off', 'len', 'entry'],
  // A huge document would dominate memory; its head and tail carry what people search for.
  extractField: (doc: Doc, field: string) => {
    const value = (doc as unknown as Record<string, unknown>)[field];
    if (typeof value !== 'string' || value.length <= MAX_INDEXED_CHARS) return value as string;
    const half = MAX_INDEXED_CHARS / 2;
    return `${value.slice(0, half)}\n${value.slice(-half)}`;
  },
};

export interface MemoryHit {
  readonly id: string;
  readonly session: string;
  readonly role: string;
  readonly ts: number;
  readonly date: string;
  /** Where it is: `.keel/sessions/<id>.jsonl`, `.keel/archive/…`, `.keel/memory/MEMORY.md`. */
  readonly source: string;
  readonly score: number;
}

export interface MemoryIndex {
  /** Index what was added since the last update; returns how many documents were added. */
  update(): number;
  /** BM25-ranked hits: every word first (prefix match for 3+ letters), any word when none has all. */
  search(query: string, limit: number): { hits: MemoryHit[]; allWords: boolean; total: number };
  /** A stored message by id (the full text comes from its file). */
  get(id: string): { hit: MemoryHit; message?: AgentMessage; entry?: string } | undefined;
  /** Write the index to disk once enough changed (`force`: whenever anything changed). */
  save(options?: { force?: boolean }): void;
  readonly documentCount: number;
  readonly indexFile: string;
}

export interface MemoryIndexOptions {
  readonly stateDir: string;
  /** Memory files to index, with the label hits show (e.g. `.keel/memory/MEMORY.md`). */
  readonly memoryFiles?: ReadonlyArray<{ key: string; abs: string }>;
}

// MiniSearch loads on first use, not with the session: everyday sessions that never search memory
// (and sessions of other features that share the library) do not pay for it.
let library: typeof MiniSearch | undefined;

export async function loadSearchLibrary(): Promise<void> {
  library ??= (await import('minisearch')).default;
}

function lib(): typeof MiniSearch {
  if (!library) throw new Error('The search library is not loaded yet (call loadSearchLibrary first).');
  return library;
}

type Loaded = { ms: MiniSearch<Doc>; manifest: Manifest };
type Saved = { manifest?: Manifest; index?: Parameters<typeof MiniSearch.loadJS>[0] };

const fresh = (): Loaded => ({
  ms: new (lib())<Doc>(OPTIONS),
  manifest: { version: INDEX_VERSION, files: {} },
});
const usable = (saved: Saved): saved is Required<Saved> =>
  saved.manifest?.version === INDEX_VERSION && typeof saved.manifest.files === 'object' && !!saved.index;

/**
 * Index and manifest live in ONE file, written atomically: two processes saving at once can only
 * replace each other's whole snapshot, never pair one's index with the other's offsets.
 */
function load(indexFile: string): Loaded {
  if (!isOwnFile(indexFile)) return fresh();
  try {
    const text = fs.readFileSync(indexFile, 'utf8');
    if (!indexLedger(indexFile).own(text)) return fresh();
    const saved = JSON.parse(text) as Saved;
    if (!usable(saved)) return fresh();
    return { ms: lib().loadJS<Doc>(saved.index, OPTIONS), manifest: saved.manifest };
  } catch {
    return fresh(); // a damaged index is rebuilt from the logs: it is only a cache
  }
}

/** The same, without blocking the event loop for long (a session prefetches it while the model works). */
async function loadAsync(indexFile: string): Promise<Loaded> {
  if (!isOwnFile(indexFile)) return fresh();
  try {
    const text = await fs.promises.readFile(indexFile, 'utf8');
    if (!indexLedger(indexFile).own(text)) return fresh();
    const saved = JSON.parse(text) as Saved;
    if (!usable(saved)) return fresh();
    return { ms: await lib().loadJSAsync<Doc>(saved.index, OPTIONS), manifest: saved.manifest };
  } catch {
    return fresh();
  }
}

/**
 * The index is Keel's state too: one that came with the repository could hold documents no log has
 * (planted "past messages"). Keel records the hash of each index it saves; any other is rebuilt.
 */
function indexLedger(indexFile: string) {
  const stateDir = path.dirname(path.dirname(path.dirname(indexFile)));
  const ledger = ledgerForStateDir(stateDir);
  const rel = path.relative(path.dirname(stateDir), indexFile).split(path.sep).join('/');
  return {
    own: (text: string) => ledger.isOwnFile(rel, text),
    record: (text: string) => ledger.recordFile(rel, text),
  };
}

export function indexFileOf(stateDir: string): string {
  return path.join(stateDir, 'memory', 'index', 'index.json');
}

export async function openMemoryIndexAsync(options: MemoryIndexOptions): Promise<MemoryIndex> {
  await loadSearchLibrary();
  return openMemoryIndex(options, await loadAsync(indexFileOf(options.stateDir)));
}

function writeAtomic(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

const toHit = (id: string, s: Stored, score: number): MemoryHit => ({
  id,
  session: s.session,
  role: s.role,
  ts: s.ts,
  date: dateOf(s.ts),
  source: s.src,
  score,
});

/** Synchronous: `loadSearchLibrary()` must have resolved first. */
export function openMemoryIndex(options: MemoryIndexOptions, loaded?: Loaded): MemoryIndex {
  const indexFile = indexFileOf(options.stateDir);
  let { ms, manifest } = loaded ?? load(indexFile);
  let dirty = false;
  /** Unsaved new text; a fresh or rebuilt index is saved at once (it is the expensive part). */
  let unsavedBytes = 0;
  let rebuilt = ms.documentCount === 0;
  const absOf = new Map<string, string>();

  const indexSource = (src: SourceFile, st: fs.Stats): number => {
    const prev = manifest.files[src.key];
    if (src.kind === 'memory') {
      if (prev && prev.size === st.size && prev.mtimeMs === st.mtimeMs) return 0;
      for (const id of prev?.ids ?? []) if (ms.has(id)) ms.discard(id);
      const text = fs.readFileSync(src.abs, 'utf8');
      const docs = memoryEntryDocs(src.key, text).map(
        (e): Doc => ({
          id: e.id,
          text: e.text,
          session: '',
          role: 'memory',
          ts: st.mtimeMs,
          src: src.key,
          off: 0,
          len: 0,
          entry: e.text,
        }),
      );
      ms.addAll(docs);
      manifest.files[src.key] = {
        size: st.size,
        mtimeMs: st.mtimeMs,
        done: st.size,
        ids: docs.map((d) => d.id),
      };
      return docs.length;
    }
    const from = prev?.done ?? 0;
    if (st.size === from) return 0;
    const { lines, consumed } = readMessageLines(src.abs, from);
    unsavedBytes += consumed;
    let added = 0;
    for (const line of lines) {
      // The same message in a log and an archive: the first one indexed (the log) stands.
      if (ms.has(line.message.id)) continue;
      ms.add({
        id: line.message.id,
        text: line.text,
        session: src.session,
        role: line.message.role,
        ts: line.message.ts,
        src: src.key,
        off: line.off,
        len: line.len,
      });
      added++;
    }
    manifest.files[src.key] = { size: st.size, mtimeMs: st.mtimeMs, done: from + consumed };
    return added;
  };

  const update = (): number => {
    const sources = listSources(options.stateDir, options.memoryFiles ?? []);
    for (const s of sources) absOf.set(s.key, s.abs);
    const seen = new Set(sources.map((s) => s.key));
    // A log that shrank or vanished (repair, manual delete) invalidates offsets: rebuild from scratch.
    const shrank = sources.some((s) => {
      const prev = manifest.files[s.key];
      if (!prev || s.kind === 'memory') return false;
      try {
        return fs.statSync(s.abs).size < prev.done;
      } catch {
        return true;
      }
    });
    const vanished = Object.keys(manifest.files).filter((k) => !seen.has(k));
    if (shrank || vanished.some((k) => !manifest.files[k]?.ids)) {
      ms = new (lib())<Doc>(OPTIONS);
      manifest = { version: INDEX_VERSION, files: {} };
      dirty = true;
      rebuilt = true;
    } else {
      for (const k of vanished) {
        for (const id of manifest.files[k]?.ids ?? []) if (ms.has(id)) ms.discard(id);
        delete manifest.files[k];
        dirty = true;
      }
    }
    let added = 0;
    for (const s of sources) {
      let st: fs.Stats;
      try {
        st = fs.statSync(s.abs);
      } catch {
        continue;
      }
      const before = manifest.files[s.key];
      added += indexSource(s, st);
      if (manifest.files[s.key] !== before) dirty = true;
    }
    return added;
  };

  const stored = (id: string) => ms.getStoredFields(id) as unknown as Stored | undefined;

  return {
    update,
    indexFile,
    get documentCount() {
      return ms.documentCount;
    },
    search(query, limit) {
      const run = (combineWith: 'AND' | 'OR') =>
        ms.search(query, { combineWith, prefix: (term) => term.length >= 3 });
      let results = run('AND');
      const allWords = results.length > 0;
      if (!allWords) results = run('OR');
      const hits = results.slice(0, limit).map((r) => toHit(String(r.id), r as unknown as Stored, r.score));
      return { hits, allWords, total: results.length };
    },
    get(id) {
      const s = stored(id);
      if (!s) return undefined;
      const hit = toHit(id, s, 1);
      if (s.entry !== undefined) return { hit, entry: s.entry };
      const abs = absOf.get(s.src) ?? path.join(options.stateDir, ...s.src.split('/').slice(1));
      const message = readMessageAt(abs, s.off, s.len);
      return { hit, ...(message ? { message } : {}) };
    },
    save(saveOptions) {
      if (!dirty) return;
      if (!saveOptions?.force && !rebuilt && unsavedBytes < SAVE_AFTER_BYTES) return;
      const text = JSON.stringify({ manifest, index: ms });
      indexLedger(indexFile).record(text);
      writeAtomic(indexFile, text);
      dirty = false;
      rebuilt = false;
      unsavedBytes = 0;
    },
  };
}

/** The text a hit shows: the entry, or the message's searchable text read back from its file. */
export function hitText(found: { message?: AgentMessage; entry?: string }): string | undefined {
  if (found.entry !== undefined) return found.entry;
  return found.message ? searchableText(found.message) : undefined;
}
