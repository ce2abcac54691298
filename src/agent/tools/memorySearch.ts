import { z } from 'zod';
import { lazy } from '../lazy.ts';
import * as fs from 'node:fs';
import {
  hitText,
  indexFileOf,
  loadSearchLibrary,
  type MemoryHit,
  type MemoryIndex,
  openMemoryIndex,
  openMemoryIndexAsync,
} from '../memory/searchIndex.ts';
import { memoryPaths } from '../memory/store.ts';
import { inStateDir } from './fs/common.ts';
import type { ToolDefinition, ToolResult } from './protocol.ts';
import { fail, ok } from './protocol.ts';

// MemorySearch (P8, episodic memory): every session log of this workspace, the compaction archives and
// the MEMORY.md files, ranked by a BM25 index kept under `.keel/memory/index/`. A query that is exactly a
// message id (as named in pruning placeholders and in hits) returns that message in full.

export const MEMORY_MAX_LIMIT = 20;
const SNIPPET_BEFORE = 160;
const SNIPPET_AFTER = 440;
const FULL_MAX_CHARS = 30_000;
/** Candidates read back to check "quoted phrases" (the index ranks words, not phrases). */
const PHRASE_POOL = 200;

const inputSchema = lazy(() =>
  z.object({
    query: z.string().trim().min(2).describe('Words, a "quoted phrase", or a message id'),
    limit: z.number().int().min(1).max(MEMORY_MAX_LIMIT).optional().describe('Default 5'),
  }),
);
export type MemorySearchInput = z.infer<ReturnType<typeof inputSchema>>;

export interface MemoryMatch extends MemoryHit {
  readonly snippet: string;
}

export interface MemorySearchData {
  readonly query: string;
  readonly matches: readonly MemoryMatch[];
  readonly searched: { readonly documents: number };
}

const DESCRIPTION = `Search the full history of this workspace (past sessions, compaction archives, memory) for what is no longer in your context: errors, decisions, old outputs, what the user said. Not for current files (use Grep/Read).
Examples: {"query":"TypeError parseConfig"} · {"query":"<message id>"}`;

export function parseQuery(query: string): { words: string[]; phrases: string[] } {
  const words: string[] = [];
  const phrases: string[] = [];
  for (const match of query.matchAll(/"([^"]+)"|(\S+)/g)) {
    const term = (match[1] ?? match[2] ?? '').toLowerCase().trim();
    if (!term) continue;
    if (match[1] !== undefined && /\s/.test(term)) phrases.push(term);
    words.push(...term.split(/\s+/));
  }
  return { words, phrases };
}

function snippet(text: string, terms: readonly string[]): string {
  const lower = text.toLowerCase();
  const positions = terms.map((t) => lower.indexOf(t)).filter((p) => p >= 0);
  const at = positions.length > 0 ? Math.min(...positions) : 0;
  const start = Math.max(0, at - SNIPPET_BEFORE);
  const end = Math.min(text.length, at + SNIPPET_AFTER);
  return `${start > 0 ? '…' : ''}${text.slice(start, end)}${end < text.length ? '…' : ''}`;
}

function full(text: string): string {
  if (text.length <= FULL_MAX_CHARS) return text;
  const half = FULL_MAX_CHARS / 2;
  return `${text.slice(0, half)}\n[… ${text.length - FULL_MAX_CHARS} chars omitted …]\n${text.slice(-half)}`;
}

const where = (h: MemoryHit) =>
  `${h.role}, ${h.session ? `session ${h.session}, ` : ''}${h.date}, ${h.source}`;

// One index per state dir per process: loading a large index once, then only new log lines.
const indexes = new Map<string, Promise<MemoryIndex>>();

function memoryFilesOf(stateDir: string, userMemoryFile: string | null | undefined) {
  const paths = memoryPaths(stateDir, userMemoryFile);
  return [
    { key: '.keel/memory/MEMORY.md', abs: paths.workspace },
    ...(paths.user ? [{ key: '~/.keel/MEMORY.md', abs: paths.user }] : []),
  ];
}

function sharedIndex(stateDir: string, userMemoryFile: string | null | undefined): Promise<MemoryIndex> {
  const key = `${stateDir}\0${userMemoryFile ?? ''}`;
  let index = indexes.get(key);
  if (!index) {
    index = openMemoryIndexAsync({ stateDir, memoryFiles: memoryFilesOf(stateDir, userMemoryFile) });
    index.catch(() => indexes.delete(key));
    indexes.set(key, index);
  }
  return index;
}

/**
 * A session starts loading a saved index at once, in batches, so the model's first MemorySearch does
 * not wait for it (a large index takes about a second to load). Nothing saved: nothing to do.
 */
export function warmMemoryIndex(stateDir: string, userMemoryFile?: string | null): void {
  if (fs.existsSync(indexFileOf(stateDir))) void sharedIndex(stateDir, userMemoryFile).catch(() => undefined);
}

export interface MemorySearchOptions {
  /** ~/.keel/MEMORY.md (null: none). Default: the user's home. */
  readonly userMemoryFile?: string | null;
}

export function createMemorySearchTool(
  options: MemorySearchOptions = {},
): ToolDefinition<MemorySearchInput, MemorySearchData> {
  return {
    name: 'MemorySearch',
    description: DESCRIPTION,
    get inputSchema() {
      return inputSchema();
    },
    readOnly: true,
    async execute(input, ctx) {
      const resolvedState = ctx.guard.resolve(ctx.host.stateDir);
      // Keel's own files only: a state dir that is not really where it claims to be is not searched.
      if (
        !resolvedState.ok ||
        resolvedState.path !== ctx.host.stateDir ||
        !inStateDir(ctx, resolvedState.path)
      )
        return ok({ query: input.query, matches: [], searched: { documents: 0 } }, 'No history to search.');
      let index: MemoryIndex;
      try {
        index = await sharedIndex(resolvedState.path, options.userMemoryFile);
        index.update();
        index.save();
      } catch (error) {
        return fail(
          'INTERNAL',
          `The memory index could not be updated: ${(error as Error).message}`,
          'Retry once; if it fails again, Grep .keel/sessions instead.',
        ) as ToolResult<MemorySearchData>;
      }
      const searched = { documents: index.documentCount };
      const query = input.query.trim();

      const byId = index.get(query);
      if (byId) {
        const text = hitText(byId);
        if (text !== undefined) {
          const match: MemoryMatch = { ...byId.hit, snippet: full(text) };
          return ok(
            { query, matches: [match], searched },
            `Message ${match.id} (${where(match)}):\n${match.snippet}`,
          );
        }
      }

      const { words, phrases } = parseQuery(query);
      const limit = input.limit ?? 5;
      const found = index.search(words.join(' '), phrases.length > 0 ? PHRASE_POOL : limit);
      const matches: MemoryMatch[] = [];
      for (const hit of found.hits) {
        if (matches.length >= limit) break;
        const got = index.get(hit.id);
        const text = got ? hitText(got) : undefined;
        if (text === undefined) continue;
        const lower = text.toLowerCase();
        if (found.allWords && !phrases.every((p) => lower.includes(p))) continue;
        matches.push({ ...hit, snippet: snippet(text, phrases.length > 0 ? phrases : words) });
      }
      const scope = `${searched.documents} messages and memory entries of this workspace`;
      if (matches.length === 0) {
        return ok(
          { query, matches, searched },
          `No matches for ${JSON.stringify(query)} in ${scope}. Try fewer or different words.`,
        );
      }
      const header = found.allWords
        ? `${matches.length} best of ${found.total} match(es) for ${JSON.stringify(query)} in ${scope}:`
        : `No entry contains every word of ${JSON.stringify(query)}; closest ${matches.length} in ${scope}:`;
      const body = matches.map((m) => `--- ${m.id} (${where(m)})\n${m.snippet}`).join('\n');
      return ok(
        { query, matches, searched },
        `${header}\n${body}\nQuery a message id to get that message in full.`,
      );
    },
  };
}

/** For `keel memory search`: the same index outside a session. */
export async function memoryIndexFor(stateDir: string, userMemoryFile?: string | null): Promise<MemoryIndex> {
  await loadSearchLibrary();
  return openMemoryIndex({ stateDir, memoryFiles: memoryFilesOf(stateDir, userMemoryFile) });
}
