import * as fs from 'node:fs';
import * as path from 'node:path';
import { inStateDir } from './fs/common.ts';
import { z } from 'zod';
import type { AgentMessage } from '../messages.ts';
import type { ToolDefinition } from './protocol.ts';
import { ok } from './protocol.ts';

// MemorySearch (P8): what pruning or compaction removed from the context is still in this session's
// JSONL log and in `.keel/archive/`; this finds it again. A query that is exactly a message id (as
// named in pruning placeholders) returns that message in full.

export const MEMORY_MAX_LIMIT = 20;
const SNIPPET_BEFORE = 160;
const SNIPPET_AFTER = 440;
const FULL_MAX_CHARS = 30_000;

const inputSchema = z.object({
  query: z
    .string()
    .trim()
    .min(2)
    .describe(
      'Words that must all appear (case-insensitive), a "quoted phrase", or a message id from a placeholder',
    ),
  limit: z.number().int().min(1).max(MEMORY_MAX_LIMIT).optional().describe('Default 5'),
});
export type MemorySearchInput = z.infer<typeof inputSchema>;

export interface MemoryMatch {
  readonly id: string;
  readonly role: string;
  readonly source: string;
  readonly ts: number;
  readonly score: number;
  readonly snippet: string;
}

export interface MemorySearchData {
  readonly query: string;
  readonly matches: readonly MemoryMatch[];
  readonly searched: { readonly log: boolean; readonly archives: number };
}

const DESCRIPTION = `Search this session's full history (log + compaction archives) for what was trimmed or summarised out of your context: errors, decisions, old outputs. Not for current files (use Grep/Read).
Examples: {"query":"TypeError parseConfig"} · {"query":"<message id from a placeholder>"}`;

interface Candidate {
  readonly message: AgentMessage;
  readonly source: string;
  readonly text: string;
}

function searchableText(message: AgentMessage): string | undefined {
  switch (message.role) {
    case 'user':
      return message.text;
    case 'assistant':
      return message.content
        .map((b) =>
          b.type === 'text' ? b.text : b.type === 'tool_use' ? `${b.name} ${JSON.stringify(b.input)}` : '',
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

/** Messages from JSONL text: log lines carry them in `message_appended` events, archive lines are messages. */
export function messagesFromJsonl(text: string): AgentMessage[] {
  const out: AgentMessage[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      continue;
    }
    if (isMessage(parsed)) out.push(parsed);
    else if (typeof parsed === 'object' && parsed !== null) {
      const inner = (parsed as { type?: unknown; message?: unknown }).message;
      if ((parsed as { type?: unknown }).type === 'message_appended' && isMessage(inner)) out.push(inner);
    }
  }
  return out;
}

export function parseQuery(query: string): string[] {
  const terms: string[] = [];
  const re = /"([^"]+)"|(\S+)/g;
  for (const match of query.matchAll(re)) {
    const term = (match[1] ?? match[2] ?? '').toLowerCase().trim();
    if (term) terms.push(term);
  }
  return terms;
}

function occurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

function snippet(text: string, lower: string, terms: readonly string[]): string {
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

export function createMemorySearchTool(): ToolDefinition<MemorySearchInput, MemorySearchData> {
  return {
    name: 'MemorySearch',
    description: DESCRIPTION,
    inputSchema,
    readOnly: true,
    async execute(input, ctx) {
      const { storage } = ctx.host;
      const resolvedState = ctx.guard.resolve(ctx.host.stateDir);
      const stateDir = resolvedState.ok ? resolvedState.path : ctx.host.stateDir;
      const candidates: Candidate[] = [];
      const seen = new Set<string>();
      const add = (messages: AgentMessage[], source: string) => {
        for (const message of messages) {
          if (seen.has(message.id)) continue;
          const text = searchableText(message);
          if (text === undefined) continue;
          seen.add(message.id);
          candidates.push({ message, source, text });
        }
      };
      // Only Keel's own files, really inside the state dir: a log or archive that is a link (or sits
      // under one) could point anywhere, and a FIFO would block.
      const own = (p: string): string | undefined => {
        const r = ctx.guard.resolve(p);
        if (!r.ok || r.path !== p || !inStateDir(ctx, r.path)) return undefined;
        try {
          return fs.lstatSync(r.path).isFile() ? r.path : undefined;
        } catch {
          return undefined;
        }
      };
      const readOwn = (p: string): string | undefined => {
        const real = own(p);
        return real === undefined ? undefined : storage.readText(real);
      };
      const logText = readOwn(path.join(stateDir, 'sessions', `${ctx.sessionId}.jsonl`));
      if (logText !== undefined) add(messagesFromJsonl(logText), 'session log');
      const archiveDir = path.join(stateDir, 'archive');
      const archives = storage
        .list(archiveDir)
        .filter((n) => n.endsWith('.jsonl') && own(path.join(archiveDir, n)) !== undefined)
        .sort(
          (a, b) =>
            Number(b.startsWith(ctx.sessionId)) - Number(a.startsWith(ctx.sessionId)) || (a < b ? -1 : 1),
        );
      for (const name of archives) {
        const text = readOwn(path.join(archiveDir, name));
        if (text !== undefined) add(messagesFromJsonl(text), `.keel/archive/${name}`);
      }
      const searched = { log: logText !== undefined, archives: archives.length };
      const query = input.query.trim();

      const byId = candidates.find((c) => c.message.id === query);
      if (byId) {
        const match: MemoryMatch = {
          id: byId.message.id,
          role: byId.message.role,
          source: byId.source,
          ts: byId.message.ts,
          score: 1,
          snippet: full(byId.text),
        };
        return ok(
          { query, matches: [match], searched },
          `Message ${match.id} (${match.role}, from ${match.source}):\n${match.snippet}`,
        );
      }

      const terms = parseQuery(query);
      const limit = input.limit ?? 5;
      const scored = candidates
        .map((c, order) => {
          const lower = c.text.toLowerCase();
          const counts = terms.map((t) => occurrences(lower, t));
          return {
            c,
            lower,
            order,
            all: counts.every((n) => n > 0),
            hits: counts.filter((n) => n > 0).length,
            score: counts.reduce((a, b) => a + b, 0),
          };
        })
        .filter((s) => s.hits > 0);
      const exact = scored.filter((s) => s.all);
      const pool = exact.length > 0 ? exact : scored;
      pool.sort((a, b) => b.hits - a.hits || b.score - a.score || b.order - a.order);
      const matches: MemoryMatch[] = pool.slice(0, limit).map((s) => ({
        id: s.c.message.id,
        role: s.c.message.role,
        source: s.c.source,
        ts: s.c.message.ts,
        score: s.score,
        snippet: snippet(s.c.text, s.lower, terms),
      }));
      const where = `the session log${searched.archives > 0 ? ` and ${searched.archives} archive file(s)` : ''}`;
      if (matches.length === 0) {
        return ok(
          { query, matches, searched },
          `No matches for ${JSON.stringify(query)} in ${where}. Try fewer or different words.`,
        );
      }
      const header =
        exact.length > 0
          ? `${matches.length} of ${exact.length} match(es) for ${JSON.stringify(query)} in ${where}:`
          : `No entry contains every word of ${JSON.stringify(query)}; closest ${matches.length} in ${where}:`;
      const body = matches.map((m) => `--- ${m.id} (${m.role}, ${m.source})\n${m.snippet}`).join('\n');
      return ok(
        { query, matches, searched },
        `${header}\n${body}\nQuery a message id to get that message in full.`,
      );
    },
  };
}
