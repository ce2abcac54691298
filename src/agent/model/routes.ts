import { type ModelRoute, parseModelRoute } from './anthropicFamily.ts';
import { ModelError } from './errors.ts';
import { createProfileRing, type ProfileRing } from './ladder.ts';
import { type AuthProfile, AuthFileError, resolveProfiles } from './profiles.ts';
import { createSdkClient, type MessagesClient } from './providerClients.ts';

export type { MessagesClient } from './providerClients.ts';

// Which credentials may answer a model name: `bedrock:…` only Bedrock profiles, a plain name any
// profile in order. One SDK client per profile, made on first use.

export interface Route {
  /** The model without its provider prefix. */
  readonly model: string;
  readonly ring: ProfileRing;
  sdkFor(profile: AuthProfile): Promise<MessagesClient>;
}

export interface RouteOptions {
  readonly apiKey?: string;
  readonly baseURL?: string;
  readonly profiles?: readonly AuthProfile[];
}

export function createRoutes(
  options: RouteOptions,
  now: () => number,
  env: NodeJS.ProcessEnv = process.env,
): { forModel(model: string): Route } {
  const clients = new Map<AuthProfile, Promise<MessagesClient>>();
  const rings = new Map<string, ProfileRing>();
  const sdkFor = (profile: AuthProfile) => {
    let client = clients.get(profile);
    if (!client) {
      client = createSdkClient(profile, env);
      // A client that could not be made (a bad address) is made again next time, not cached broken.
      client.catch(() => clients.delete(profile));
      clients.set(profile, client);
    }
    return client;
  };
  const profilesFor = (route: ModelRoute): AuthProfile[] => {
    if (options.apiKey !== undefined || options.baseURL !== undefined) {
      const apiKey = options.apiKey ?? env.ANTHROPIC_API_KEY;
      const baseUrl = options.baseURL ?? env.ANTHROPIC_BASE_URL;
      return [
        {
          name: 'default',
          provider: route.provider ?? 'anthropic',
          source: 'host',
          ...(apiKey ? { apiKey } : {}),
          ...(baseUrl ? { baseUrl } : {}),
        },
      ];
    }
    if (options.profiles) {
      const mine = options.profiles.filter((p) => !route.provider || p.provider === route.provider);
      if (mine.length === 0)
        throw new ModelError('auth', `No ${route.provider} profile is configured for ${route.model}.`);
      return mine;
    }
    try {
      return resolveProfiles(route.provider, env);
    } catch (e) {
      if (e instanceof AuthFileError) throw new ModelError('auth', e.message);
      throw e;
    }
  };
  return {
    forModel(name) {
      const route = parseModelRoute(name, env);
      const key = route.provider ?? '*';
      let ring = rings.get(key);
      if (!ring) {
        ring = createProfileRing(profilesFor(route), now);
        rings.set(key, ring);
      }
      return { model: route.model, ring, sdkFor };
    },
  };
}
