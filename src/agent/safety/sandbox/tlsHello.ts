// The server name (SNI) a TLS ClientHello asks for: the one thing the proxy can see of an HTTPS
// tunnel's content. A CONNECT to an allowed name whose ClientHello names another host is domain
// fronting (a CDN serves whichever site the encrypted request names), so the proxy compares the two.
// Encrypted Client Hello hides the inner name; only its outer (public) name is visible here. Plain
// HTTP inside a CONNECT tunnel (`curl --proxytunnel http://…`) is not read: its Host header could
// still name another site at the same vetted address. Plain HTTP through the proxy itself is rewritten
// (proxy.ts), which is how HTTP clients send it.

import type * as net from 'node:net';
import { normaliseHost } from './domains.ts';

export type ClientHello =
  /** Too few bytes yet: wait for more. */
  | { readonly kind: 'incomplete' }
  /** Not a TLS handshake at all (plain HTTP in a tunnel, a server-speaks-first protocol). */
  | { readonly kind: 'not-tls' }
  /** A ClientHello; `serverName` absent when it names none (a client connecting by IP address). */
  | { readonly kind: 'hello'; readonly serverName?: string }
  /** Looks like TLS but cannot be read, or spreads the ClientHello over several records. */
  | { readonly kind: 'unreadable'; readonly why: string };

const RECORD_HANDSHAKE = 0x16;
const HANDSHAKE_CLIENT_HELLO = 0x01;
const EXTENSION_SERVER_NAME = 0x0000;
const NAME_TYPE_HOST = 0x00;
/** The largest TLS plaintext record (2^14) plus slack for the record header. */
export const MAX_HELLO_BYTES = 16_384 + 5;

/** Reads `data` (the first bytes a client sent into a tunnel) as far as the ClientHello's SNI. */
export function readClientHello(data: Buffer): ClientHello {
  if (data.length === 0) return { kind: 'incomplete' };
  if (data[0] !== RECORD_HANDSHAKE) return { kind: 'not-tls' };
  if (data.length < 5) return { kind: 'incomplete' };
  if (data[1] !== 0x03) return { kind: 'not-tls' };
  const recordLength = data.readUInt16BE(3);
  if (recordLength + 5 > MAX_HELLO_BYTES) return { kind: 'unreadable', why: 'oversized TLS record' };
  if (data.length < 5 + recordLength) return { kind: 'incomplete' };
  const record = data.subarray(5, 5 + recordLength);
  if (record.length < 4 || record[0] !== HANDSHAKE_CLIENT_HELLO)
    return { kind: 'unreadable', why: 'the first TLS message is not a ClientHello' };
  const helloLength = record.readUIntBE(1, 3);
  // A ClientHello split over several records would hide its SNI from a one-record reader: refused
  // (browsers, curl, Node, Python and Go all send it in one record).
  if (4 + helloLength > record.length)
    return { kind: 'unreadable', why: 'the ClientHello is split over several TLS records' };
  const hello = record.subarray(4, 4 + helloLength);
  try {
    return { kind: 'hello', ...serverNameIn(hello) };
  } catch {
    return { kind: 'unreadable', why: 'a malformed ClientHello' };
  }
}

/** Walks version, random, session id, cipher suites and compression methods to the extensions. */
function serverNameIn(hello: Buffer): { serverName?: string } {
  let at = 2 + 32;
  at += 1 + byteAt(hello, at);
  at += 2 + hello.readUInt16BE(at);
  at += 1 + byteAt(hello, at);
  if (at === hello.length) return {};
  const end = at + 2 + hello.readUInt16BE(at);
  if (end > hello.length) throw new RangeError('extensions overrun');
  at += 2;
  while (at + 4 <= end) {
    const type = hello.readUInt16BE(at);
    const length = hello.readUInt16BE(at + 2);
    at += 4;
    if (at + length > end) throw new RangeError('extension overrun');
    if (type === EXTENSION_SERVER_NAME) {
      const list = hello.subarray(at, at + length);
      let p = 2;
      const listEnd = 2 + list.readUInt16BE(0);
      while (p + 3 <= listEnd && p + 3 <= list.length) {
        const nameType = byteAt(list, p);
        const nameLength = list.readUInt16BE(p + 1);
        p += 3;
        if (p + nameLength > list.length) throw new RangeError('server name overrun');
        if (nameType === NAME_TYPE_HOST) return { serverName: list.toString('latin1', p, p + nameLength) };
        p += nameLength;
      }
      return {};
    }
    at += length;
  }
  return {};
}

function byteAt(buffer: Buffer, at: number): number {
  const value = buffer[at];
  if (value === undefined) throw new RangeError('truncated');
  return value;
}

/**
 * Holds a tunnel's client-to-server direction until the client's first bytes are read: a TLS
 * ClientHello must name the host the CONNECT named, or none (domain fronting otherwise). Anything
 * that is not TLS passes unread; the server's direction flows meanwhile (server-speaks-first).
 */
export function holdUntilHello(
  client: net.Socket,
  head: Buffer,
  host: string,
  then: { pass(first: Buffer): void; refuse(reason: string): void },
): void {
  let buffered = head;
  const verdict = (): 'wait' | { refused?: string } => {
    const hello = readClientHello(buffered);
    if (hello.kind === 'incomplete')
      return buffered.length < MAX_HELLO_BYTES ? 'wait' : { refused: 'an endless TLS ClientHello' };
    if (hello.kind === 'unreadable')
      return {
        refused: `the tunnel to ${host} began with ${hello.why}; the proxy cannot check its server name`,
      };
    if (
      hello.kind === 'hello' &&
      hello.serverName !== undefined &&
      normaliseHost(hello.serverName) !== normaliseHost(host)
    )
      return {
        refused: `the tunnel was opened to ${host} but its TLS server name is ${hello.serverName} (domain fronting)`,
      };
    return {};
  };
  const settle = (v: { refused?: string }) => {
    if (v.refused) then.refuse(v.refused);
    else then.pass(buffered);
  };
  const first = verdict();
  if (first !== 'wait') {
    settle(first);
    return;
  }
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    const v = verdict();
    if (v === 'wait') return;
    // Paused before the listener goes, so no chunk is emitted to nobody; pipe() resumes.
    client.pause();
    client.off('data', onData);
    settle(v);
  };
  client.on('data', onData);
}
