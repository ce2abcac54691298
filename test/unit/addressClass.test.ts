import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type AddressClass, classifyAddress } from '../../src/agent/safety/sandbox/addressClass.ts';

// The one address classifier the sandbox's network proxy and allow-list loader ask. Every spelling a
// resolver or the kernel turns into the same address must get the same answer: an attacker picks
// the spelling, so a form the classifier does not know is a way around the "no loopback" rule.

// A machine with a public and a private interface address (tests must not depend on this host's).
const interfaceAddresses = () => ['127.0.0.1', '::1', '203.0.113.7', '2001:db8:7::7', 'fe80::7%eth0'];
const classOf = (text: string) => classifyAddress(text, { interfaceAddresses })?.class;

const TABLE: readonly (readonly [string, AddressClass, string?])[] = [
  // IPv4 loopback in every spelling inet_aton / WHATWG URL accept.
  ['127.0.0.1', 'loopback'],
  ['127.1', 'loopback', '127.0.0.1'],
  ['127.0.1', 'loopback', '127.0.0.1'],
  ['0x7f.1', 'loopback', '127.0.0.1'],
  ['0x7F000001', 'loopback', '127.0.0.1'],
  ['2130706433', 'loopback', '127.0.0.1'],
  ['0177.0.0.1', 'loopback', '127.0.0.1'],
  ['017700000001', 'loopback', '127.0.0.1'],
  ['127.255.255.254', 'loopback'],
  ['[127.0.0.1]', 'loopback', '127.0.0.1'],
  // IPv6 loopback and the IPv6 forms that carry 127.0.0.1.
  ['::1', 'loopback'],
  ['[::1]', 'loopback', '::1'],
  ['0:0:0:0:0:0:0:1', 'loopback', '::1'],
  ['::ffff:127.0.0.1', 'loopback', '::ffff:7f00:1'],
  ['::ffff:7f00:1', 'loopback'],
  ['[::FFFF:7F00:1]', 'loopback', '::ffff:7f00:1'],
  ['0:0:0:0:0:ffff:7f00:1', 'loopback', '::ffff:7f00:1'],
  ['::127.0.0.1', 'loopback', '::7f00:1'],
  ['::ffff:0:127.0.0.1', 'loopback', '::ffff:0:7f00:1'],
  ['64:ff9b::127.0.0.1', 'loopback', '64:ff9b::7f00:1'],
  ['64:ff9b:1::7f00:1', 'loopback'],
  ['2002:7f00:1::1', 'loopback'],
  ['2001:0:7f00:1::', 'loopback', '2001:0:7f00:1::'], // Teredo server 127.0.0.1
  ['::1%lo', 'loopback', '::1'],
  // Unspecified: Linux connects it to the host itself.
  ['0.0.0.0', 'unspecified'],
  ['0', 'unspecified', '0.0.0.0'],
  ['0.1.2.3', 'unspecified'],
  ['::', 'unspecified'],
  ['::ffff:0.0.0.0', 'unspecified', '::ffff:0:0'],
  // Link-local and metadata, also behind IPv6 forms.
  ['169.254.1.1', 'link-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local', 'fe80::1'],
  ['[fe80::1%25eth0]', 'link-local', 'fe80::1'],
  ['febf::1', 'link-local'],
  ['169.254.169.254', 'metadata'],
  ['0xa9fea9fe', 'metadata', '169.254.169.254'],
  ['::ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:169.254.169.254', 'metadata', '::ffff:a9fe:a9fe'],
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['fd00:ec2::254', 'metadata'],
  ['100.100.100.200', 'metadata'],
  // The host's own interface addresses, in any form.
  ['203.0.113.7', 'own-interface'],
  ['::ffff:203.0.113.7', 'own-interface', '::ffff:cb00:7107'],
  ['2001:db8:7:0:0:0:0:7', 'own-interface', '2001:db8:7::7'],
  ['fe80::7', 'link-local'],
  // Multicast, broadcast, reserved.
  ['224.0.0.1', 'multicast'],
  ['ff02::1', 'multicast'],
  ['::ffff:239.1.1.1', 'multicast', '::ffff:ef01:101'],
  ['255.255.255.255', 'broadcast'],
  ['240.0.0.1', 'reserved'],
  // Private networks stay reachable (company registries live there); public ones are the internet.
  ['10.0.0.5', 'private'],
  ['172.16.0.1', 'private'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'private'],
  ['fd12:3456::1', 'private'],
  ['::ffff:10.0.0.5', 'private', '::ffff:a00:5'],
  ['93.184.216.34', 'public'],
  ['1.2.3', 'public', '1.2.0.3'],
  ['2606:2800:220:1::1', 'public'],
  ['2002:5db8:d822::1', 'public'], // 6to4 of a public address
  ['::ffff:93.184.216.34', 'public', '::ffff:5db8:d822'],
];

test('every spelling of an address gets its class and canonical form', () => {
  for (const [text, expected, canonical] of TABLE) {
    const c = classifyAddress(text, { interfaceAddresses });
    assert.ok(c, `${text} is an IP literal`);
    assert.equal(c.class, expected, text);
    assert.equal(c.address, canonical ?? text, text);
    assert.equal(c.refused, !['private', 'public'].includes(expected), text);
  }
});

test('names are not literals: they are resolved, then each address is classified', () => {
  for (const name of ['localhost', 'example.com', 'deadbeef', 'cafe.example', '', 'fe80::1::2', '1.2.3.4.5'])
    assert.equal(classifyAddress(name, { interfaceAddresses }), undefined, name);
});

test("the host's own interfaces are read at decision time", () => {
  let list = ['192.0.2.10'];
  const options = { interfaceAddresses: () => list };
  assert.equal(classifyAddress('192.0.2.10', options)?.class, 'own-interface');
  list = ['192.0.2.11'];
  assert.equal(classifyAddress('192.0.2.10', options)?.class, 'public');
  assert.equal(classifyAddress('192.0.2.11', options)?.class, 'own-interface');
});

type V4 = readonly [number, number, number, number];
const octet = fc.integer({ min: 0, max: 255 });
const v4In = (first: number, second?: number) =>
  fc.tuple(octet, octet, octet).map(([b, c, d]): V4 => [first, second ?? b, c, d]);

const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);

test('property: any loopback, link-local or unspecified IPv4 is refused in every IPv6 form that carries it', () => {
  const local = fc.oneof(v4In(127), v4In(169, 254), v4In(0));
  const form = fc.constantFrom(
    ([a, b, c, d]: V4) => `${a}.${b}.${c}.${d}`,
    ([a, b, c, d]: V4) => `${(((a << 24) | (b << 16) | (c << 8) | d) >>> 0).toString()}`,
    ([a, b, c, d]: V4) => `0x${a.toString(16)}.${b}.${(c << 8) | d}`,
    ([a, b, c, d]: V4) => `::ffff:${a}.${b}.${c}.${d}`,
    ([a, b, c, d]: V4) => `[::ffff:${hex(a, b)}:${hex(c, d)}]`,
    ([a, b, c, d]: V4) => `0:0:0:0:0:FFFF:${hex(a, b)}:${hex(c, d)}`,
    ([a, b, c, d]: V4) => `::${a}.${b}.${c}.${d}`,
    ([a, b, c, d]: V4) => `::ffff:0:${hex(a, b)}:${hex(c, d)}`,
    ([a, b, c, d]: V4) => `64:ff9b::${a}.${b}.${c}.${d}`,
    ([a, b, c, d]: V4) => `64:ff9b:1:abcd::${hex(a, b)}:${hex(c, d)}`,
    ([a, b, c, d]: V4) => `2002:${hex(a, b)}:${hex(c, d)}::1`,
  );
  fc.assert(
    fc.property(local, form, (v4, spell) => {
      const text = spell(v4);
      const c = classifyAddress(text, { interfaceAddresses: () => [] });
      assert.ok(c?.refused, `${text} (${v4.join('.')}) must be refused, got ${c?.class}`);
      assert.ok(
        ['loopback', 'link-local', 'metadata', 'unspecified'].includes(c.class),
        `${text}: ${c.class}`,
      );
    }),
    { numRuns: 2000 },
  );
});

test('property: a public IPv4 address stays reachable in its mapped form (no blanket refusal)', () => {
  const publicV4 = fc
    .tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 254 }))
    .map(([a, b, d]) => [a, b, 1, d] as const);
  fc.assert(
    fc.property(publicV4, ([a, b, c, d]) => {
      assert.equal(classOf(`::ffff:${a}.${b}.${c}.${d}`), 'public');
      assert.equal(classOf(`${a}.${b}.${c}.${d}`), 'public');
    }),
  );
});
