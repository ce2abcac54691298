import assert from 'node:assert/strict';
import * as net from 'node:net';
import { test } from 'node:test';
import * as tls from 'node:tls';
import fc from 'fast-check';
import { readClientHello } from '../../src/agent/safety/sandbox/tlsHello.ts';

// The proxy reads a tunnel's first bytes to compare the TLS server name with the CONNECT target.
// Those bytes come from the sandboxed (hostile) side: the reader must never throw, never wait for
// more than one record, and must find the name in a real client's ClientHello.

/** The first bytes Node's TLS client sends when it asks for `servername`. */
async function realHello(servername?: string): Promise<Buffer> {
  const server = net.createServer();
  const first = new Promise<Buffer>((resolve) =>
    server.once('connection', (c) =>
      c.once('data', (d: Buffer) => {
        c.destroy();
        resolve(d);
      }),
    ),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = tls.connect({
    host: '127.0.0.1',
    port: (server.address() as net.AddressInfo).port,
    ...(servername !== undefined ? { servername } : {}),
    rejectUnauthorized: false,
  });
  client.on('error', () => {});
  const bytes = await first;
  client.destroy();
  server.close();
  return bytes;
}

test('a real ClientHello: the server name is read; a connection by address has none', async () => {
  assert.deepEqual(readClientHello(await realHello('registry.example.org')), {
    kind: 'hello',
    serverName: 'registry.example.org',
  });
  // Node sends no SNI for an IP address (and servername '' turns it off).
  assert.deepEqual(readClientHello(await realHello('')), { kind: 'hello' });
});

test('every prefix of a ClientHello waits for more; other protocols pass unread', async () => {
  const hello = await realHello('registry.example.org');
  for (let n = 1; n < hello.length; n++)
    assert.deepEqual(readClientHello(hello.subarray(0, n)), { kind: 'incomplete' }, `prefix ${n}`);
  assert.deepEqual(readClientHello(Buffer.from('GET / HTTP/1.1\r\n')), { kind: 'not-tls' });
  assert.deepEqual(readClientHello(Buffer.from('SSH-2.0-OpenSSH\r\n')), { kind: 'not-tls' });
});

test('a ClientHello split over two records is refused, not waited for', async () => {
  const hello = await realHello('registry.example.org');
  const body = hello.subarray(5);
  const record = (part: Buffer) =>
    Buffer.concat([Buffer.from([0x16, 0x03, 0x01, part.length >> 8, part.length & 0xff]), part]);
  const split = Buffer.concat([record(body.subarray(0, 40)), record(body.subarray(40))]);
  assert.equal(readClientHello(split).kind, 'unreadable');
});

test('property: arbitrary and corrupted bytes never throw', async () => {
  const hello = await realHello('registry.example.org');
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
      readClientHello(Buffer.from(bytes));
    }),
  );
  fc.assert(
    fc.property(fc.nat(hello.length - 1), fc.integer({ min: 0, max: 255 }), (at, value) => {
      const corrupted = Buffer.from(hello);
      corrupted[at] = value;
      const read = readClientHello(corrupted);
      assert.ok(['hello', 'unreadable', 'incomplete', 'not-tls'].includes(read.kind));
    }),
  );
});
