import { z } from 'zod';
import { lazy } from '../lazy.ts';
import type { McpToolInfo } from '../mcp/connection.ts';
import type { McpManager } from '../mcp/manager.ts';
import { canonicalJson } from '../safety/guards/loopDetector.ts';
import { wrapUntrusted } from '../safety/untrusted.ts';
import { fail, ok, type ToolDefinition } from './protocol.ts';

// McpSearch (lazy schemas): no MCP tool schema is ever in `tools` or `system`; the model finds the
// tools it needs here and gets their full input schemas as a tool result. Ranked with MiniSearch (the
// library MemorySearch uses), imported on first use.

export const MCP_SEARCH_MAX_LIMIT = 10;

const inputSchema = lazy(() =>
  z.object({
    query: z
      .string()
      .trim()
      .min(1)
      .describe('What you want to do, in a few words; "*" lists every tool name'),
    server: z.string().min(1).optional().describe('Search only this server'),
    limit: z.number().int().min(1).max(MCP_SEARCH_MAX_LIMIT).optional().describe('Default 5'),
  }),
);
export type McpSearchInput = z.infer<ReturnType<typeof inputSchema>>;

export interface McpSearchMatch {
  readonly server: string;
  readonly tool: string;
  readonly score: number;
}

export interface McpSearchData {
  readonly query: string;
  readonly matches: readonly McpSearchMatch[];
  readonly unavailable: readonly string[];
}

const DESCRIPTION = `Find tools of the MCP servers listed in the system prompt: returns matching tools with their full input schemas. Search before McpCall; not for workspace files.
Examples: {"query":"create github issue"} · {"query":"read file","server":"fs"} · {"query":"*"}`;

interface Doc {
  readonly id: string;
  readonly server: string;
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly params: string;
}

/** Splits snake_case, kebab-case and camelCase names into words, as people search for them. */
function tokenize(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter((t) => t.length > 0);
}

function paramNames(schema: Record<string, unknown>): string {
  const props = schema.properties;
  if (!props || typeof props !== 'object') return '';
  return Object.entries(props as Record<string, { description?: unknown }>)
    .map(([k, v]) => `${k} ${typeof v?.description === 'string' ? v.description : ''}`)
    .join(' ');
}

/** The schema as the model needs it (the `$schema` dialect line is noise). */
function shownSchema(schema: Record<string, unknown>): string {
  const { $schema: _, ...rest } = schema;
  return canonicalJson(rest);
}

function describeTool(server: string, tool: McpToolInfo): string {
  const flags = tool.readOnlyHint ? ' [read-only]' : '';
  const title = tool.title && tool.title !== tool.name ? ` (${tool.title})` : '';
  return `## ${server} › ${tool.name}${title}${flags}\n${tool.description.trim() || '(no description)'}\ninput_schema: ${shownSchema(tool.inputSchema)}`;
}

export function createMcpSearchTool(manager: McpManager): ToolDefinition<McpSearchInput, McpSearchData> {
  return {
    name: 'McpSearch',
    description: DESCRIPTION,
    get inputSchema() {
      return inputSchema();
    },
    readOnly: true,
    async execute(input, ctx) {
      const query = input.query.trim();
      if (input.server !== undefined && !manager.servers.some((s) => s.name === input.server)) {
        const known = manager.servers.map((s) => s.name).join(', ');
        return fail(
          'NOT_FOUND',
          `There is no MCP server named "${input.server}".`,
          `Use one of: ${known}.`,
        ) as never;
      }
      const listings = await manager.listTools(input.server ? [input.server] : undefined, ctx.signal);
      const unavailable = listings.flatMap((l) => (l.error ? [l.server] : []));
      const notes = listings.flatMap((l) =>
        l.error ? [`MCP server "${l.server}" is unavailable: ${l.error.message}\n${l.error.suggestion}`] : [],
      );
      const available = listings.filter((l) => l.tools);
      if (available.length === 0) {
        const first = listings[0]?.error;
        if (listings.length === 1 && first) return fail(first.code, first.message, first.suggestion) as never;
        return fail(
          'UNAVAILABLE',
          `No MCP server could list its tools:\n${notes.join('\n')}`,
          'Tell the user which servers failed and why; do not retry at once.',
        ) as never;
      }
      const searched = available.map((l) => l.server).join(', ');
      const noteText = notes.length > 0 ? `\n\n${notes.join('\n')}` : '';
      const data = (matches: McpSearchMatch[]): McpSearchData => ({ query, matches, unavailable });

      if (query === '*') {
        const lines = available.map((l) => `${l.server}: ${l.tools!.map((t) => t.name).join(', ')}`);
        const body = wrapUntrusted(lines.join('\n'), { source: 'mcp-tool-list' });
        return ok(
          data([]),
          `Tools of ${searched} (names only; search with words to get their schemas):\n${body}${noteText}`,
        );
      }

      const { default: MiniSearch } = await import('minisearch');
      const docs: Doc[] = available.flatMap((l) =>
        l.tools!.map((t) => ({
          id: `${l.server}\u0000${t.name}`,
          server: l.server,
          name: t.name,
          title: t.title ?? '',
          description: t.description,
          params: paramNames(t.inputSchema),
        })),
      );
      const index = new MiniSearch<Doc>({
        fields: ['name', 'title', 'description', 'params', 'server'],
        tokenize,
        processTerm: (term) => term.toLowerCase(),
        searchOptions: { boost: { name: 3, title: 2, server: 1.5 }, prefix: true, fuzzy: 0.2 },
      });
      index.addAll(docs);
      const limit = input.limit ?? 5;
      const hits = index
        .search(query)
        .sort((a, b) => b.score - a.score || (String(a.id) < String(b.id) ? -1 : 1))
        .slice(0, limit);
      const toolOf = new Map(
        available.flatMap((l) => l.tools!.map((t) => [`${l.server}\u0000${t.name}`, t] as const)),
      );
      const matches: McpSearchMatch[] = hits.map((h) => {
        const [server, tool] = String(h.id).split('\u0000') as [string, string];
        return { server, tool, score: Math.round(h.score * 1000) / 1000 };
      });
      if (matches.length === 0) {
        const names = available.map((l) => `${l.server}: ${l.tools!.map((t) => t.name).join(', ')}`);
        return ok(
          data(matches),
          `No MCP tool matches ${JSON.stringify(query)} in ${searched}. All tool names:\n${wrapUntrusted(names.join('\n'), { source: 'mcp-tool-list' })}${noteText}`,
        );
      }
      const body = matches
        .map((m) => describeTool(m.server, toolOf.get(`${m.server}\u0000${m.tool}`)!))
        .join('\n\n');
      return ok(
        data(matches),
        `${matches.length} MCP tool(s) for ${JSON.stringify(query)} (searched: ${searched}). Call one with McpCall {"server", "tool", "arguments"}; arguments must match its input_schema.\n${wrapUntrusted(body, { source: 'mcp-tool-list' })}${noteText}`,
      );
    },
  };
}
