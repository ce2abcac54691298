import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

// The loopback redirect listener of an MCP sign-in (RFC 8252 §7.3): the browser comes back to
// http://127.0.0.1:<port>/callback with the authorization code. It listens on 127.0.0.1 only, accepts
// exactly one callback whose `state` matches the one Keel sent (anything else — a page on the web
// poking localhost, a stale tab — gets 400 and changes nothing), and closes after that.

export interface LoopbackListener {
  readonly port: number;
  readonly redirectUrl: string;
  /** Resolves with the code of the callback carrying `state`; rejects on an error redirect or timeout. */
  waitForCode(state: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<string>;
  close(): Promise<void>;
}

const PAGE = (text: string) =>
  `<!doctype html><meta charset="utf-8"><title>Keel</title><p style="font-family:sans-serif">${text}</p>`;

export async function startLoopbackListener(preferredPort?: number): Promise<LoopbackListener> {
  let pending: { state: string; resolve: (code: string) => void; reject: (error: Error) => void } | undefined;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const state = url.searchParams.get('state') ?? '';
    if (req.method !== 'GET' || url.pathname !== '/callback' || !pending || state !== pending.state) {
      res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' });
      res.end(PAGE('This sign-in link is not the one Keel is waiting for.'));
      return;
    }
    const waiting = pending;
    pending = undefined;
    const error = url.searchParams.get('error');
    const code = url.searchParams.get('code');
    res.writeHead(error || !code ? 400 : 200, { 'content-type': 'text/html; charset=utf-8' });
    if (error || !code) {
      res.end(PAGE('Sign-in failed. You can close this tab.'));
      const description = url.searchParams.get('error_description');
      waiting.reject(
        new Error(
          `the authorization server refused: ${error ?? 'no code'}${description ? ` (${description})` : ''}`,
        ),
      );
      return;
    }
    res.end(PAGE('Signed in. You can close this tab and return to Keel.'));
    waiting.resolve(code);
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  try {
    await listen(preferredPort ?? 0);
  } catch {
    // The port of an earlier registration is taken: any port (the client registers again).
    await listen(0);
  }
  server.unref();
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    redirectUrl: `http://127.0.0.1:${port}/callback`,
    waitForCode(state, { timeoutMs, signal }) {
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending = undefined;
          reject(new Error(`no sign-in came back within ${Math.round(timeoutMs / 1000)} s`));
        }, timeoutMs);
        const onAbort = () => {
          clearTimeout(timer);
          pending = undefined;
          reject(new Error('aborted'));
        };
        if (signal?.aborted) return onAbort();
        signal?.addEventListener('abort', onAbort, { once: true });
        const settle = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
        };
        pending = {
          state,
          resolve: (code) => {
            settle();
            resolve(code);
          },
          reject: (error) => {
            settle();
            reject(error);
          },
        };
      });
    },
    close() {
      return new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      });
    },
  };
}
