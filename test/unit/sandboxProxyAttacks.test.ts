import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import * as tls from 'node:tls';
import { configuredRegistryDomains } from '../../src/agent/safety/sandbox/domains.ts';
import { type ProxyDenial, startDomainProxy } from '../../src/agent/safety/sandbox/proxy.ts';
import { waitFor } from './helpers/cli.ts';

// Attacks on the sandbox's network proxy, spoken to it over its Unix socket exactly as the bridge
// inside the sandbox does. The would-be victims are servers on this machine: each test asserts that
// they never see a request (or never the foreign Host) and that the client gets the 403. Names under
// the reserved `.test` TLD are mapped to loopback by the test, as in sandboxProxy.test.ts; every
// other host goes through the proxy's real classification.

const ownV4 = Object.values(os.networkInterfaces())
  .flat()
  .find((i) => i?.family === 'IPv4' && !i.internal)?.address;
const ownV6 = Object.values(os.networkInterfaces())
  .flat()
  .find((i) => i?.family === 'IPv6' && !i.internal && !i.address.startsWith('fe80'))?.address;

let dir: string;
let socketPath: string;
let proxy: { close(): void };
const asked: string[] = [];
const denials: ProxyDenial[] = [];
/** The victim on 127.0.0.1 (a local dev server, a database's HTTP port…). */
let loopback: http.Server;
/** A victim on every interface (0.0.0.0 / ::), reachable through the host's own addresses. */
let everywhere: http.Server;
const hits: string[] = [];
let port: number;
let wildPort: number;

function victim(listen: (s: http.Server) => Promise<void>): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    hits.push(`${req.headers.host} ${req.url}`);
    res.end(`hello from ${req.headers.host}\n`);
  });
  return listen(server).then(() => server);
}

before(async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-proxy-attacks-')));
  socketPath = path.join(dir, 'proxy.sock');
  loopback = await victim((s) => new Promise((r) => s.listen(0, '127.0.0.1', r)));
  port = (loopback.address() as net.AddressInfo).port;
  everywhere = await victim((s) => new Promise((r) => s.listen(0, '::', r)));
  wildPort = (everywhere.address() as net.AddressInfo).port;
  // Everything is "allowed", as if a repository's .npmrc had put it on the list: the proxy's own
  // address check is what must hold.
  proxy = startDomainProxy({
    socketPath,
    decide: async (host) => {
      asked.push(host);
      return { allowed: true, source: 'allow-list', reason: 'on the allowed domains' };
    },
    resolve: (host) => (host.endsWith('.test') ? '127.0.0.1' : host),
    onDenied: (denial) => denials.push(denial),
  });
  await waitFor(() => fs.existsSync(socketPath), 10_000, "the proxy's socket");
});
after(() => {
  proxy.close();
  loopback.close();
  everywhere.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** One raw exchange with the proxy; the answer is whatever came back before it closed (≤ 4 s). */
function exchange(request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    let answer = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', () => {});
    socket.setTimeout(4_000, () => socket.destroy());
    socket.write(request);
  });
}

const get = (url: string, host = new URL(url).host) =>
  exchange(`GET ${url} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
const connect = (authority: string) =>
  exchange(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);

function assertRefused(answer: string, reason: RegExp, label: string): void {
  assert.match(answer, /^HTTP\/1\.1 403 Forbidden\r\n/, `${label}: ${answer || '(no answer)'}`);
  assert.match(answer, /X-Keel-Sandbox: denied/, label);
  assert.match(answer, reason, label);
}

test('hole 3: the IPv4-mapped hex form of loopback does not reach a server on 127.0.0.1', async () => {
  asked.length = 0;
  hits.length = 0;
  for (const url of [
    `http://[::ffff:7f00:1]:${port}/steal`,
    `http://[::ffff:127.0.0.1]:${port}/steal`,
    `http://[::127.0.0.1]:${port}/steal`,
    `http://[64:ff9b::7f00:1]:${port}/steal`,
    `http://0x7f.1:${port}/steal`,
    `http://2130706433:${port}/steal`,
    `http://localhost:${port}/steal`,
  ])
    assertRefused(await get(url), /an address of this machine \(127\.0\.0\.1/, url);
  for (const authority of [
    `[::ffff:7f00:1]:${port}`,
    `[0:0:0:0:0:ffff:7f00:1]:${port}`,
    `127.1:${port}`,
    `0177.0.0.1:${port}`,
    `[::1]:${port}`,
  ])
    assertRefused(await connect(authority), /an address of this machine/, `CONNECT ${authority}`);
  assert.deepEqual(hits, [], 'the loopback server saw no request');
  assert.ok(
    denials.some((d) => d.host === '::ffff:7f00:1' && /written as IPv4-mapped ::ffff:7f00:1/.test(d.reason)),
    'the refusal names the spelling',
  );
  assert.deepEqual(asked, ['localhost'], 'an IP literal of this machine is refused before anyone is asked');
});

test('cloud metadata in mapped, NAT64 and IPv6 forms is refused without a connection attempt', async () => {
  for (const [url, reason] of [
    [
      'http://[::ffff:a9fe:a9fe]/latest/meta-data/',
      /cloud metadata endpoint \(169\.254\.169\.254, written as IPv4-mapped/,
    ],
    ['http://[::ffff:169.254.169.254]/latest/meta-data/', /cloud metadata endpoint \(169\.254\.169\.254/],
    [
      'http://[64:ff9b::a9fe:a9fe]/latest/meta-data/',
      /cloud metadata endpoint \(169\.254\.169\.254, written as NAT64/,
    ],
    ['http://[fd00:ec2::254]/latest/meta-data/', /cloud metadata endpoint \(fd00:ec2::254\)/],
    ['http://0xa9fea9fe/latest/meta-data/', /cloud metadata endpoint \(169\.254\.169\.254\)/],
    ['http://[fe80::a9fe:a9fe]/', /link-local address/],
  ] as const)
    assertRefused(await get(url), reason, url);
  assertRefused(await connect('[::ffff:a9fe:a9fe]:80'), /cloud metadata endpoint/, 'CONNECT metadata');
});

test("the host's own interface address (eth0) is this machine too", {
  skip: !ownV4 && 'this machine has no non-loopback IPv4 interface',
}, async () => {
  hits.length = 0;
  const urls = [`http://${ownV4}:${wildPort}/own`, `http://[::ffff:${ownV4}]:${wildPort}/own`];
  if (ownV6) urls.push(`http://[${ownV6}]:${wildPort}/own`);
  for (const url of urls)
    assertRefused(await get(url), /an address of this machine \(.*one of its network interfaces\)/, url);
  assertRefused(
    await connect(`${ownV4}:${wildPort}`),
    /an address of this machine/,
    `CONNECT ${ownV4}:${wildPort}`,
  );
  assert.deepEqual(hits, [], 'the server on 0.0.0.0 saw no request');
});

test('domain fronting over plain HTTP: the upstream Host is the authority that was checked', async () => {
  hits.length = 0;
  const answer = await get(`http://allowed.test:${port}/front`, 'victim.internal');
  assert.match(answer, /^HTTP\/1\.1 200 OK/);
  assert.match(answer, new RegExp(`hello from allowed\\.test:${port}\\n$`));
  // Also with the Host naming the loopback victim directly.
  await exchange(
    `GET http://allowed.test:${port}/again HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
  );
  assert.deepEqual(hits, [`allowed.test:${port} /front`, `allowed.test:${port} /again`]);
});

/** CONNECT, then a TLS ClientHello naming `serverName`; what reached the server behind the tunnel. */
async function tunnelHello(serverName: string): Promise<{ bytes: Buffer; denial?: ProxyDenial }> {
  const received: Buffer[] = [];
  const server = net.createServer((c) => c.on('data', (d: Buffer) => received.push(d)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const target = `allowed.test:${(server.address() as net.AddressInfo).port}`;
  const before = denials.length;
  const socket = net.connect(socketPath);
  socket.on('error', () => {});
  socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  await new Promise<void>((resolve) => socket.once('data', () => resolve()));
  const secure = tls.connect({ socket, servername: serverName, rejectUnauthorized: false });
  secure.on('error', () => {});
  // Whichever comes first: the ClientHello reaches the server, or the proxy refuses it.
  await waitFor(
    () => received.length > 0 || denials.length > before,
    10_000,
    'the proxy to forward or refuse',
  );
  // A refusal is checked before anything is forwarded; a moment more shows that nothing followed it.
  if (denials.length > before) await new Promise((r) => setTimeout(r, 200));
  secure.destroy();
  server.close();
  return { bytes: Buffer.concat(received), ...(denials[before] ? { denial: denials[before] } : {}) };
}

test('domain fronting over CONNECT: a ClientHello naming another host never leaves the proxy', async () => {
  const fronted = await tunnelHello('victim.example');
  assert.equal(fronted.bytes.length, 0, 'the server behind the tunnel received nothing');
  assert.match(fronted.denial?.reason ?? '', /TLS server name is victim\.example \(domain fronting\)/);
  // The matching name (any case, trailing dot) goes through: the server sees the ClientHello.
  const honest = await tunnelHello('Allowed.TEST.');
  assert.equal(honest.denial, undefined);
  assert.equal(honest.bytes[0], 0x16, 'a TLS handshake record reached the server');
});

test('a registry URL on this machine, in any spelling, never enters the allow-list; the reason is reported', () => {
  const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-registry-local-')));
  const ws = path.join(home, 'ws');
  fs.mkdirSync(ws);
  const local = [
    'http://[::ffff:7f00:1]:8080/',
    'http://127.1:4873/',
    'http://0x7f.1/',
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://[::1]:4873/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://169.254.169.254/',
    'http://[fd00:ec2::254]/',
    'http://[64:ff9b::7f00:1]/',
    ...(ownV4 ? [`http://${ownV4}:4873/`] : []),
  ];
  // The user's own ~/.npmrc: a workspace's file reaches the allow-list only through `keel trust`.
  fs.writeFileSync(
    path.join(home, '.npmrc'),
    [
      ...local.map((url, i) => `@s${i}:registry=${url}`),
      '@corp:registry=https://npm.corp.example/',
      '@lan:registry=http://10.0.0.5:8081/',
    ].join('\n'),
  );
  const refused: string[] = [];
  try {
    const domains = configuredRegistryDomains({
      home,
      roots: [ws],
      env: { npm_config_registry: 'http://[::ffff:127.0.0.1]:9/' },
      onRefused: (host, reason) => refused.push(`${host}: ${reason}`),
    });
    assert.deepEqual(domains, ['10.0.0.5', 'npm.corp.example'], 'a private-network registry stays allowed');
    assert.ok(refused.length >= local.length, refused.join('\n'));
    assert.ok(refused.some((r) => /^::ffff:7f00:1: .*an address of this machine \(127\.0\.0\.1/.test(r)));
    assert.ok(refused.some((r) => /^::ffff:a9fe:a9fe: .*cloud metadata endpoint/.test(r)));
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});
