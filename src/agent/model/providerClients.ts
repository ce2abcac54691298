import type Anthropic from '@anthropic-ai/sdk';
import type { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
import { ModelError } from './errors.ts';
import type { AuthProfile } from './profiles.ts';
import { loadSdk } from './sdk.ts';

// One SDK client per auth profile: Anthropic's own, or the Bedrock / Vertex packages (imported on
// first use only: neither the CLI's start nor the extension bundle's load pays for them). All three
// speak the Messages API to our code; the platform packages rewrite the path and body and sign.

/** What the model client uses of an SDK client (the platform clients have the same `messages`). */
export type MessagesClient = Pick<Anthropic, 'messages' | 'baseURL'>;

const TIMEOUT_MS = 10 * 60 * 1000;

function checkUrl(url: string | undefined, variable: string): void {
  // Another scheme would only fail as a connection error, retried for a minute: say so at once.
  if (url && /^[a-z][a-z0-9+.-]*:/i.test(url) && !/^https?:/i.test(url))
    throw new ModelError(
      'invalid_request',
      `The model service address must be an http(s) URL, not ${url}: check ${variable}.`,
    );
}

type VertexAuthClient = NonNullable<ConstructorParameters<typeof AnthropicVertex>[0]>['authClient'];

/** A fixed OAuth access token (auth.json `authToken`), or no header at all for a gateway. */
function staticGoogleAuth(token: string | undefined, projectId: string | undefined): VertexAuthClient {
  const client = {
    projectId: projectId ?? null,
    async getRequestHeaders() {
      return new Headers(token ? { authorization: `Bearer ${token}` } : {});
    },
  };
  return client as unknown as VertexAuthClient;
}

export async function createSdkClient(
  profile: AuthProfile,
  env: NodeJS.ProcessEnv = process.env,
): Promise<MessagesClient> {
  const common = { maxRetries: 0, timeout: TIMEOUT_MS } as const;
  if (profile.provider === 'anthropic') {
    const Sdk = await loadSdk();
    const baseURL = profile.baseUrl ?? env.ANTHROPIC_BASE_URL ?? null;
    checkUrl(
      baseURL ?? undefined,
      profile.source === 'auth.json' ? 'baseUrl in auth.json' : 'ANTHROPIC_BASE_URL',
    );
    return new Sdk({
      ...common,
      apiKey: profile.apiKey ?? null,
      // `undefined` would let the SDK add ANTHROPIC_AUTH_TOKEN to another profile's requests.
      authToken: profile.authToken ?? (profile.source === 'host' ? undefined : null),
      baseURL,
    });
  }
  await loadSdk(); // the error classes classifyError tells apart
  if (profile.provider === 'bedrock') {
    const { AnthropicBedrock } = await import('./platformSdks.ts');
    const baseURL = profile.baseUrl ?? env.ANTHROPIC_BEDROCK_BASE_URL;
    checkUrl(baseURL, 'ANTHROPIC_BEDROCK_BASE_URL');
    const accessKey = profile.awsAccessKey ?? env.AWS_ACCESS_KEY_ID;
    const secretKey = profile.awsSecretKey ?? env.AWS_SECRET_ACCESS_KEY;
    const region = profile.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
    const base = {
      ...common,
      // The body's anthropic_version comes from this header: the value Bedrock documents.
      defaultHeaders: { 'anthropic-version': 'bedrock-2023-05-31' },
      ...(region ? { awsRegion: region } : {}),
      ...(baseURL ? { baseURL } : {}),
      // A Bedrock API key (bearer) when the profile has one; else SigV4 with the AWS credentials.
      apiKey: profile.apiKey ?? null,
      ...(profile.skipAuth ? { skipAuth: true } : {}),
    };
    const client =
      accessKey && secretKey
        ? new AnthropicBedrock({
            ...base,
            awsAccessKey: accessKey,
            awsSecretKey: secretKey,
            awsSessionToken: profile.awsSessionToken ?? env.AWS_SESSION_TOKEN ?? null,
          })
        : new AnthropicBedrock(base);
    return client as unknown as MessagesClient;
  }
  const { AnthropicVertex: Vertex } = await import('./platformSdks.ts');
  const baseURL = profile.baseUrl ?? env.ANTHROPIC_VERTEX_BASE_URL;
  checkUrl(baseURL, 'ANTHROPIC_VERTEX_BASE_URL');
  const region = profile.region ?? env.CLOUD_ML_REGION;
  if (!region)
    throw new ModelError(
      'invalid_request',
      `Vertex AI needs a region: set CLOUD_ML_REGION (e.g. us-east5 or global) or "region" in profile '${profile.name}'.`,
    );
  const projectId = profile.projectId ?? env.ANTHROPIC_VERTEX_PROJECT_ID;
  const useStatic = profile.authToken !== undefined || profile.skipAuth;
  const client = new Vertex({
    ...common,
    defaultHeaders: { 'anthropic-version': 'vertex-2023-10-16' },
    region,
    ...(projectId ? { projectId } : {}),
    ...(baseURL ? { baseURL } : {}),
    // Without a token: Google's Application Default Credentials, as the SDK does.
    ...(useStatic ? { authClient: staticGoogleAuth(profile.authToken, projectId) } : {}),
  });
  return client as unknown as MessagesClient;
}
