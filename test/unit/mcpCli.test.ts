import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  type Emulator,
  type RecordedRequest,
  type ScriptedReply,
  startEmulator,
} from '../emulator/server.ts';
import { cliEnv, processesWith, runKeel, tempWorkspace } from './helpers/cli.ts';
import { serverScript, threeServers, writeJson } from './helpers/mcp.ts';

// MCP through the built `keel` CLI, the real SDK client against the emulator, and three real MCP
// servers from npm (everything, filesystem, memory) spawned from node_modules.

let emu: Emulator;
let home: string;
before(async () => {
  emu = await startEmulator({});
  // No user-level ~/.keel/mcp.json of whoever runs the tests.
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-mcp-home-'));
});
after(async () => {
  await emu.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const env = () => cliEnv(emu.url, { HOME: home });
const use = (name: string, input: unknown, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
  ...(expect ? { expect } : {}),
});
const answer = (text: string, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'text', text }],
  ...(expect ? { expect } : {}),
});

interface Prefix {
  tools: { name: string }[];
  system: { text: string }[];
}
const prefixOf = (r: RecordedRequest): Prefix => {
  const body = r.body as { system: { text: string; cache_control?: unknown }[]; tools: { name: string }[] };
  return {
    tools: body.tools.map(({ cache_control: _, ...t }: { cache_control?: unknown; name: string }) => t),
    system: body.system.map((b) => ({ text: b.text })),
  };
};

/** A server command that leaves a marker file when (and only when) it really starts. */
function markedMemoryServer(marker: string, memoryFile: string): Record<string, unknown> {
  return {
    type: 'stdio',
    command: '/bin/sh',
    args: ['-c', `touch '${marker}' && exec '${process.execPath}' '${serverScript('memory')}'`],
    env: { MEMORY_FILE_PATH: memoryFile },
  };
}

describe('keel run with MCP servers', () => {
  test('finds a tool with McpSearch, calls it with McpCall, gets the real result; the prefix holds', async () => {
    const ws = tempWorkspace({ 'notes/todo.txt': 'buy milk 8812\n' });
    const fsRoot = path.join(ws, 'notes');
    const memoryFile = path.join(ws, 'memory.jsonl');
    const config = writeJson(
      path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-mcp-cfg-')), 'mcp.json'),
      threeServers({ fsRoot, memoryFile }),
    );
    emu.setScenario({
      replies: [
        use('McpSearch', { query: 'read text file', server: 'fs' }),
        use(
          'McpCall',
          { server: 'fs', tool: 'read_text_file', arguments: { path: path.join(fsRoot, 'todo.txt') } },
          { toolResultContains: 'fs › read_text_file' },
        ),
        use(
          'McpCall',
          { server: 'everything', tool: 'echo', arguments: { message: 'ahoy' } },
          { toolResultContains: '8812' },
        ),
        use(
          'McpCall',
          {
            server: 'memory',
            tool: 'create_entities',
            arguments: { entities: [{ name: 'Keel', entityType: 'project', observations: ['uses MCP'] }] },
          },
          { toolResultContains: 'ahoy' },
        ),
        answer('done: the list says 8812', { toolResultContains: 'Keel' }),
      ],
    });
    const before = emu.requests.length;
    const run = await runKeel(
      ['run', '--workspace', ws, '--mcp-config', config, '--approve', 'all', 'What is on my list?'],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'done: the list says 8812');
    const mine = emu.requests.slice(before);
    assert.equal(mine.length, 5);
    assert.ok(
      mine.every((r) => r.status === 200),
      'every request passed validation (and every expectation held)',
    );
    // The memory server really wrote its graph.
    assert.match(fs.readFileSync(memoryFile, 'utf8'), /"name":"Keel"/);
    // P1: tools + system byte-identical on every call of the session.
    const first = JSON.stringify(prefixOf(mine[0]!));
    for (const r of mine) assert.equal(JSON.stringify(prefixOf(r)), first);
    // No MCP schema in the prefix: only the two generic tools.
    const withMcp = prefixOf(mine[0]!);
    assert.ok(!first.includes('read_text_file') && !first.includes('create_entities'));
    // Every call is in the audit log.
    const audit = fs
      .readFileSync(path.join(ws, '.keel', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const calls = audit.filter((e) => e.type === 'mcp_call');
    assert.deepEqual(
      calls.map((c) => `${c.server}/${c.mcp_tool}/${c.status}`),
      ['fs/read_text_file/ok', 'everything/echo/ok', 'memory/create_entities/ok'],
    );
    // The servers ended with the session.
    assert.deepEqual(processesWith(fsRoot), []);

    // The same workspace without MCP: the prefix differs by the two tools and one line per server.
    emu.setScenario({ replies: [answer('plain')] });
    const at = emu.requests.length;
    const plain = await runKeel(['run', '--workspace', ws, 'hi'], env());
    assert.equal(plain.code, 0, plain.stderr);
    const without = prefixOf(emu.requests[at]!);
    assert.deepEqual(
      withMcp.tools.filter((t) => t.name !== 'McpCall' && t.name !== 'McpSearch'),
      without.tools,
    );
    assert.deepEqual(
      withMcp.tools.map((t) => t.name).filter((n) => !without.tools.some((t) => t.name === n)),
      ['McpCall', 'McpSearch'],
    );
    const withLines = withMcp.system
      .map((b) => b.text)
      .join('\n')
      .split('\n');
    const withoutLines = without.system
      .map((b) => b.text)
      .join('\n')
      .split('\n');
    const added = withLines.filter((l) => !withoutLines.includes(l));
    assert.deepEqual(added, [
      '- MCP server "everything" (MCP reference test server): find its tools with McpSearch, call them with McpCall.',
      '- MCP server "fs": find its tools with McpSearch, call them with McpCall.',
      '- MCP server "memory" (knowledge graph memory): find its tools with McpSearch, call them with McpCall.',
    ]);
    assert.deepEqual(
      withLines.filter((l) => !added.includes(l)),
      withoutLines,
      'nothing else in the system prompt changed',
    );
  });

  test('a session that never uses MCP never starts a server', async () => {
    const ws = tempWorkspace({});
    const marker = path.join(ws, 'started');
    const config = writeJson(path.join(ws, 'cfg', 'mcp.json'), {
      servers: { memory: markedMemoryServer(marker, path.join(ws, 'm.jsonl')) },
    });
    emu.setScenario({ replies: [answer('no tools needed')] });
    const run = await runKeel(['run', '--workspace', ws, '--mcp-config', config, 'hello'], env());
    assert.equal(run.code, 0, run.stderr);
    assert.equal(fs.existsSync(marker), false);
  });

  test('a workspace-defined server is not offered nor started without approval, and the user is told how to allow it', async () => {
    const ws = tempWorkspace({});
    const marker = path.join(ws, 'started');
    const file = writeJson(path.join(ws, '.vscode', 'mcp.json'), {
      servers: { memory: markedMemoryServer(marker, path.join(ws, 'm.jsonl')) },
    });
    emu.setScenario({
      replies: [
        use('McpSearch', { query: 'read graph' }),
        answer('I cannot use it', { toolResultContains: 'There is no tool named "McpSearch"' }),
      ],
    });
    const at = emu.requests.length;
    const denied = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'use memory'], env());
    assert.equal(denied.code, 0, denied.stderr);
    assert.ok(
      emu.requests.slice(at).every((r) => r.status === 200),
      'the refusal reached the model',
    );
    const prefix = JSON.stringify(emu.requests[at]!.body);
    assert.doesNotMatch(
      prefix,
      /MCP server \\"memory\\"|McpSearch/,
      'the unapproved server is not in the prompt',
    );
    assert.equal(fs.existsSync(marker), false, 'the server never ran, --approve all or not');
    assert.match(
      denied.stderr,
      /not used until you approve it; review them with `keel trust`: MCP server "memory"/,
    );

    // Naming that very file approves its servers. Calls still ask: --approve never denies them, ...
    emu.setScenario({
      replies: [
        use('McpSearch', { query: 'read graph' }),
        use(
          'McpCall',
          { server: 'memory', tool: 'read_graph', arguments: {} },
          { toolResultContains: 'memory › read_graph' },
        ),
        answer('denied', { toolResultContains: 'DENIED_BY_USER' }),
      ],
    });
    const named = await runKeel(
      ['run', '--workspace', ws, '--mcp-config', file, '--approve', 'never', 'use memory'],
      env(),
    );
    assert.equal(named.code, 0, named.stderr);
    assert.equal(fs.existsSync(marker), true, 'the named file approved the server');

    // ... while --approve safe (and auto) runs the tools the server marks read-only, and still refuses the others.
    for (const mode of ['safe', 'auto']) {
      emu.setScenario({
        replies: [
          use('McpCall', { server: 'memory', tool: 'read_graph', arguments: {} }),
          use(
            'McpCall',
            { server: 'memory', tool: 'create_entities', arguments: { entities: [] } },
            { toolResultContains: '"entities"' },
          ),
          answer('ok', { toolResultContains: 'DENIED_BY_USER' }),
        ],
      });
      const run = await runKeel(
        ['run', '--workspace', ws, '--mcp-config', file, '--approve', mode, 'use memory'],
        env(),
      );
      assert.equal(run.code, 0, `${mode}: ${run.stderr}`);
    }
  });
});
