import { createHash } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

// A local OAuth-protected MCP server on loopback, small enough to read: protected-resource metadata,
// authorization-server metadata, dynamic registration, an authorization endpoint that signs the
// "user" in at once (redirects back with a code), a token endpoint that checks PKCE, and one MCP tool
// behind a bearer check. It records what happened so tests can assert the flow.

export interface OAuthTestServer {
  readonly url: string;
  readonly mcpUrl: string;
  readonly token: string;
  /** Requests seen, by kind. */
  readonly seen: { authorize: number; token: number; register: number; mcpUnauthorized: number };
  close(): Promise<void>;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => resolve(body));
  });
}

export async function startOAuthTestServer(): Promise<OAuthTestServer> {
  const token = `tok-${Math.random().toString(36).slice(2)}`;
  const seen = { authorize: 0, token: 0, register: 0, mcpUnauthorized: 0 };
  let challenge = '';
  let base = '';
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', base);
    if (url.pathname === '/.well-known/oauth-protected-resource/mcp') {
      return json(res, 200, { resource: `${base}/mcp`, authorization_servers: [base] });
    }
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      return json(res, 200, {
        issuer: base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        registration_endpoint: `${base}/register`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
      });
    }
    if (url.pathname === '/register' && req.method === 'POST') {
      seen.register += 1;
      const body = JSON.parse(await readBody(req)) as { redirect_uris?: string[] };
      return json(res, 201, { client_id: 'keel-test-client', redirect_uris: body.redirect_uris ?? [] });
    }
    if (url.pathname === '/authorize') {
      seen.authorize += 1;
      challenge = url.searchParams.get('code_challenge') ?? '';
      const back = new URL(url.searchParams.get('redirect_uri') ?? '');
      back.searchParams.set('code', 'the-code');
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      seen.token += 1;
      const form = new URLSearchParams(await readBody(req));
      const verifier = form.get('code_verifier') ?? '';
      const ok =
        form.get('grant_type') === 'refresh_token' ||
        createHash('sha256').update(verifier).digest('base64url') === challenge;
      if (!ok) return json(res, 400, { error: 'invalid_grant' });
      return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
    }
    if (url.pathname === '/mcp') {
      if (req.headers.authorization !== `Bearer ${token}`) {
        seen.mcpUnauthorized += 1;
        res.writeHead(401, {
          'www-authenticate': `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
        });
        return res.end();
      }
      const mcp = new McpServer({ name: 'oauth-test', version: '1.0.0' });
      mcp.registerTool(
        'whoami',
        { description: 'Who the token belongs to', annotations: { readOnlyHint: true } },
        async () => ({
          content: [{ type: 'text', text: 'signed-in-as-tester' }],
        }),
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await mcp.connect(transport);
      const body = req.method === 'POST' ? JSON.parse(await readBody(req)) : undefined;
      await transport.handleRequest(req, res, body);
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    mcpUrl: `${base}/mcp`,
    token,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
