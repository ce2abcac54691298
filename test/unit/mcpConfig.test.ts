// biome-ignore-all lint/suspicious/noTemplateCurlyInString: mcp.json variables are written ${…} in plain strings
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import type { McpPort } from '../../src/agent/host.ts';
import { loadMcpConfig, parseMcpConfig } from '../../src/agent/mcp/config.ts';
import { inputEnvName, resolveTransport } from '../../src/agent/mcp/resolve.ts';
import { setupSessionMcp } from '../../src/agent/mcp/setup.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { tempWorkspace } from './helpers/cli.ts';
import { serverScript, writeJson } from './helpers/mcp.ts';

// MCP configuration (VS Code's mcp.json), variable substitution and the trust rules.

const port = (over: Partial<McpPort> = {}): McpPort => ({
  userConfigFile: null,
  allowReadOnlyCalls: () => false,
  approveServer: async () => true,
  resolveInput: async () => undefined,
  howToApprove: () => 'approve it',
  ...over,
});

describe('mcp.json', () => {
  test('reads VS Code format with comments and trailing commas; bad entries are named, good ones kept', () => {
    const text = `{
      // my servers
      "inputs": [{"type": "promptString", "id": "token", "password": true}],
      "servers": {
        "gh": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer \${input:token}"}},
        "local": {"command": "node", "args": ["server.js"],},
        "bad": {"type": "stdio"},
        "weird": {"type": "pipe", "command": "x"},
        "has space": {"command": "x"},
      },
    }`;
    const loaded = parseMcpConfig(text, { file: '/w/.vscode/mcp.json', scope: 'workspace' });
    assert.deepEqual(
      loaded.servers.map((s) => [s.name, s.transport.type]),
      [
        ['gh', 'http'],
        ['local', 'stdio'],
      ],
    );
    assert.equal(loaded.problems.length, 3);
    assert.match(loaded.problems[0]!, /server "bad": command/);
    assert.match(loaded.problems[1]!, /server "weird": unknown type "pipe"/);
    assert.match(loaded.problems[2]!, /server name "has space"/);
    const broken = parseMcpConfig('{"servers": ', { file: '/w/mcp.json', scope: 'user' });
    assert.match(broken.problems[0]!, /\/w\/mcp.json: not valid JSON/);
  });

  test('substitutes ${workspaceFolder}, ${env:…} and ${input:…}; an unknown variable is a clear error', async () => {
    const [server] = parseMcpConfig(
      JSON.stringify({
        servers: {
          s: {
            command: '${workspaceFolder}/bin/srv',
            args: ['--key=${input:api-key}', '${env:HOMEISH}'],
            env: { TOKEN: '${env:SECRET}' },
          },
        },
      }),
      { file: '/w/mcp.json', scope: 'user' },
    ).servers;
    const spec = await resolveTransport(server!, {
      workspaceFolder: '/w',
      env: { HOMEISH: '/h', SECRET: 's3' },
      input: async (i) => (i.id === 'api-key' ? 'k1' : undefined),
    });
    assert.deepEqual(spec, {
      type: 'stdio',
      command: '/w/bin/srv',
      args: ['--key=k1', '/h'],
      env: { TOKEN: 's3' },
      cwd: '/w',
    });
    await assert.rejects(
      resolveTransport(server!, { workspaceFolder: '/w', env: {}, input: async () => undefined }),
      /needs the input "api-key"/,
    );
    const [odd] = parseMcpConfig(JSON.stringify({ servers: { o: { command: '${command:pick}' } } }), {
      file: '/w/mcp.json',
      scope: 'user',
    }).servers;
    await assert.rejects(
      resolveTransport(odd!, { workspaceFolder: '/w', env: {}, input: async () => undefined }),
      /unknown variable \$\{command:pick\}/,
    );
    assert.equal(inputEnvName('api-key'), 'KEEL_MCP_INPUT_API_KEY');
  });

  test('envFile (dotenv) comes before env; a missing envFile is a clear error', async () => {
    const ws = tempWorkspace({
      '.env.mcp': '# keys\nexport A=1\nB="two words"\nC=three # note\n\nbad line\n',
    });
    const [server] = parseMcpConfig(
      JSON.stringify({
        servers: { s: { command: 'x', envFile: '${workspaceFolder}/.env.mcp', env: { C: 'env wins' } } },
      }),
      { file: '/w/mcp.json', scope: 'user' },
    ).servers;
    const spec = await resolveTransport(server!, {
      workspaceFolder: ws,
      env: {},
      input: async () => undefined,
    });
    assert.deepEqual(spec.type === 'stdio' ? spec.env : undefined, { A: '1', B: 'two words', C: 'env wins' });
    await assert.rejects(
      resolveTransport(server!, { workspaceFolder: '/nowhere', env: {}, input: async () => undefined }),
      /"s": cannot read its envFile \/nowhere\/.env.mcp \(ENOENT\)/,
    );
  });

  test('a later file replaces a same-named server and says so; the hash follows the definition', () => {
    const files: Record<string, string> = {
      '/u/mcp.json': JSON.stringify({ servers: { a: { command: 'one' } } }),
      '/w/.vscode/mcp.json': JSON.stringify({ servers: { a: { command: 'two' } } }),
    };
    const loaded = loadMcpConfig(
      [
        { file: '/u/mcp.json', scope: 'user' },
        { file: '/w/.vscode/mcp.json', scope: 'workspace' },
      ],
      (f) => files[f],
    );
    assert.equal(loaded.servers.length, 1);
    assert.equal(loaded.servers[0]!.scope, 'workspace');
    assert.match(loaded.problems[0]!, /"a" in \/w\/.vscode\/mcp.json replaces the one in \/u\/mcp.json/);
    const again = parseMcpConfig(files['/u/mcp.json']!, { file: '/u/mcp.json', scope: 'user' }).servers[0]!;
    assert.notEqual(again.hash, loaded.servers[0]!.hash);
  });
});

describe('MCP trust', () => {
  test('an untrusted workspace never starts its own servers (they are not even offered)', async () => {
    const ws = tempWorkspace({});
    writeJson(path.join(ws, '.vscode', 'mcp.json'), {
      servers: { memory: { command: process.execPath, args: [serverScript('memory')] } },
    });
    let asked = 0;
    const host = {
      ...createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all'), trusted: false }),
      mcp: port({
        approveServer: async () => {
          asked++;
          return true;
        },
      }),
    };
    const setup = setupSessionMcp(host, { readOnly: true });
    assert.equal(setup.mcp, undefined);
    assert.equal(asked, 0);
    assert.match(setup.notices.join('\n'), /untrusted workspace are never started: memory/);
  });

  test('a workspace server asks the host once per session; a refusal stops it before anything runs', async () => {
    const ws = tempWorkspace({});
    const marker = path.join(ws, 'ran');
    writeJson(path.join(ws, '.keel', 'mcp.json'), {
      servers: { m: { command: '/bin/sh', args: ['-c', `touch '${marker}'`] } },
    });
    const requests: string[] = [];
    const host = {
      ...createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all') }),
      mcp: port({
        approveServer: async (r) => {
          requests.push(`${r.server}: ${r.commandLine}`);
          return false;
        },
      }),
    };
    const { mcp } = setupSessionMcp(host, { readOnly: false });
    assert.ok(mcp);
    const signal = new AbortController().signal;
    for (let i = 0; i < 2; i++) {
      const [listing] = await mcp.manager.listTools(undefined, signal);
      assert.equal(listing!.error?.code, 'DENIED_BY_USER');
    }
    assert.deepEqual(requests, [`m: /bin/sh -c 'touch '\\''${marker}'\\'''`]);
    assert.equal(fs.existsSync(marker), false);
    assert.equal(mcp.manager.loads, 0, 'the MCP SDK was never loaded');
    assert.equal(mcp.manager.status()[0]!.state, 'denied');
  });
});

describe('MCP stays out of everyday sessions', () => {
  test('a session without configured servers never loads the MCP SDK', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-mcp-home-'));
    const ws = tempWorkspace({});
    const hook = path.join(ws, 'hook.mjs');
    // Records every module URL resolved in the process (ESM loader hook, Node ≥ 20.6).
    fs.writeFileSync(
      hook,
      `export async function resolve(s, c, next) { const r = await next(s, c); if (/modelcontextprotocol/.test(r.url)) console.error('LOADED ' + r.url); return r; }`,
    );
    const script = `
      import { register } from 'node:module';
      register(${JSON.stringify(`file://${hook}`)});
      const { createAgentSession } = await import('./src/agent/session/session.ts');
      const { createNodeHost } = await import('./src/agent/node/nodeHost.ts');
      const { createPolicyApprovals } = await import('./src/agent/safety/approvals.ts');
      const host = { ...createNodeHost({ workspace: ${JSON.stringify(ws)}, approvals: createPolicyApprovals('never') }),
        mcp: { allowReadOnlyCalls: () => false, approveServer: async () => false, resolveInput: async () => undefined, howToApprove: () => '' } };
      const s = createAgentSession({ host, model: 'claude-sonnet-4-6', apiKey: 'k', baseURL: 'http://127.0.0.1:9', userSkillsDir: null });
      console.log('tools', s.mcp === undefined);
      s.dispose();
      if (process.env.LOAD_MCP) await import('./src/agent/mcp/connection.ts');
    `;
    const run = (load: boolean) =>
      spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
        env: { ...process.env, HOME: home, ...(load ? { LOAD_MCP: '1' } : {}) },
      });
    const plain = run(false);
    assert.equal(plain.status, 0, plain.stderr);
    assert.match(plain.stdout, /tools true/);
    assert.doesNotMatch(plain.stderr, /LOADED/);
    // The hook does see the SDK when the connection module is loaded (the check above can fail).
    const loaded = run(true);
    assert.equal(loaded.status, 0, loaded.stderr);
    assert.match(loaded.stderr, /LOADED .*@modelcontextprotocol\/sdk/);
  });
});

describe('what a server sees and what errors show', () => {
  test("a server gets the config's env but not Keel's API key; errors show ${input:…} unexpanded", async () => {
    const { createMcpManager } = await import('../../src/agent/mcp/manager.ts');
    const { servers } = parseMcpConfig(
      JSON.stringify({
        servers: {
          leaky: {
            command: process.execPath,
            args: ['-e', 'console.error(JSON.stringify(process.env)); process.exit(3)', '${input:tok}'],
            env: { FROM_CONFIG: 'yes-${input:tok}' },
          },
        },
      }),
      { file: '/u/mcp.json', scope: 'user' },
    );
    const saved = process.env.ANTHROPIC_API_KEY;
    process.env.ANTHROPIC_API_KEY = 'sk-must-not-leak';
    try {
      const manager = createMcpManager({
        servers,
        port: port({ resolveInput: async () => 'SECRET-123' }),
        workspaceFolder: os.tmpdir(),
      });
      const [listing] = await manager.listTools(undefined, new AbortController().signal);
      const message = listing!.error!.message;
      assert.match(message, /failed to start .*\$\{input:tok\}'\): the process exited with code 3/);
      assert.match(message, /"FROM_CONFIG":"yes-SECRET-123"/, 'the server got its env (its stderr is shown)');
      assert.doesNotMatch(message, /sk-must-not-leak/);
      assert.doesNotMatch(
        message.split('stderr')[0]!,
        /SECRET-123/,
        'the command line shown is the unexpanded one',
      );
    } finally {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = saved;
    }
  });
});

describe("a server's instructions as its prompt line", () => {
  test('the gist is plain, one sentence, and cut short', async () => {
    const { instructionsGist } = await import('../../src/agent/mcp/setup.ts');
    assert.equal(
      instructionsGist('# Title\n\n**Audience**: agents using <b>this</b> server. Ignore the rest.'),
      'Audience: agents using bthis/b server.',
    );
    assert.equal(instructionsGist('x'.repeat(300))?.length, 120);
    assert.equal(instructionsGist('# only a heading\n\n'), undefined);
  });

  test('learned when the server first starts, used from the next session on (never mid-session)', async () => {
    const ws = tempWorkspace({});
    const userConfig = writeJson(path.join(ws, 'user', 'mcp.json'), {
      servers: { ev: { command: process.execPath, args: [serverScript('everything'), 'stdio'] } },
    });
    const host = {
      ...createNodeHost({ workspace: ws, approvals: createPolicyApprovals('all') }),
      mcp: port({ userConfigFile: userConfig }),
    };
    const first = setupSessionMcp(host, { readOnly: false }).mcp!;
    assert.equal(first.servers[0]!.description, undefined);
    await first.manager.listTools(undefined, new AbortController().signal);
    await first.manager.shutdown();
    assert.equal(first.servers[0]!.description, undefined, 'this session keeps its prefix');
    const second = setupSessionMcp(host, { readOnly: false }).mcp!;
    assert.match(second.servers[0]!.description ?? '', /^Audience: .*Everything MCP Server\.$/);
  });
});
