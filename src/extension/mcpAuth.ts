import { createHash } from 'node:crypto';
import * as vscode from 'vscode';
import type { McpAuthorizationRequest, McpTokenStore } from '../agent/host.ts';
import type { McpManager, McpServerStatus } from '../agent/mcp/manager.ts';
import { type OAuthEntry, oauthKeyFor, parseOAuthEntry } from '../agent/mcp/oauthStore.ts';

// MCP sign-in in VS Code. What a remote server's sign-in produces (its OAuth client registration and
// tokens) is kept in VS Code's SecretStorage — the OS keychain behind it, never settings, never a file a
// sandboxed command could read; the CLI keeps its 0600 file. The browser step: a modal asks first, then
// `vscode.env.openExternal` opens the authorization page; the redirect comes back to the core's
// loopback listener on 127.0.0.1 (which only accepts the `state` it sent).

const SECRET_PREFIX = 'keel.mcp.oauth.';

export const secretKeyFor = (url: string): string => `${SECRET_PREFIX}${oauthKeyFor(url)}`;

/**
 * The token-store port on SecretStorage. The SDK reads tokens synchronously-ish between awaits, so the
 * entry is loaded once and kept in memory; every change is written through, in order.
 */
export async function openSecretTokenStore(
  secrets: vscode.SecretStorage,
  server: string,
  url: string,
): Promise<McpTokenStore> {
  const key = secretKeyFor(url);
  let entry: OAuthEntry | undefined = parseOAuthEntry(await secrets.get(key), url);
  let writes: Promise<void> = Promise.resolve();
  const persist = () => {
    const value = entry;
    writes = writes
      .then(() => (value ? secrets.store(key, JSON.stringify(value)) : secrets.delete(key)))
      .then(
        () => undefined,
        () => undefined,
      );
  };
  return {
    file: `VS Code secret storage (${key})`,
    read: () => entry,
    update(change) {
      entry = change(entry ?? { url, server });
      persist();
    },
    clear() {
      entry = undefined;
      persist();
    },
  };
}

/** The consent modal, then the browser. False = the user said no (the connection fails saying so). */
export async function authorizeInBrowser(
  request: McpAuthorizationRequest,
  signal?: AbortSignal,
): Promise<boolean> {
  if (signal?.aborted) return false;
  const SIGN_IN = 'Sign in';
  let site = request.authorizationUrl;
  try {
    site = new URL(request.authorizationUrl).origin;
  } catch {
    // shown as given
  }
  const choice = await vscode.window.showInformationMessage(
    `Keel: sign in to the MCP server "${request.server}"?`,
    {
      modal: true,
      detail: `${request.url} needs you to sign in. Keel opens ${site} in your browser; the sign-in comes back to Keel on this machine (127.0.0.1). The tokens are kept in VS Code's secret storage.`,
    },
    SIGN_IN,
  );
  if (choice !== SIGN_IN || signal?.aborted) return false;
  return vscode.env.openExternal(vscode.Uri.parse(request.authorizationUrl, true));
}

export interface McpAuthStatus {
  /** Only HTTP servers sign in. */
  readonly remote: boolean;
  readonly signedIn: boolean;
  /** sha256 of the stored access token (tests compare it; the token itself never leaves here). */
  readonly tokenSha256?: string;
  /** What the UI says: signed in / needs sign-in / sign-in failed: why. */
  readonly label?: string;
}

function urlOf(manager: McpManager, server: string): string | undefined {
  const t = manager.servers.find((s) => s.name === server)?.transport;
  return t && t.type !== 'stdio' ? t.url : undefined;
}

export async function mcpAuthStatus(
  secrets: vscode.SecretStorage,
  manager: McpManager,
  server: string,
): Promise<McpAuthStatus> {
  const url = urlOf(manager, server);
  if (!url) return { remote: false, signedIn: false };
  const entry = parseOAuthEntry(await secrets.get(secretKeyFor(url)), url);
  const token = entry?.tokens?.access_token;
  const status = manager.status().find((s) => s.name === server);
  return {
    remote: true,
    signedIn: token !== undefined,
    ...(token ? { tokenSha256: createHash('sha256').update(token).digest('hex') } : {}),
    label: authLabel(token !== undefined, status),
  };
}

export function authLabel(signedIn: boolean, status: McpServerStatus | undefined): string {
  const reason = status?.state === 'failed' ? (status.reason ?? '') : '';
  if (/sign in|sign-in|authori[sz]|oauth|401|unauthori[sz]ed/i.test(reason))
    return /needs you to sign in/.test(reason)
      ? 'needs sign-in'
      : `sign-in failed: ${reason.split('\n')[0]?.slice(0, 120)}`;
  return signedIn ? 'signed in' : 'not signed in';
}

/** Sign out: the stored registration and tokens are deleted and the server stopped. */
export async function signOut(
  secrets: vscode.SecretStorage,
  manager: McpManager,
  server: string,
): Promise<boolean> {
  const url = urlOf(manager, server);
  if (!url) return false;
  await manager.stop(server);
  await secrets.delete(secretKeyFor(url));
  return true;
}

/** Sign in: (re)connect; a server that answers 401 starts the browser step. */
export async function signIn(manager: McpManager, server: string): Promise<void> {
  await manager.restart(server);
}
