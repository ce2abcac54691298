import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { OAuthStore } from './oauthStore.ts';
import type { McpAuthorizationRequest, McpElicitationAnswer, McpElicitationRequest } from '../host.ts';

// What Keel's MCP client offers the servers it connects to: roots (the workspace folders) and
// form-mode elicitation (a server asks the user for input). Sampling is not declared: a server must not
// be able to spend the user's model budget or steer the model without a per-server approval, which
// Keel does not have yet. URL-mode elicitation is not declared either (it would open a browser on a
// server's word).

export interface McpClientHooks {
  readonly server: string;
  /** The workspace folders, as `file://` URIs. */
  readonly roots: readonly { readonly uri: string; readonly name: string }[];
  /** The host's elicitation prompt; absent = every request is declined (spec action `decline`). */
  readonly elicit?: (request: McpElicitationRequest, signal?: AbortSignal) => Promise<McpElicitationAnswer>;
  /** The host's consent to open an OAuth authorization URL; absent = no human to sign in. */
  readonly authorize?: (request: McpAuthorizationRequest, signal?: AbortSignal) => Promise<boolean>;
  /** The host's token store (VS Code: SecretStorage); absent = the 0600 file under `<keelHome>`. */
  readonly tokenStore?: (server: string, url: string) => Promise<OAuthStore>;
  /** Where `<keelHome>` is (tests). */
  readonly env?: NodeJS.ProcessEnv;
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

export const CLIENT_CAPABILITIES = {
  roots: {},
  // applyDefaults: the SDK fills an accepted answer's omitted fields with the schema's defaults.
  elicitation: { form: { applyDefaults: true } },
};

export function installClientHandlers(client: Client, hooks: McpClientHooks | undefined): void {
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: (hooks?.roots ?? []).map((r) => ({ uri: r.uri, name: r.name })),
  }));
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const params = request.params;
    // Only form mode is declared; the SDK refuses URL mode before it gets here, this is the backstop.
    if (params.mode === 'url' || !('requestedSchema' in params)) return { action: 'decline' as const };
    if (!hooks?.elicit) {
      hooks?.log?.('info', `MCP server ${hooks.server} asked for input; declined (no one to ask)`);
      return { action: 'decline' as const };
    }
    // An answer never approves anything in Keel: it is data for the server, nothing more.
    const answer = await hooks.elicit(
      {
        server: hooks.server,
        message: params.message,
        requestedSchema: params.requestedSchema as Record<string, unknown>,
      },
      extra.signal,
    );
    return answer.action === 'accept' ? { action: 'accept' as const, content: answer.content } : answer;
  });
}
