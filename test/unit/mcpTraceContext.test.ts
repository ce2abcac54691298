import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { connectMcpServer } from '../../src/agent/mcp/connection.ts';
import { setActiveTraceparent } from '../../src/agent/telemetry/propagation.ts';

// The W3C trace context of the running tool call reaches an MCP server in `tools/call`'s `_meta`
// (a real stdio server built on the official SDK reports the `_meta` it received).

const sdk = (p: string) =>
  pathToFileURL(path.resolve('node_modules/@modelcontextprotocol/sdk/dist/esm', p)).href;

const SERVER = `
import { Server } from '${sdk('server/index.js')}';
import { StdioServerTransport } from '${sdk('server/stdio.js')}';
import { CallToolRequestSchema, ListToolsRequestSchema } from '${sdk('types.js')}';
const server = new Server({ name: 'meta-echo', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: 'meta', description: 'echoes _meta', inputSchema: { type: 'object' } }],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [{ type: 'text', text: JSON.stringify(request.params._meta ?? null) }],
}));
await server.connect(new StdioServerTransport());
`;

test('tools/call carries the active traceparent in _meta, and none when telemetry is off', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-mcp-meta-'));
  const script = path.join(dir, 'server.mjs');
  fs.writeFileSync(script, SERVER);
  const conn = await connectMcpServer(
    { type: 'stdio', command: process.execPath, args: [script], env: {}, cwd: dir },
    { startTimeoutMs: 30_000 },
  );
  const signal = new AbortController().signal;
  const metaOf = async () => {
    const result = await conn.callTool('meta', {}, { timeoutMs: 10_000, signal });
    return JSON.parse((result.content as { text: string }[])[0]?.text ?? 'null') as Record<
      string,
      unknown
    > | null;
  };
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  try {
    setActiveTraceparent(traceparent);
    assert.equal((await metaOf())?.traceparent, traceparent);
    setActiveTraceparent(undefined);
    assert.equal((await metaOf())?.traceparent, undefined);
  } finally {
    setActiveTraceparent(undefined);
    await conn.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
