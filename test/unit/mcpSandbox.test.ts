import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import type { McpPort } from '../../src/agent/host.ts';
import { parseMcpConfig } from '../../src/agent/mcp/config.ts';
import { createMcpManager } from '../../src/agent/mcp/manager.ts';
import { probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { createSandbox } from '../../src/agent/safety/sandbox/sandbox.ts';
import { serverScript } from './helpers/mcp.ts';

// Stdio MCP servers run inside the session's OS sandbox: the real filesystem and memory servers from
// npm still work on the workspace, but a write outside it fails even where the server itself would
// allow it; the server cannot see a process of the host (new PID namespace).

const available = probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap';

const port: McpPort = {
  userConfigFile: null,
  allowReadOnlyCalls: () => true,
  approveServer: async () => true,
  resolveInput: async () => undefined,
  howToApprove: () => '',
};

function text(result: { content?: unknown }): string {
  return ((result.content as { type: string; text?: string }[]) ?? []).map((c) => c.text ?? '').join('\n');
}

test('sandboxed stdio MCP servers work in the workspace and cannot write outside it', {
  skip: !available && 'no bwrap',
}, async () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-mcp-sbx-')));
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  fs.mkdirSync(ws);
  fs.mkdirSync(outside);
  const sandbox = createSandbox({ roots: [ws] });
  const { servers } = parseMcpConfig(
    JSON.stringify({
      servers: {
        // The server itself is told it may use both folders; the sandbox is what says no.
        fs: { command: process.execPath, args: [serverScript('filesystem'), ws, outside] },
        memIn: {
          command: process.execPath,
          args: [serverScript('memory')],
          env: { MEMORY_FILE_PATH: path.join(ws, 'memory.jsonl') },
        },
        memOut: {
          command: process.execPath,
          args: [serverScript('memory')],
          env: { MEMORY_FILE_PATH: path.join(outside, 'memory.jsonl') },
        },
      },
    }),
    { file: '/u/mcp.json', scope: 'user' },
  );
  const manager = createMcpManager({ servers, port, workspaceFolder: ws, sandbox });
  const signal = new AbortController().signal;
  const call = async (server: string, tool: string, args: Record<string, unknown>) => {
    try {
      return (await manager.call(server, tool, args, signal)).result;
    } catch (error) {
      return { isError: true, content: [{ type: 'text', text: String((error as Error).message) }] };
    }
  };
  try {
    const inside = await call('fs', 'write_file', { path: path.join(ws, 'a.txt'), content: 'in\n' });
    assert.ok(!inside.isError, text(inside));
    assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'in\n');
    const read = await call('fs', 'read_text_file', { path: path.join(ws, 'a.txt') });
    assert.match(text(read), /^in/);

    const outsideWrite = await call('fs', 'write_file', {
      path: path.join(outside, 'b.txt'),
      content: 'out\n',
    });
    assert.equal(outsideWrite.isError, true);
    // Since Keel declares roots (the workspace folder), the filesystem server narrows itself to them
    // and refuses first; the sandbox alone is still what stops memOut below.
    assert.match(text(outsideWrite), /read-only file system|EROFS|outside allowed directories/i);
    assert.equal(fs.existsSync(path.join(outside, 'b.txt')), false);

    const entity = { entities: [{ name: 'keel', entityType: 'project', observations: ['sandboxed'] }] };
    const memIn = await call('memIn', 'create_entities', entity);
    assert.ok(!memIn.isError, text(memIn));
    assert.match(fs.readFileSync(path.join(ws, 'memory.jsonl'), 'utf8'), /"keel"/);
    const memOut = await call('memOut', 'create_entities', entity);
    assert.equal(memOut.isError, true, text(memOut));
    assert.equal(fs.existsSync(path.join(outside, 'memory.jsonl')), false);
  } finally {
    await manager.shutdown();
    sandbox.dispose();
    fs.rmSync(base, { recursive: true, force: true });
  }
});
