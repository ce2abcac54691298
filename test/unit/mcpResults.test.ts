import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { McpPort } from '../../src/agent/host.ts';
import { parseMcpConfig } from '../../src/agent/mcp/config.ts';
import { createMcpManager, type McpManager } from '../../src/agent/mcp/manager.ts';
import { renderMcpResult } from '../../src/agent/mcp/render.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { tempWorkspace } from './helpers/cli.ts';
import { serverScript } from './helpers/mcp.ts';

// MCP content blocks from the real everything server, rendered to what the model reads: images saved
// to a file it is told about, embedded resources, resource links, structured content; plus schema
// checks before a call and the tool-not-found error.

const port: McpPort = {
  userConfigFile: null,
  allowReadOnlyCalls: () => true,
  approveServer: async () => true,
  resolveInput: async () => undefined,
  howToApprove: () => '',
};
const ws = tempWorkspace({});
const host = createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all') });
const signal = new AbortController().signal;
let manager: McpManager;

before(() => {
  const { servers } = parseMcpConfig(
    JSON.stringify({
      servers: { ev: { command: process.execPath, args: [serverScript('everything'), 'stdio'] } },
    }),
    { file: '/u/mcp.json', scope: 'user' },
  );
  manager = createMcpManager({ servers, port, workspaceFolder: ws });
});
after(async () => {
  await manager.shutdown();
});

const render = async (tool: string, args: Record<string, unknown>) =>
  renderMcpResult((await manager.call('ev', tool, args, signal)).result, host, `toolu_${tool}`);

describe('MCP results', () => {
  test('an image is saved under .keel/tool-output and named; its bytes are a real PNG', async () => {
    const r = await render('get-tiny-image', {});
    assert.equal(r.files.length, 1);
    assert.match(
      r.text,
      /\[image image\/png, ~\d+ bytes, saved to \.keel\/tool-output\/toolu_get-tiny-image-mcp-1\.png\]/,
    );
    const bytes = fs.readFileSync(path.join(ws, r.files[0]!));
    assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  });

  test('embedded resources, resource links and structured content come through as text', async () => {
    const ref = await render('get-resource-reference', { resourceType: 'Text', resourceId: 2 });
    assert.match(ref.text, /\[resource [^\]]+\]\n/);
    const links = await render('get-resource-links', { count: 2 });
    assert.match(links.text, /\[resource link \S+/);
    const structured = await render('get-structured-content', { location: 'Chicago' });
    assert.match(structured.text, /temperature/);
  });

  test('arguments that do not match the schema never reach the server; an unknown tool names the real ones', async () => {
    await assert.rejects(
      manager.call('ev', 'get-sum', { a: 'one', b: 2 }, signal),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'INVALID_PARAM');
        assert.match(e.message, /ev › get-sum do not match its input schema: .*a.*number/);
        return true;
      },
    );
    await assert.rejects(
      manager.call('ev', 'no-such-tool', {}, signal),
      (e: Error & { code?: string; suggestion?: string }) => {
        assert.equal(e.code, 'NOT_FOUND');
        assert.match(e.suggestion ?? '', /McpSearch .*Its tools: .*echo/);
        return true;
      },
    );
    await assert.rejects(manager.call('nope', 'echo', {}, signal), /no MCP server named "nope"/);
  });
});
