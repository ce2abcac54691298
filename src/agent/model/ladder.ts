import { createHash } from 'node:crypto';
import { ModelError } from './errors.ts';
import { EFFORTS, type Effort } from './models.ts';
import type { AuthProfile } from './profiles.ts';

// The failover ladder's first rungs (seed 004), below the model fallback chain: another auth profile
// when this one is refused or out of credit, a lower thinking level when thinking is what the request
// failed on. Each step is said to the user (StreamCallbacks.onSwitch).

/**
 * Out of credit or quota, as opposed to a rate limit (which waits and retries on the same profile).
 * What the services send:
 * - Anthropic: 400 invalid_request_error "Your credit balance is too low…", 400 "You have reached your
 *   specified API usage limits. You will regain access on…", 429 rate_limit_error "Extra usage is
 *   required…" / "Usage credits are required…", 402 billing_error;
 * - plain rate limits are 429 rate_limit_error "Rate limited", "This request would exceed your
 *   account's rate limit…", "…per-minute rate limit…": not quota;
 * - Bedrock 429 "Too many tokens per day" is a daily quota; Vertex 429 "Quota exceeded for …
 *   per_minute…" is a per-minute rate limit (waits).
 */
export function isQuotaExhausted(error: ModelError): boolean {
  const status = error.status;
  if (status === 402) return true;
  if (status !== 400 && status !== 429) return false;
  const text = error.message;
  if (/billing_error/i.test(text)) return true;
  if (/per[-_ ]?(minute|second)|\brate limit\b/i.test(text) && !/credit|billing/i.test(text)) return false;
  return /credit balance|usage credits|extra usage|purchase credits|api usage limits?|regain access|billing|insufficient[_ ]quota|quota (exceeded|exhausted)|per day|daily/i.test(
    text,
  );
}

/** A profile's own fault: another profile may well succeed. */
export function isProfileFailure(error: ModelError): 'auth' | 'quota' | undefined {
  if (error.kind === 'auth' && (error.status === 401 || error.status === 403)) return 'auth';
  return isQuotaExhausted(error) ? 'quota' : undefined;
}

/**
 * A 400 about the thinking parameters themselves (a budget out of range, a level or thinking the model
 * does not take), not about thinking blocks in the history (that is a transcript bug, never hidden).
 */
export function isThinkingRejection(error: ModelError): boolean {
  if (error.status !== 400 || error.kind !== 'invalid_request') return false;
  const text = error.message;
  if (/thinking blocks?|thinking` block|must start with a thinking/i.test(text)) return false;
  return /budget_tokens|output_config\.effort|\beffort\b|thinking\.type|thinking\.enabled|(thinking|adaptive)[^.]{0,40}not supported|(does not|doesn't) support (extended |adaptive )?thinking/i.test(
    text,
  );
}

/** One level down; below `low` thinking goes off (undefined). */
export function lowerEffort(effort: Effort): Effort | undefined {
  const i = EFFORTS.indexOf(effort);
  return i > 0 ? EFFORTS[i - 1] : undefined;
}

// A refused credential is refused for every session and sub-agent in this process: one shared table,
// keyed by the profile's identity (provider, address, a hash of its secret; never the secret).
interface Failure {
  readonly until: number;
  readonly reason: string;
  readonly kind: 'auth' | 'quota';
}
const failures = new Map<string, Failure>();

export function profileKey(p: AuthProfile): string {
  const secret = `${p.apiKey ?? ''}|${p.authToken ?? ''}|${p.awsAccessKey ?? ''}`;
  const digest = createHash('sha256').update(secret).digest('hex').slice(0, 16);
  return `${p.provider}|${p.baseUrl ?? ''}|${p.region ?? ''}|${p.projectId ?? ''}|${digest}`;
}

export interface ProfileRing {
  /** The first profile not cooling down (an out-of-credit one again when nothing else is left). */
  current(): AuthProfile | undefined;
  fail(profile: AuthProfile, kind: 'auth' | 'quota', reason: string): void;
  /** Why each profile was set aside, for the final error. */
  summary(): string;
  readonly size: number;
}

export function createProfileRing(
  profiles: readonly AuthProfile[],
  now: () => number,
  quotaCooldownMs = 10 * 60_000,
): ProfileRing {
  const failure = (p: AuthProfile) => {
    const f = failures.get(profileKey(p));
    return f && f.until > now() ? f : undefined;
  };
  return {
    size: profiles.length,
    current() {
      return profiles.find((p) => !failure(p)) ?? profiles.find((p) => failure(p)?.kind === 'quota');
    },
    fail(profile, kind, reason) {
      const until = kind === 'auth' ? Number.POSITIVE_INFINITY : now() + quotaCooldownMs;
      failures.set(profileKey(profile), { until, reason, kind });
    },
    summary() {
      return profiles.map((p) => `'${p.name}' (${failure(p)?.reason ?? 'not tried'})`).join(', ');
    },
  };
}

/** The service's own words, short: for the switch notice and the final error. */
export function shortReason(error: ModelError): string {
  const text = error.message.replace(/\s*Check ANTHROPIC_API_KEY\.?$/, '');
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** Every profile was refused: one error that names each and why (never a key). */
export function allRefused(ring: ProfileRing): ModelError {
  return new ModelError(
    'auth',
    `Every auth profile was refused: ${ring.summary()}. Check ~/.keel/auth.json and ANTHROPIC_API_KEY (\`keel auth\` lists the profiles); the session is kept: \`keel run --resume\` continues it.`,
  );
}

const HINTS: Record<Exclude<AuthProfile['provider'], 'anthropic'>, string> = {
  bedrock:
    'Check the AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or a Bedrock API key) and AWS_REGION.',
  vertex:
    'Check the Google credentials (gcloud auth application-default login, or an authToken in auth.json) and ANTHROPIC_VERTEX_PROJECT_ID.',
};

/** An auth error names what to check for the provider that refused (not ANTHROPIC_API_KEY for AWS). */
export function providerHint(error: ModelError, profile: AuthProfile): ModelError {
  if (error.kind !== 'auth' || profile.provider === 'anthropic') return error;
  const message = error.message.replace(/Check ANTHROPIC_API_KEY\.$/, HINTS[profile.provider]);
  return new ModelError(error.kind, message, error.status, error.retryAfterMs, error.requestId);
}
