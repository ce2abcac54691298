// biome-ignore-all lint/suspicious/noTemplateCurlyInString: mcp.json variables are written ${…} in plain strings
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import * as net from 'node:net';
import { after, describe, test } from 'node:test';
import type { McpPort } from '../../src/agent/host.ts';
import { parseMcpConfig } from '../../src/agent/mcp/config.ts';
import { createMcpManager } from '../../src/agent/mcp/manager.ts';
import { serverScript } from './helpers/mcp.ts';

// Remote MCP servers: the real everything server over streamable HTTP and over the old SSE transport.

const started: ChildProcess[] = [];
after(() => {
  for (const child of started) child.kill('SIGKILL');
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function startRemote(mode: 'streamableHttp' | 'sse'): Promise<number> {
  const port = await freePort();
  const child = spawn(process.execPath, [serverScript('everything'), mode], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  started.push(child);
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr!.setEncoding('utf8').on('data', (c: string) => {
      err += c;
      if (/(listening|running) on port/i.test(err)) resolve();
    });
    child.on('exit', () => reject(new Error(`server exited: ${err}`)));
  });
  return port;
}

const port: McpPort = {
  userConfigFile: null,
  allowReadOnlyCalls: () => true,
  approveServer: async () => true,
  resolveInput: async (i) => (i.id === 'token' ? 'secret-1' : undefined),
  howToApprove: () => '',
};

describe('remote MCP servers', () => {
  for (const [mode, type, urlPath] of [
    ['streamableHttp', 'http', '/mcp'],
    ['sse', 'sse', '/sse'],
  ] as const) {
    test(`${type}: lists tools and calls one; headers take \${input:…}`, async () => {
      const listening = await startRemote(mode);
      const { servers } = parseMcpConfig(
        JSON.stringify({
          servers: {
            remote: {
              type,
              url: `http://127.0.0.1:${listening}${urlPath}`,
              headers: { Authorization: 'Bearer ${input:token}' },
            },
          },
        }),
        { file: '/u/mcp.json', scope: 'user' },
      );
      const manager = createMcpManager({ servers, port, workspaceFolder: '/tmp' });
      const signal = new AbortController().signal;
      try {
        const [listing] = await manager.listTools(undefined, signal);
        assert.ok(
          listing!.tools?.some((t) => t.name === 'echo'),
          JSON.stringify(listing!.error),
        );
        const { result } = await manager.call('remote', 'echo', { message: `over ${type}` }, signal);
        assert.deepEqual(result.content, [{ type: 'text', text: `Echo: over ${type}` }]);
        assert.equal(manager.status()[0]!.state, 'running');
      } finally {
        await manager.shutdown();
      }
      assert.equal(manager.status()[0]!.state, 'stopped');
    });
  }
});
