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
import { z } from 'zod';

// Cross-app access (SEP-990, "Enterprise-managed authorization"): the user is already signed in to
// their company's identity provider, which holds an ID token for Keel. Keel exchanges it at the IdP for
// an Identity Assertion JWT Authorization Grant (ID-JAG, RFC 8693 token exchange) naming the MCP
// server's authorization server as audience and the MCP server as resource, then presents that grant
// to the authorization server (RFC 7523 jwt-bearer) with its own client authentication. No browser.
//
// Threat: the ID token is the user's identity at every app of their company. It is sent only to the
// IdP token endpoint the user's configuration names (never to a URL discovered from the MCP server),
// and the audience of the grant is the authorization server the MCP server names; `oauth.issuer`
// pins that server when set. Nothing is stored: a new grant per run.

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';

const exchangeResponse = z.object({ access_token: z.string().min(1), issued_token_type: z.string() }).loose();
const errorResponse = z.object({ error: z.string(), error_description: z.string().optional() }).loose();

export interface CrossAppAccessOptions {
  readonly server: string;
  /** The MCP server URL (the resource when its metadata names none). */
  readonly url: string;
  readonly clientId: string;
  readonly clientSecret?: string;
  readonly addClientAuthentication?: AddClientAuthentication;
  readonly issuer?: string;
  readonly scope?: string;
  readonly idpTokenEndpoint: string;
  readonly idpClientId: string;
  readonly idpClientSecret?: string;
  readonly idToken: string;
  readonly fetch?: typeof fetch;
}

export class CrossAppAccessProvider implements OAuthClientProvider {
  private current: OAuthTokens | undefined;
  private discovery: OAuthDiscoveryState | undefined;
  readonly addClientAuthentication?: AddClientAuthentication;

  constructor(private readonly options: CrossAppAccessOptions) {
    if (options.addClientAuthentication) this.addClientAuthentication = options.addClientAuthentication;
  }

  get redirectUrl(): undefined {
    return undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Keel',
      redirect_uris: [],
      grant_types: [JWT_BEARER],
      token_endpoint_auth_method: this.options.addClientAuthentication
        ? 'private_key_jwt'
        : this.options.clientSecret
          ? 'client_secret_basic'
          : 'none',
      ...(this.options.scope ? { scope: this.options.scope } : {}),
    };
  }

  clientInformation(): OAuthClientInformationMixed {
    const o = this.options;
    return {
      client_id: o.clientId,
      ...(o.clientSecret ? { client_secret: o.clientSecret } : {}),
      ...(o.issuer ? { issuer: o.issuer } : {}),
    };
  }

  tokens(): OAuthTokens | undefined {
    return this.current;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.current = tokens;
  }

  redirectToAuthorization(): void {
    throw new Error(`MCP server "${this.options.server}": cross-app access does not open a browser`);
  }

  saveCodeVerifier(): void {}

  codeVerifier(): string {
    throw new Error('cross-app access has no PKCE verifier');
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'tokens') this.current = undefined;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }

  /** The token request to the authorization server: first the ID-JAG from the IdP. */
  async prepareTokenRequest(scope?: string): Promise<URLSearchParams> {
    const d = this.discovery;
    if (!d) throw new Error(`MCP server "${this.options.server}": no authorization server was discovered`);
    const audience = d.authorizationServerMetadata?.issuer ?? d.authorizationServerUrl;
    const resource = d.resourceMetadata?.resource ?? this.options.url;
    const assertion = await this.exchange(audience, resource, scope);
    const params = new URLSearchParams({ grant_type: JWT_BEARER, assertion });
    if (scope) params.set('scope', scope);
    return params;
  }

  private async exchange(audience: string, resource: string, scope: string | undefined): Promise<string> {
    const o = this.options;
    const body = new URLSearchParams({
      grant_type: TOKEN_EXCHANGE,
      requested_token_type: ID_JAG,
      subject_token: o.idToken,
      subject_token_type: ID_TOKEN,
      audience,
      resource,
    });
    if (scope) body.set('scope', scope);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (o.idpClientSecret) {
      const basic = `${encodeURIComponent(o.idpClientId)}:${encodeURIComponent(o.idpClientSecret)}`;
      headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
    } else body.set('client_id', o.idpClientId);
    const where = `the identity provider (${o.idpTokenEndpoint})`;
    let response: Response;
    try {
      response = await (o.fetch ?? fetch)(o.idpTokenEndpoint, { method: 'POST', headers, body });
    } catch (error) {
      throw new Error(`MCP server "${o.server}": cannot reach ${where}: ${(error as Error).message}`);
    }
    let json: unknown;
    try {
      json = await response.json();
    } catch {
      json = undefined;
    }
    if (!response.ok) {
      const e = errorResponse.safeParse(json);
      const why = e.success
        ? `${e.data.error}${e.data.error_description ? ` (${e.data.error_description})` : ''}`
        : `HTTP ${response.status}`;
      throw new Error(`MCP server "${o.server}": ${where} refused the token exchange: ${why}`);
    }
    const ok = exchangeResponse.safeParse(json);
    if (!ok.success || ok.data.issued_token_type !== ID_JAG)
      throw new Error(
        `MCP server "${o.server}": ${where} did not return an identity assertion grant (issued_token_type ${ok.success ? ok.data.issued_token_type : 'missing'})`,
      );
    return ok.data.access_token;
  }
}
