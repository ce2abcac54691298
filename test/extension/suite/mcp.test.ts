import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Host } from '../../../src/agent/host.ts';
import { createAgentSession } from '../../../src/agent/session/session.ts';
import { serverItem } from '../../../src/extension/mcp.ts';
import { createTrustRoom } from '../../../src/agent/trust/room.ts';

// MCP in the real VS Code extension host: the command, the setting, the host's MCP port, and a
// workspace-defined server that is listed but never started until a tool needs it (and approval).

interface KeelApi {
  host(): Host;
}

describe('MCP servers in VS Code', () => {
  it('registers "Keel: MCP Servers" and a machine-scoped read-only setting; rows show state and tools', async () => {
    const ext = vscode.extensions.getExtension<KeelApi>('keel-dev.keel');
    assert.ok(ext);
    await ext.activate();
    assert.ok((await vscode.commands.getCommands(true)).includes('keel.mcpServers'));
    const props = (
      ext.packageJSON as {
        contributes: { configuration: { properties: Record<string, { scope?: string }> } };
      }
    ).contributes.configuration.properties;
    assert.equal(props['keel.mcp.allowReadOnlyCalls']?.scope, 'machine');
    const row = serverItem({
      name: 'github',
      scope: 'workspace',
      file: '/w/.vscode/mcp.json',
      commandLine: 'npx server-github',
      state: 'running',
      toolCount: 12,
    });
    assert.equal(row.label, '$(pass-filled) github');
    assert.equal(row.description, 'running · 12 tools · workspace');
    const failed = serverItem({
      name: 'db',
      scope: 'user',
      file: '/u/mcp.json',
      commandLine: 'db-server',
      state: 'failed',
      reason: 'the process exited with code 1\nstderr…',
    });
    assert.equal(failed.detail, 'the process exited with code 1');
  });

  it('a workspace mcp.json server is offered only once approved in the trust room; nothing starts at session start; read-only calls still ask by default', async () => {
    const ext = vscode.extensions.getExtension<KeelApi>('keel-dev.keel');
    assert.ok(ext);
    const api = await ext.activate();
    const host = api.host();
    assert.ok(host.mcp, 'the VS Code host offers MCP');
    assert.ok(host.trust, 'the VS Code host has a trust room');
    assert.equal(host.mcp.allowReadOnlyCalls(), false);
    assert.match(host.mcp.howToApprove('x', '/w/.vscode/mcp.json'), /Keel: MCP Servers/);
    const root = host.workspace.roots[0]!;
    const marker = path.join(root, '.keel-mcp-started');
    const file = path.join(root, '.vscode', 'mcp.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(
      file,
      JSON.stringify({ servers: { probe: { command: '/bin/sh', args: ['-c', `touch '${marker}'`] } } }),
    );
    const room = createTrustRoom({ root, workspaceTrusted: vscode.workspace.isTrusted });
    const open = (trust: typeof room) =>
      createAgentSession({
        host: { ...host, trust },
        model: 'claude-sonnet-4-6',
        apiKey: 'k',
        baseURL: 'http://127.0.0.1:9',
        userSkillsDir: null,
      });
    try {
      const unapproved = open(room);
      try {
        assert.equal(unapproved.mcp, undefined, 'an unapproved workspace server is not offered');
        assert.match(room.pendingNotice() ?? '', /MCP server "probe"/);
      } finally {
        unapproved.dispose();
      }
      room.approve(room.pending(), Date.now());
      const session = open(room);
      try {
        assert.deepEqual(
          session.mcp?.status().map((s) => [s.name, s.scope, s.state]),
          [['probe', 'workspace', 'not_started']],
        );
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(fs.existsSync(marker), false, 'nothing ran');
      } finally {
        session.dispose();
      }
    } finally {
      room.store.revoke();
      fs.rmSync(file, { force: true });
      fs.rmSync(marker, { force: true });
    }
  });
});
