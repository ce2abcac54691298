import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { getEncoding } from 'js-tiktoken';
import type { McpPort } from '../src/agent/host.ts';
import { connectMcpServer } from '../src/agent/mcp/connection.ts';
import { parseMcpConfig } from '../src/agent/mcp/config.ts';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../src/agent/safety/approvals.ts';
import { createAgentSession } from '../src/agent/session/session.ts';
import { type MessagesRequest, type ScriptedReply, startEmulator } from '../test/emulator/server.ts';
import { threeServers, writeJson } from '../test/unit/helpers/mcp.ts';

// Lazy MCP schemas vs eager ones, with three real MCP servers (everything, filesystem, memory).
//
// Lazy = what Keel sends: its own tools + McpSearch/McpCall, one system line per server; a 30-call
// session run for real (real session, real SDK, real servers) against the emulator.
// Eager = what most peers send: Keel's own tools + every MCP tool's full schema in `tools` (named
// mcp__server__tool), no McpSearch; built from the very same requests (McpSearch results emptied, as an
// eager client would not need them), so the conversation is the same and only the prefix differs.
// Both are replayed on fresh emulators (prompt-cache accounting) the same way. Tokens: cl100k.
// "eager, list changes" = the same eager session where one server's tool list changes at call 15 (a
// server update, a list_changed notification, a tool toggled on): in eager mode that moves the prefix.

const CALLS = 30;

function script(fsRoot: string): ScriptedReply[] {
  const use = (name: string, input: unknown): ScriptedReply => ({
    content: [{ type: 'tool_use', name, input }],
  });
  const call = (server: string, tool: string, args: Record<string, unknown>) =>
    use('McpCall', { server, tool, arguments: args });
  const cycle = [
    call('everything', 'echo', { message: 'hello' }),
    call('everything', 'get-sum', { a: 2, b: 3 }),
    call('fs', 'read_text_file', { path: path.join(fsRoot, 'notes.txt') }),
    call('fs', 'list_directory', { path: fsRoot }),
    call('memory', 'search_nodes', { query: 'Keel' }),
    call('memory', 'read_graph', {}),
  ];
  const replies: ScriptedReply[] = [
    use('McpSearch', { query: 'echo message', server: 'everything', limit: 3 }),
    cycle[0]!,
    cycle[1]!,
    use('McpSearch', { query: 'read text file', server: 'fs', limit: 3 }),
    cycle[2]!,
    cycle[3]!,
    use('McpSearch', { query: 'create entities', server: 'memory', limit: 3 }),
    call('memory', 'create_entities', {
      entities: [{ name: 'Keel', entityType: 'project', observations: ['x'] }],
    }),
    cycle[5]!,
  ];
  for (let i = 0; replies.length < CALLS - 1; i++) replies.push(cycle[i % cycle.length]!);
  replies.push({ content: [{ type: 'text', text: 'done' }] });
  return replies;
}

interface Usage {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

async function replay(requests: readonly MessagesRequest[]): Promise<Usage[]> {
  let clock = Date.UTC(2025, 0, 6, 9, 0, 0);
  const emu = await startEmulator({
    now: () => clock,
    scenario: { respond: () => ({ content: [{ type: 'text', text: 'ok' }] }) },
  });
  try {
    const client = new Anthropic({ apiKey: 'bench', baseURL: emu.url, maxRetries: 0 });
    const out: Usage[] = [];
    for (const req of requests) {
      clock += 5_000;
      // max_tokens is no part of the prompt: capped so the SDK allows a non-streaming call at a 128K limit.
      const reply = await client.messages.create({
        ...req,
        max_tokens: Math.min(req.max_tokens, 8192),
        stream: false,
      } as unknown as Anthropic.MessageCreateParamsNonStreaming);
      out.push(reply.usage as unknown as Usage);
    }
    return out;
  } finally {
    await emu.close();
  }
}

function hitRatio(usage: readonly Usage[]): number {
  let read = 0;
  let all = 0;
  for (const u of usage) {
    read += u.cache_read_input_tokens;
    all += u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
  }
  return all ? Math.round((read / all) * 1000) / 1000 : 0;
}

export async function runMcpBench(): Promise<Record<string, unknown>> {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-mcp-bench-')));
  const ws = path.join(root, 'ws');
  const fsRoot = path.join(ws, 'docs');
  fs.mkdirSync(fsRoot, { recursive: true });
  fs.writeFileSync(path.join(fsRoot, 'notes.txt'), 'Keel notes: lazy MCP schemas.\n');
  const configFile = writeJson(
    path.join(root, 'mcp.json'),
    threeServers({ fsRoot, memoryFile: path.join(root, 'memory.jsonl') }),
  );
  const enc = getEncoding('cl100k_base');
  const tokens = (value: unknown) =>
    enc.encode(typeof value === 'string' ? value : JSON.stringify(value)).length;
  const emu = await startEmulator({ scenario: { replies: script(fsRoot) } });
  try {
    // 1. The lazy session, for real.
    const port: McpPort = {
      namedConfigFiles: [configFile],
      userConfigFile: null,
      allowReadOnlyCalls: () => true,
      approveServer: async () => true,
      resolveInput: async () => undefined,
      howToApprove: () => '',
    };
    const host = { ...createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all') }), mcp: port };
    const session = createAgentSession({
      host,
      model: 'claude-sonnet-4-6',
      apiKey: 'bench',
      baseURL: emu.url,
      userSkillsDir: null,
    });
    const outcome = await session.prompt('Use the MCP servers.');
    await session.mcp?.shutdown();
    if (outcome.status !== 'finished') throw new Error(`bench session did not finish: ${outcome.error}`);
    const lazy = emu.requests.map((r) => r.request!).filter(Boolean);
    if (lazy.length !== CALLS) throw new Error(`expected ${CALLS} model calls, got ${lazy.length}`);

    // 2. Every MCP tool's schema, as an eager client would put it in `tools`.
    const eagerTools: Anthropic.Tool[] = [];
    const servers = parseMcpConfig(fs.readFileSync(configFile, 'utf8'), {
      file: configFile,
      scope: 'named',
    }).servers;
    for (const server of servers) {
      const spec = server.transport.type === 'stdio' ? { ...server.transport, cwd: ws } : server.transport;
      const conn = await connectMcpServer(spec, { startTimeoutMs: 30_000 });
      for (const t of conn.tools) {
        const { $schema: _, ...schema } = t.inputSchema;
        eagerTools.push({
          name: `mcp__${server.name}__${t.name}`.slice(0, 64),
          description: t.description,
          input_schema: schema as Anthropic.Tool.InputSchema,
        });
      }
      await conn.close();
    }
    const keelOwn = (lazy[0]!.tools ?? []).filter((t) => t.name !== 'McpSearch' && t.name !== 'McpCall');
    const stripLines = (system: MessagesRequest['system']) =>
      Array.isArray(system)
        ? system.map((b) =>
            typeof b.text === 'string'
              ? {
                  ...b,
                  text: b.text
                    .split('\n')
                    .filter((l) => !l.startsWith('- MCP server "'))
                    .join('\n'),
                }
              : b,
          )
        : system;
    const toEager = (req: MessagesRequest, changed: boolean): MessagesRequest => {
      const searchIds = new Set<string>();
      const messages = req.messages.map((m) => {
        if (!Array.isArray(m.content)) return m;
        return {
          ...m,
          content: m.content.map((b) => {
            if (b.type === 'tool_use' && b.name === 'McpSearch') searchIds.add(String(b.id));
            if (b.type === 'tool_result' && searchIds.has(String(b.tool_use_id)))
              return { ...b, content: 'ok' };
            return b;
          }),
        };
      });
      const mcp = changed
        ? eagerTools.filter((t) => t.name !== 'mcp__everything__toggle-simulated-logging')
        : eagerTools;
      const tools = [...keelOwn, ...mcp].sort((a, b) => (a.name < b.name ? -1 : 1));
      return { ...req, tools: tools as MessagesRequest['tools'], system: stripLines(req.system), messages };
    };
    const eager = lazy.map((r) => toEager(r, false));
    const eagerChanged = lazy.map((r, i) => toEager(r, i >= 15));

    const prefix = (r: MessagesRequest) => tokens(r.tools ?? []) + tokens(r.system ?? '');
    const perCall = (rs: readonly MessagesRequest[]) =>
      Math.round(rs.reduce((sum, r) => sum + prefix(r) + tokens(r.messages), 0) / rs.length);
    const noMcpPrefix = tokens(keelOwn) + tokens(stripLines(lazy[0]!.system) ?? '');
    const lazyPrefix = prefix(lazy[0]!);
    const eagerPrefix = prefix(eager[0]!);
    const [uLazy, uEager, uChanged] = [await replay(lazy), await replay(eager), await replay(eagerChanged)];
    const lazyPerCall = perCall(lazy);
    const eagerPerCall = perCall(eager);
    return {
      servers: servers.map((s) => s.name),
      mcp_tools: eagerTools.length,
      model_calls: CALLS,
      prefix_tokens: {
        keel_without_mcp: noMcpPrefix,
        lazy: lazyPrefix,
        eager: eagerPrefix,
        lazy_cost_over_no_mcp: lazyPrefix - noMcpPrefix,
        eager_over_lazy: Math.round((eagerPrefix / lazyPrefix) * 100) / 100,
      },
      prompt_tokens_per_call: {
        lazy: lazyPerCall,
        eager: eagerPerCall,
        eager_over_lazy: Math.round((eagerPerCall / lazyPerCall) * 100) / 100,
        lazy_saving: `${Math.round((1 - lazyPerCall / eagerPerCall) * 1000) / 10}%`,
      },
      cache_hit_ratio_30_calls: {
        lazy: hitRatio(uLazy),
        eager: hitRatio(uEager),
        eager_tool_list_changes_at_call_15: hitRatio(uChanged),
      },
      cached_input_tokens_read: {
        lazy: uLazy.reduce((s, u) => s + u.cache_read_input_tokens, 0),
        eager: uEager.reduce((s, u) => s + u.cache_read_input_tokens, 0),
      },
      uncached_input_tokens: {
        lazy: uLazy.reduce((s, u) => s + u.input_tokens + u.cache_creation_input_tokens, 0),
        eager: uEager.reduce((s, u) => s + u.input_tokens + u.cache_creation_input_tokens, 0),
        eager_tool_list_changes_at_call_15: uChanged.reduce(
          (s, u) => s + u.input_tokens + u.cache_creation_input_tokens,
          0,
        ),
      },
    };
  } finally {
    await emu.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await runMcpBench(), null, 2));
}
