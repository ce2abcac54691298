import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { keelHome } from '../trust/paths.ts';
import { PROVIDERS, type Provider, providerFromEnv } from './anthropicFamily.ts';

// Auth profiles (seed 004): the credentials Keel may use, tried in order. The environment's
// (ANTHROPIC_API_KEY as ever, or Claude Code's Bedrock/Vertex variables) first, then
// `<keelHome>/auth.json`. Only user-level sources: a workspace cannot add a profile or an address
// (no file in the repository is read here), and auth.json is refused when others can read it.
// No secret ever leaves this file in a message: errors name fields and positions, never values.

const ProfileSchema = z.strictObject({
  name: z.string().trim().min(1).max(64),
  provider: z.enum(PROVIDERS).default('anthropic'),
  apiKey: z.string().min(1).optional(),
  authToken: z.string().min(1).optional(),
  baseUrl: z.url({ protocol: /^https?$/ }).optional(),
  region: z.string().min(1).optional(),
  projectId: z.string().min(1).optional(),
});
const AuthFileSchema = z.strictObject({ profiles: z.array(ProfileSchema).max(32) });

export interface AuthProfile {
  readonly name: string;
  readonly provider: Provider;
  /** Where it came from: shown by `keel auth`, named in switch notices. */
  readonly source: 'env' | 'auth.json' | 'host';
  readonly apiKey?: string;
  readonly authToken?: string;
  readonly baseUrl?: string;
  readonly region?: string;
  readonly projectId?: string;
  /** A gateway that signs requests itself (CLAUDE_CODE_SKIP_BEDROCK_AUTH / _VERTEX_AUTH). */
  readonly skipAuth?: boolean;
  /** AWS keys from the environment (SigV4); otherwise the SDK's credential chain. */
  readonly awsAccessKey?: string;
  readonly awsSecretKey?: string;
  readonly awsSessionToken?: string;
}

/** auth.json exists but cannot be used: the run stops with this message (no key in it). */
export class AuthFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthFileError';
  }
}

export function authFilePath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(keelHome(env), 'auth.json');
}

/** The profiles in auth.json, in order; none when the file does not exist. */
export function readAuthFile(file: string): AuthProfile[] {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new AuthFileError(`Cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}.`);
  }
  if (!stat.isFile()) throw new AuthFileError(`${file} is not a regular file.`);
  // Keys others can read are keys others have: refuse rather than use them (as ssh does).
  if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0) {
    const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
    throw new AuthFileError(
      `${file} is readable by other users (mode ${mode}); Keel does not use keys others can read. Run: chmod 600 ${file}`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    // JSON.parse quotes the text around the error, which may be a key: say where, not what.
    const at = /position (\d+)/.exec(String((e as Error).message))?.[1];
    throw new AuthFileError(`${file} is not valid JSON${at ? ` (near character ${at})` : ''}.`);
  }
  const parsed = AuthFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'the top level';
    throw new AuthFileError(
      `${file} is not a valid auth file: ${where}: ${issue?.message ?? 'bad shape'}. Expected {"profiles":[{"name","provider":"anthropic"|"bedrock"|"vertex","apiKey"?,"authToken"?,"baseUrl"?,"region"?,"projectId"?}]}.`,
    );
  }
  const names = new Set<string>();
  for (const p of parsed.data.profiles) {
    if (names.has(p.name)) throw new AuthFileError(`${file}: two profiles are named '${p.name}'.`);
    names.add(p.name);
  }
  return parsed.data.profiles.map((p) => ({ ...p, source: 'auth.json' as const }));
}

const on = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim());
const set = (v: string | undefined) => (v?.trim() ? v.trim() : undefined);

function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** The profile the environment describes for `provider`, if it describes one. */
export function envProfile(provider: Provider, env: NodeJS.ProcessEnv): AuthProfile | undefined {
  if (provider === 'anthropic') {
    const apiKey = set(env.ANTHROPIC_API_KEY);
    // With both set, the API key is the credential (the SDK takes one): a stray ANTHROPIC_AUTH_TOKEN
    // left in a shell must not make every request fail.
    const authToken = apiKey ? undefined : set(env.ANTHROPIC_AUTH_TOKEN);
    const baseUrl = set(env.ANTHROPIC_BASE_URL);
    if (!apiKey && !authToken && !baseUrl) return undefined;
    return compact({ name: 'env', provider, source: 'env' as const, apiKey, authToken, baseUrl });
  }
  if (provider === 'bedrock') {
    return compact({
      name: 'env-bedrock',
      provider,
      source: 'env' as const,
      apiKey: set(env.AWS_BEARER_TOKEN_BEDROCK),
      region: set(env.AWS_REGION) ?? set(env.AWS_DEFAULT_REGION),
      baseUrl: set(env.ANTHROPIC_BEDROCK_BASE_URL),
      skipAuth: on(env.CLAUDE_CODE_SKIP_BEDROCK_AUTH) || undefined,
      awsAccessKey: set(env.AWS_ACCESS_KEY_ID),
      awsSecretKey: set(env.AWS_SECRET_ACCESS_KEY),
      awsSessionToken: set(env.AWS_SESSION_TOKEN),
    });
  }
  return compact({
    name: 'env-vertex',
    provider,
    source: 'env' as const,
    region: set(env.CLOUD_ML_REGION),
    projectId: set(env.ANTHROPIC_VERTEX_PROJECT_ID),
    baseUrl: set(env.ANTHROPIC_VERTEX_BASE_URL),
    skipAuth: on(env.CLAUDE_CODE_SKIP_VERTEX_AUTH) || undefined,
  });
}

/**
 * The profiles a run may use, in order. With a provider (a `bedrock:` model, CLAUDE_CODE_USE_*), only
 * that provider's: the environment's when Claude Code's switch is on or auth.json has none of them,
 * then auth.json's. Without: the environment's Anthropic key, then every auth.json profile (a later
 * one may be another provider: cross-provider failover). Never empty: with nothing configured the
 * one bare profile makes the SDK say that no key is set.
 */
export function resolveProfiles(
  provider: Provider | undefined,
  env: NodeJS.ProcessEnv = process.env,
): AuthProfile[] {
  const file = readAuthFile(authFilePath(env));
  const bare: AuthProfile = { name: 'default', provider: provider ?? 'anthropic', source: 'env' };
  if (!provider) {
    const fromEnv = envProfile('anthropic', env);
    const all = [...(fromEnv ? [fromEnv] : []), ...file];
    return all.length > 0 ? all : [bare];
  }
  const mine = file.filter((p) => p.provider === provider);
  const fromEnv = envProfile(provider, env);
  const useEnv =
    fromEnv && (providerFromEnv(env) === provider || mine.length === 0 || provider === 'anthropic');
  const all = [...(useEnv ? [fromEnv] : []), ...mine];
  return all.length > 0 ? all : [bare];
}

/** `sk-ant-…wxyz`: enough to tell keys apart, never enough to use one. */
export function maskSecret(secret: string | undefined): string {
  if (!secret) return '-';
  if (secret.length < 16) return '****';
  return `${secret.slice(0, 6)}…${secret.slice(-4)}`;
}

/** One line per profile for `keel auth` / `keel doctor`: name, provider, source, masked key. */
export function describeProfile(p: AuthProfile): string {
  const secret = p.apiKey ?? p.authToken ?? p.awsAccessKey;
  const where = p.baseUrl ? ` at ${p.baseUrl}` : p.region ? ` in ${p.region}` : '';
  const extra = p.skipAuth ? ' (gateway: no auth)' : '';
  return `${p.name}  ${p.provider}${where}  from ${p.source}  key ${maskSecret(secret)}${extra}`;
}
