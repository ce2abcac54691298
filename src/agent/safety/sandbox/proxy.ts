import * as dns from 'node:dns/promises';
import * as http from 'node:http';
import * as net from 'node:net';
import { type ClassifiedAddress, classifyAddress, describeRefusal } from './addressClass.ts';
import type { DomainDecision } from './domains.ts';
import { holdUntilHello } from './tlsHello.ts';

// Keel's filtering HTTP proxy, in process, listening on a Unix socket that a bridge inside the
// sandbox's network namespace forwards 127.0.0.1:PORT to (netns.ts). Sandboxed commands have no
// route out; HTTP_PROXY/HTTPS_PROXY point here. HTTPS goes through CONNECT (the proxy sees the host
// name, never the content); plain HTTP requests with an absolute URL are forwarded, with the Host
// header set to the authority that was checked (RFC 9112 §3.2.2: a proxy ignores the client's Host
// for an absolute URL), so a request cannot name an allowed host and be served as another.
// A refused domain gets `403 Forbidden` with the reason in the body and an `X-Keel-Sandbox: denied`
// header. An allowed name is resolved once, every address it resolves to is classified
// (addressClass.ts), and the proxy connects to the vetted address itself — never a second lookup. An
// address of this machine (loopback, unspecified, its interfaces' own addresses), link-local space
// where cloud metadata answers, multicast and broadcast are refused whatever the allow-list says, in
// any spelling (`[::ffff:7f00:1]`, `0x7f.1`…): a domain that resolves there (or `localhost` itself)
// must not become a way around the sandbox's "no loopback" rule. An IP literal that is refused is
// refused before the allow-list is consulted, so nobody is asked about it.

export interface ProxyDenial {
  readonly host: string;
  readonly port: number;
  readonly reason: string;
  readonly at: number;
}

export interface DomainProxyOptions {
  readonly socketPath: string;
  decide(host: string, port: number, method: string): Promise<DomainDecision>;
  /** Where a host name really goes (tests map reserved names such as `*.test` to loopback). */
  readonly resolve?: (host: string) => string;
  readonly onDenied?: (denial: ProxyDenial) => void;
}

export interface DomainProxy {
  close(): void;
}

/** Why the proxy never connects to this IP literal; undefined for a name or an address it may reach. */
export function refusedLiteral(host: string): string | undefined {
  const literal = classifyAddress(host);
  return literal?.refused ? describeRefusal(host, literal) : undefined;
}

type Target = { readonly address: string } | { readonly refused: string } | { readonly failed: string };

function forbidden(host: string, reason: string): string {
  const body = `Keel sandbox: network access to ${host} was refused: ${reason}.\nAllowed domains: keel.sandbox.allowedDomains (CLI: KEEL_ALLOWED_DOMAINS).\n`;
  return `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nX-Keel-Sandbox: denied\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function splitHostPort(authority: string, fallbackPort: number): { host: string; port: number } | undefined {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(authority.trim());
  if (!m?.[1]) return undefined;
  const port = m[2] ? Number(m[2]) : fallbackPort;
  if (!(port > 0 && port < 65536)) return undefined;
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}

const HOP_HEADERS = new Set([
  'proxy-authorization',
  'proxy-connection',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

export function startDomainProxy(options: DomainProxyOptions): DomainProxy {
  const resolve = options.resolve ?? ((host: string) => host);
  const sockets = new Set<net.Socket>();
  const deny = (host: string, port: number, reason: string) =>
    options.onDenied?.({ host, port, reason, at: Date.now() });
  // `resolve` is the tests' map of reserved names onto their local servers; a name it maps is taken
  // as meant. An IP literal is classified as written; a name goes through the system resolver once,
  // and every address it returns must pass (a name that also resolves to this machine is refused
  // rather than trusted to be tried in a lucky order). The canonical vetted address is what we
  // connect to: with an IP literal as host, node:net does no lookup of its own.
  const locate = async (host: string): Promise<Target> => {
    const mapped = resolve(host);
    if (mapped !== host) {
      try {
        return { address: (await dns.lookup(mapped)).address };
      } catch (error) {
        return { failed: (error as Error).message };
      }
    }
    let addresses: (ClassifiedAddress | undefined)[];
    const literal = classifyAddress(host);
    if (literal) addresses = [literal];
    else {
      try {
        addresses = (await dns.lookup(host, { all: true })).map(({ address }) => classifyAddress(address));
      } catch (error) {
        return { failed: (error as Error).message };
      }
    }
    const vetted: ClassifiedAddress[] = [];
    for (const address of addresses) {
      if (!address) return { failed: 'the resolver returned something that is not an IP address' };
      if (address.refused) return { refused: describeRefusal(host, address) };
      vetted.push(address);
    }
    const first = vetted[0];
    return first ? { address: first.address } : { failed: 'the name has no address' };
  };

  const server = http.createServer((req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res
        .writeHead(400, { 'Content-Type': 'text/plain' })
        .end('Keel proxy: an absolute http:// URL is required.\n');
      return;
    }
    if (url.protocol !== 'http:') {
      res
        .writeHead(400, { 'Content-Type': 'text/plain' })
        .end('Keel proxy: only http:// URLs (HTTPS uses CONNECT).\n');
      return;
    }
    const port = url.port ? Number(url.port) : 80;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const local = refusedLiteral(host);
    if (local) {
      deny(host, port, local);
      req.socket.end(forbidden(host, local));
      return;
    }
    void options.decide(host, port, req.method ?? 'GET').then(
      async (decision) => {
        if (!decision.allowed) {
          deny(host, port, decision.reason);
          req.socket.end(forbidden(host, decision.reason));
          return;
        }
        const target = await locate(host);
        if ('refused' in target) {
          deny(host, port, target.refused);
          req.socket.end(forbidden(host, target.refused));
          return;
        }
        if ('failed' in target) {
          res.writeHead(502, { 'Content-Type': 'text/plain' }).end(`Keel proxy: ${host}: ${target.failed}\n`);
          return;
        }
        const headers: http.OutgoingHttpHeaders = {};
        for (const [key, value] of Object.entries(req.headers))
          if (!HOP_HEADERS.has(key) && value !== undefined) headers[key] = value;
        // The authority that was decided on, never the client's own Host (domain fronting).
        headers.host = url.host;
        const upstream = http.request(
          { host: target.address, port, method: req.method, path: `${url.pathname}${url.search}`, headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        upstream.on('error', (error) => {
          if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'text/plain' });
          res.end(`Keel proxy: ${host}:${port}: ${error.message}\n`);
        });
        req.pipe(upstream);
      },
      () => req.socket.destroy(),
    );
  });

  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const target = splitHostPort(req.url ?? '', 443);
    if (!target) {
      client.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    client.on('error', () => {});
    const local = refusedLiteral(target.host);
    if (local) {
      deny(target.host, target.port, local);
      client.end(forbidden(target.host, local));
      return;
    }
    void options.decide(target.host, target.port, 'CONNECT').then(
      async (decision) => {
        if (!decision.allowed) {
          deny(target.host, target.port, decision.reason);
          client.end(forbidden(target.host, decision.reason));
          return;
        }
        const located = await locate(target.host);
        if ('refused' in located) {
          deny(target.host, target.port, located.refused);
          client.end(forbidden(target.host, located.refused));
          return;
        }
        if ('failed' in located) {
          client.end(
            `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nKeel proxy: ${target.host}: ${located.failed}\n`,
          );
          return;
        }
        const upstream = net.connect(target.port, located.address, () => {
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          upstream.pipe(client);
          holdUntilHello(client, head, target.host, {
            pass(first) {
              if (first.length > 0) upstream.write(first);
              client.pipe(upstream);
            },
            // Past the 200 the client speaks TLS: no 403 can reach it, only the end of the tunnel.
            refuse(reason) {
              deny(target.host, target.port, reason);
              upstream.destroy();
              client.destroy();
            },
          });
        });
        sockets.add(upstream);
        upstream.on('close', () => sockets.delete(upstream));
        upstream.on('error', (error) => {
          if (client.writable && !client.destroyed)
            client.end(
              `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nKeel proxy: ${target.host}:${target.port}: ${error.message}\n`,
            );
        });
        client.on('close', () => upstream.destroy());
      },
      () => client.destroy(),
    );
  });
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  server.listen(options.socketPath);
  // The proxy must never keep Keel alive on its own.
  server.unref();
  return {
    close() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}
