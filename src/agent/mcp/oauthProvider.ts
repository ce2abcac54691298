import { randomBytes } from 'node:crypto';
import { createPrivateKeyJwtAuth } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type {
  AddClientAuthentication,
  OAuthClientProvider,
  OAuthDiscoveryState,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { McpAuthorizationRequest } from '../host.ts';
import { type LoopbackListener, startLoopbackListener } from './oauthLoopback.ts';
import type { CrossAppAccessOptions } from './oauthCrossApp.ts';
import type { OAuthStore } from './oauthStore.ts';

// The OAuth 2.1 client of one HTTP MCP server, as the SDK's `OAuthClientProvider` wants it. The SDK
// does the protocol (protected-resource and authorization-server discovery with the 2025-03-26
// fallbacks, dynamic registration, PKCE, scopes from WWW-Authenticate, step-up, token endpoint auth
// methods, refresh); this class keeps state and does the one human step.
//
// Threats, and where each is handled:
// - A workspace config pointing at an attacker's server: it starts only after trust approval
//   (manager.ts / trust room), so an attacker cannot make Keel sign in anywhere unasked.
// - Tokens and client secrets: only in the 0600 file of oauthStore.ts under `<keelHome>`, which the
//   command sandbox cannot read; never in the workspace, settings, the session log or the model's
//   context (errors name the server and URL, never a token).
// - The authorization URL is opened only after the host's consent (`authorize`): no terminal or
//   `--approve never` means no browser, and the connection fails with the URL printed for the user.
// - The redirect comes back to a 127.0.0.1 listener that accepts only our `state`.

export class McpAuthRequiredError extends Error {
  constructor(
    readonly server: string,
    readonly authorizationUrl: string,
  ) {
    super(
      `MCP server "${server}" needs you to sign in, and Keel cannot ask here (no terminal, or --approve never). ` +
        `Run keel on a terminal to sign in, or open this URL yourself while keel waits: ${authorizationUrl}`,
    );
    this.name = 'McpAuthRequiredError';
  }
}

/**
 * Sign-ins started per server URL since its last authorized success, in this process. A server that
 * keeps asking for a scope it never accepts (or a token it always rejects) would otherwise open the
 * browser forever; after MAX_SIGN_INS_IN_A_ROW the connection fails instead.
 */
const signInsInARow = new Map<string, number>();
const MAX_SIGN_INS_IN_A_ROW = 3;

export interface KeelOAuthOptions {
  readonly server: string;
  readonly url: string;
  readonly store: OAuthStore;
  /** The host's consent + opening the URL (McpPort.authorize); false = no human here. */
  readonly authorize: (request: McpAuthorizationRequest) => Promise<boolean>;
  /** A client registered beforehand (config `oauth.clientId`/`clientSecret`): no dynamic registration. */
  readonly client?: { readonly clientId: string; readonly clientSecret?: string };
  readonly scope?: string;
  /** SEP-991: an https URL serving this client's metadata, used as client_id where the AS accepts it. */
  readonly clientIdMetadataUrl?: string;
  /** RFC 7523 client authentication (the PEM already read from the user's key file). */
  readonly privateKeyJwt?: { readonly privateKey: string; readonly alg: string };
  /** The authorization server the configured credentials belong to (sent to no other). */
  readonly issuer?: string;
  /** How long the browser step may take. */
  readonly signInTimeoutMs?: number;
}

export class KeelOAuthProvider implements OAuthClientProvider {
  private listener: LoopbackListener | undefined;
  private verifier = '';
  private currentState = '';
  private discovery: OAuthDiscoveryState | undefined;
  private pendingCode: Promise<string> | undefined;

  readonly addClientAuthentication?: AddClientAuthentication;

  constructor(private readonly options: KeelOAuthOptions) {
    const jwt = options.privateKeyJwt;
    if (jwt && options.client) this.addClientAuthentication = privateKeyJwtAuth(options.client.clientId, jwt);
  }

  get clientMetadataUrl(): string | undefined {
    return this.options.clientIdMetadataUrl;
  }

  /** Starts the loopback listener (before connecting: `redirectUrl` is read synchronously). */
  async prepare(): Promise<void> {
    this.listener ??= await startLoopbackListener(this.options.store.read()?.redirectPort);
  }

  async dispose(): Promise<void> {
    const l = this.listener;
    this.listener = undefined;
    await l?.close();
  }

  get redirectUrl(): string {
    if (!this.listener) throw new Error('KeelOAuthProvider.prepare() was not called');
    return this.listener.redirectUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Keel',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      // A CLI cannot keep a secret from its user, but a server may still issue one; 'none' is what a
      // public client asks for, the SDK uses what the server registered.
      token_endpoint_auth_method: this.addClientAuthentication
        ? 'private_key_jwt'
        : this.options.client?.clientSecret
          ? 'client_secret_basic'
          : 'none',
      ...(this.options.scope ? { scope: this.options.scope } : {}),
    };
  }

  state(): string {
    this.currentState = randomBytes(24).toString('base64url');
    return this.currentState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const pre = this.options.client;
    if (pre)
      return {
        client_id: pre.clientId,
        ...(pre.clientSecret ? { client_secret: pre.clientSecret } : {}),
        ...(this.options.issuer ? { issuer: this.options.issuer } : {}),
      };
    const entry = this.options.store.read();
    // A registration made for another loopback port has the wrong redirect URI: register again.
    if (entry?.client && entry.redirectPort !== this.listener?.port) return undefined;
    return entry?.client as OAuthClientInformationMixed | undefined;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    if (this.options.client) return;
    const port = this.listener?.port;
    this.options.store.update((e) => ({
      ...e,
      client: info as NonNullable<typeof e.client>,
      ...(port ? { redirectPort: port } : {}),
    }));
  }

  tokens(): OAuthTokens | undefined {
    return this.options.store.read()?.tokens as OAuthTokens | undefined;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.options.store.update((e) => ({ ...e, tokens, savedAt: Date.now() }));
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const listener = this.listener;
    if (!listener) throw new Error('KeelOAuthProvider.prepare() was not called');
    const count = (signInsInARow.get(this.options.url) ?? 0) + 1;
    if (count > MAX_SIGN_INS_IN_A_ROW) {
      throw new Error(
        `MCP server "${this.options.server}" asked for a sign-in ${count - 1} times in a row without accepting one; stopped to avoid a loop`,
      );
    }
    signInsInARow.set(this.options.url, count);
    const state = authorizationUrl.searchParams.get('state') ?? this.currentState;
    // Listen for the callback before the browser can possibly arrive there.
    const code = listener.waitForCode(state, { timeoutMs: this.options.signInTimeoutMs ?? 300_000 });
    code.catch(() => undefined);
    const request = {
      server: this.options.server,
      url: this.options.url,
      authorizationUrl: authorizationUrl.href,
    };
    if (!(await this.options.authorize(request))) {
      throw new McpAuthRequiredError(this.options.server, authorizationUrl.href);
    }
    this.pendingCode = code;
  }

  /** After the SDK said "redirect": the code the browser brought back (undefined = no sign-in started). */
  takePendingCode(): Promise<string> | undefined {
    const code = this.pendingCode;
    this.pendingCode = undefined;
    return code;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    if (!this.verifier) throw new Error('no PKCE code verifier: the sign-in did not start here');
    return this.verifier;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'verifier') this.verifier = '';
    if (scope === 'discovery' || scope === 'all') this.discovery = undefined;
    if (scope === 'all') {
      this.options.store.clear();
      return;
    }
    if (scope === 'client' || scope === 'tokens') {
      this.options.store.update((e) => {
        const { client, tokens, ...rest } = e;
        return scope === 'client'
          ? { ...rest, ...(tokens ? { tokens } : {}) }
          : { ...rest, ...(client ? { client } : {}) };
      });
    }
  }
}

/** The OAuth side of one HTTP connection: the SDK's provider plus the browser step around it. */
export interface McpAuth {
  readonly provider: OAuthClientProvider;
  prepare(): Promise<void>;
  /** The code of a sign-in the provider started (undefined: none started, nothing to wait for). */
  takePendingCode(): Promise<string> | undefined;
  /** An authorized request went through: the sign-in loop counter starts again. */
  succeeded(): void;
  dispose(): Promise<void>;
}

/** RFC 7523 §2.2: a client assertion signed with the user's key, iss = sub = the client id. */
function privateKeyJwtAuth(
  clientId: string,
  jwt: { privateKey: string; alg: string },
): AddClientAuthentication {
  return createPrivateKeyJwtAuth({
    issuer: clientId,
    subject: clientId,
    privateKey: jwt.privateKey,
    alg: jwt.alg,
  });
}

const noBrowser = (provider: OAuthClientProvider): McpAuth => ({
  provider,
  prepare: async () => undefined,
  takePendingCode: () => undefined,
  succeeded: () => undefined,
  dispose: async () => undefined,
});

export async function createMcpAuth(
  options: KeelOAuthOptions & {
    readonly grant?: 'authorization_code' | 'client_credentials';
    readonly crossAppAccess?: Omit<CrossAppAccessOptions, 'server' | 'url' | 'clientId' | 'clientSecret'>;
  },
): Promise<McpAuth> {
  const client = options.client;
  const jwt = options.privateKeyJwt;
  const issuer = options.issuer ? { expectedIssuer: options.issuer } : {};
  const scope = options.scope ? { scope: options.scope } : {};
  if (options.crossAppAccess) {
    if (!client) throw new Error(`MCP server "${options.server}": oauth.crossAppAccess needs oauth.clientId`);
    const { CrossAppAccessProvider } = await import('./oauthCrossApp.ts');
    return noBrowser(
      new CrossAppAccessProvider({
        ...options.crossAppAccess,
        server: options.server,
        url: options.url,
        clientId: client.clientId,
        ...(client.clientSecret ? { clientSecret: client.clientSecret } : {}),
        ...(jwt ? { addClientAuthentication: privateKeyJwtAuth(client.clientId, jwt) } : {}),
        ...(options.issuer ? { issuer: options.issuer } : {}),
        ...scope,
      }),
    );
  }
  if (options.grant === 'client_credentials') {
    // Machine-to-machine: no browser, no stored tokens (a new token each run is cheap and leaves
    // nothing behind). The secret comes from the config, resolved from ${env:…}/${input:…}; a key
    // from the user's key file.
    const ext = await import('@modelcontextprotocol/sdk/client/auth-extensions.js');
    if (client && jwt) {
      return noBrowser(
        new ext.PrivateKeyJwtProvider({
          clientId: client.clientId,
          privateKey: jwt.privateKey,
          algorithm: jwt.alg,
          clientName: 'Keel',
          ...scope,
          ...issuer,
        }),
      );
    }
    if (!client?.clientSecret) {
      throw new Error(
        `MCP server "${options.server}": oauth.grant client_credentials needs oauth.clientId and oauth.clientSecret or oauth.privateKeyJwt`,
      );
    }
    return noBrowser(
      new ext.ClientCredentialsProvider({
        clientId: client.clientId,
        clientSecret: client.clientSecret,
        clientName: 'Keel',
        ...scope,
        ...issuer,
      }),
    );
  }
  const provider = new KeelOAuthProvider(options);
  return {
    provider,
    prepare: () => provider.prepare(),
    takePendingCode: () => provider.takePendingCode(),
    succeeded: () => signInsInARow.delete(options.url),
    dispose: () => provider.dispose(),
  };
}
