import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseMcpConfig } from '../../src/agent/mcp/config.ts';
import { probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { mcpServerGrants } from '../../src/agent/trust/items.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// OAuth client settings beyond a secret: a private_key_jwt key file, a client ID metadata document
// URL, cross-app access. What a user writes is validated; whose key Keel signs with is the user's
// decision, never a repository's; a key file is kept where the command sandbox cannot read it.

describe('oauth settings in mcp.json', () => {
  test('approving a workspace server names the secrets its oauth settings send, and where', () => {
    const [server] = parseMcpConfig(
      JSON.stringify({
        servers: {
          s: {
            type: 'http',
            url: 'https://mcp.example.test/mcp',
            oauth: {
              clientId: 'c',
              clientSecret: `$${'{'}env:CLIENT_SECRET}`,
              crossAppAccess: {
                idpTokenEndpoint: 'https://idp.example.test/token',
                idpClientId: 'i',
                idToken: `$${'{'}env:IDP_TOKEN}`,
              },
            },
          },
        },
      }),
      { file: '/w/.vscode/mcp.json', scope: 'workspace' },
    ).servers;
    const grants = mcpServerGrants(server!).join('\n');
    assert.match(grants, /sends your CLIENT_SECRET as its OAuth client secret/);
    assert.match(
      grants,
      /sends your IDP_TOKEN as your identity token to https:\/\/idp\.example\.test\/token/,
    );
  });

  const parse = (oauth: unknown) =>
    parseMcpConfig(
      JSON.stringify({ servers: { s: { type: 'http', url: 'https://mcp.example.test/mcp', oauth } } }),
      {
        file: '/u/mcp.json',
        scope: 'user',
      },
    );

  test('good settings are kept; bad ones are named and the server skipped', () => {
    const ok = parse({
      clientId: 'c',
      grant: 'client_credentials',
      privateKeyJwt: { keyFile: '~/.ssh/k.pem', alg: 'ES256' },
    });
    assert.deepEqual(ok.problems, []);
    assert.equal(ok.servers[0]?.transport.type, 'http');
    const cases: Array<[unknown, RegExp]> = [
      [
        { clientIdMetadataUrl: 'http://example.test/client.json' },
        /clientIdMetadataUrl must be an https URL/,
      ],
      [{ clientIdMetadataUrl: 'https://example.test/' }, /with a path/],
      [
        { clientIdMetadataUrl: 'https://example.test/c.json', clientId: 'x' },
        /either clientId .* or clientIdMetadataUrl/,
      ],
      [{ clientId: 'c', privateKeyJwt: { keyFile: 'k.pem', alg: 'HS256' } }, /privateKeyJwt.alg/],
      [{ privateKeyJwt: { keyFile: 'k.pem', alg: 'ES256' } }, /privateKeyJwt needs clientId/],
      [{ clientId: 'c', grant: 'client_credentials' }, /needs clientSecret or privateKeyJwt/],
      [
        { crossAppAccess: { idpTokenEndpoint: 'https://idp.test/token', idpClientId: 'i', idToken: 't' } },
        /crossAppAccess needs clientId/,
      ],
      [
        { clientId: 'c', clientSecret: 's', crossAppAccess: { idpClientId: 'i', idToken: 't' } },
        /idpTokenEndpoint/,
      ],
      [{ clientId: 'c', keyFile: 'k.pem' }, /Unrecognized key/],
    ];
    for (const [oauth, why] of cases) {
      const bad = parse(oauth);
      assert.equal(bad.servers.length, 0, JSON.stringify(oauth));
      assert.match(bad.problems.join('\n'), why);
      assert.match(bad.problems[0]!, /server "s"/);
    }
  });
});

/** A protected resource whose authorization server takes client_credentials with private_key_jwt only. */
async function startMachineAuthServer(): Promise<{
  url: string;
  assertions: string[];
  close(): Promise<void>;
}> {
  const assertions: string[] = [];
  const server = http.createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', base);
      if (url.pathname === '/.well-known/oauth-protected-resource/mcp')
        return json(200, { resource: `${base}/mcp`, authorization_servers: [base] });
      if (url.pathname === '/.well-known/oauth-authorization-server')
        return json(200, {
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          response_types_supported: ['code'],
          grant_types_supported: ['client_credentials'],
          token_endpoint_auth_methods_supported: ['private_key_jwt'],
          token_endpoint_auth_signing_alg_values_supported: ['ES256'],
        });
      if (url.pathname === '/token') {
        const assertion = new URLSearchParams(body).get('client_assertion');
        if (assertion) assertions.push(assertion);
        return json(400, { error: 'invalid_client', error_description: 'this test server grants nothing' });
      }
      if (url.pathname === '/mcp')
        return json(
          401,
          { error: 'unauthorized' },
          {
            'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
          },
        );
      return json(404, { error: 'not found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    assertions,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('whose key Keel signs with (the built CLI)', () => {
  let emu: Emulator;
  let as: Awaited<ReturnType<typeof startMachineAuthServer>>;
  let home: string;
  const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;
  before(async () => {
    emu = await startEmulator({});
    as = await startMachineAuthServer();
    home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-keys-home-')));
    for (const dir of ['.ssh', 'keys', '.keel/keys']) {
      fs.mkdirSync(path.join(home, dir), { recursive: true, mode: 0o700 });
      fs.writeFileSync(path.join(home, dir, 'mcp.pem'), pem, { mode: 0o600 });
    }
  });
  after(async () => {
    await emu.close();
    await as.close();
    fs.rmSync(home, { recursive: true, force: true });
  });
  const env = () => cliEnv(emu.url, { HOME: home });
  const call = (name: string, input: unknown): ScriptedReply => ({
    content: [{ type: 'tool_use', name, input }],
  });
  const server = (keyFile: string) => ({
    servers: {
      machine: {
        type: 'http',
        url: as.url,
        oauth: {
          clientId: 'keel-machine',
          grant: 'client_credentials',
          privateKeyJwt: { keyFile, alg: 'ES256' },
        },
      },
    },
  });
  const search = () =>
    emu.setScenario({
      replies: [
        call('McpSearch', { query: 'anything', server: 'machine' }),
        { content: [{ type: 'text', text: 'done' }] },
      ],
    });
  const toolResults = () => JSON.stringify(emu.requests.at(-1)?.body);

  test("a repository's mcp.json cannot make Keel sign with the user's key, even once trusted", {
    timeout: 60_000,
  }, async () => {
    const ws = tempWorkspace({ '.vscode/mcp.json': JSON.stringify(server(`${home}/.ssh/mcp.pem`)) });
    assert.equal((await runKeel(['trust', '--workspace', ws, '--yes'], env())).code, 0);
    search();
    const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', 'use machine'], env());
    assert.equal(run.code, 0, run.stderr);
    const log = JSON.stringify(readLog(ws, sessionIdFrom(run.stderr)));
    assert.match(log, /names a private key outside it/);
    assert.equal(
      as.assertions.length,
      0,
      'Keel signed a client assertion with the user key for the workspace',
    );
    assert.ok(!log.includes('PRIVATE KEY'), 'the key text reached the log');
  });

  test("the user's own config signs with a key in ~/.ssh or Keel's folder; a key elsewhere is refused", {
    timeout: 90_000,
  }, async () => {
    const ws = tempWorkspace();
    for (const key of ['~/.ssh/mcp.pem', `${home}/.keel/keys/mcp.pem`]) {
      const before = as.assertions.length;
      const config = path.join(home, 'mcp.json');
      fs.writeFileSync(config, JSON.stringify(server(key)));
      search();
      const run = await runKeel(
        ['run', '--workspace', ws, '--mcp-config', config, '--approve', 'all', 'use machine'],
        env(),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.ok(
        as.assertions.length > before,
        `no signed assertion with ${key}: ${toolResults().slice(-600)}`,
      );
      // A JWT (header.payload.signature) whose iss and sub are the client.
      const payload = JSON.parse(
        Buffer.from(as.assertions.at(-1)!.split('.')[1]!, 'base64url').toString(),
      ) as Record<string, unknown>;
      assert.equal(payload.iss, 'keel-machine');
      assert.equal(payload.sub, 'keel-machine');
      assert.match(toolResults(), /this test server grants nothing/);
    }
    const before = as.assertions.length;
    const config = path.join(home, 'mcp.json');
    fs.writeFileSync(config, JSON.stringify(server('~/keys/mcp.pem')));
    search();
    const run = await runKeel(
      ['run', '--workspace', ws, '--mcp-config', config, '--approve', 'all', 'use machine'],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(as.assertions.length, before);
    assert.match(toolResults(), /where a sandboxed command could read it/);
  });

  test('a sandboxed command cannot read a key kept where Keel asks for it', {
    timeout: 60_000,
    skip: probeSandbox({ bwrapPath: 'bwrap' }).tier !== 'bwrap' && 'no bubblewrap here',
  }, async () => {
    const ws = tempWorkspace();
    for (const key of [`${home}/.keel/keys/mcp.pem`, `${home}/.ssh/mcp.pem`]) {
      const bash = await runKeel(
        [
          'tool',
          'Bash',
          JSON.stringify({ command: `python3 -c 'print(open("${key}").read())'` }),
          '--workspace',
          ws,
          '--approve',
          'all',
        ],
        env(),
      );
      const result = JSON.parse(bash.stdout) as { text: string; error?: { code: string } };
      assert.equal(result.error?.code, 'SANDBOX_DENIED', result.text);
      assert.ok(!bash.stdout.includes('PRIVATE KEY'), `a sandboxed command read ${key}`);
    }
  });
});
