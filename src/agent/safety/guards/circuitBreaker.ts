import { z } from 'zod';
import { lazy } from '../../lazy.ts';
import type { Refusal } from '../refusal.ts';

// Per-tool circuit breaker (P6): a tool that keeps failing is paused instead of letting the model
// retry it in a loop. closed → (threshold consecutive failures) → open for cooldownMs → half-open:
// exactly one trial call; its success closes the circuit, its failure re-opens it for another cooldown.

export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit (default 3). */
  threshold?: number;
  /**
   * How long an open circuit refuses calls (default 300 000 ms, or KEEL_CIRCUIT_COOLDOWN_MS when set:
   * scripted end-to-end sessions cannot wait five minutes to see the circuit recover).
   */
  cooldownMs?: number;
  /**
   * How long the half-open trial slot stays reserved without a recorded outcome (default 60 000 ms).
   * The registry records only real tool outcomes, so a trial that ends as e.g. DENIED_BY_USER would
   * otherwise hold the slot forever.
   */
  trialLeaseMs?: number;
  now: () => number;
}

export type CircuitCheck = { open: false } | { open: true; retryInMs: number };

export interface CircuitBreaker {
  check(toolName: string): CircuitCheck;
  /** Real tool outcomes only; caller-side errors (DENIED_BY_USER, LOOP_DETECTED, INVALID_PARAM, …) are not recorded. */
  record(toolName: string, success: boolean): void;
  /** How many times any circuit has opened (re-opens after a failed trial included). */
  readonly openCount: number;
}

const optionsSchema = lazy(() =>
  z.object({
    threshold: z.number().int().min(1).default(3),
    cooldownMs: z.number().min(0).default(300_000),
    trialLeaseMs: z.number().min(0).default(60_000),
  }),
);

/** KEEL_CIRCUIT_COOLDOWN_MS, when it is a non-negative number; otherwise the default applies. */
export function cooldownFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.KEEL_CIRCUIT_COOLDOWN_MS?.trim();
  if (!raw || !/^\d+(\.\d+)?$/.test(raw)) return undefined;
  return Number(raw);
}

type State =
  | { kind: 'closed'; failures: number }
  | { kind: 'open'; openedAt: number }
  | { kind: 'half_open'; trialAt: number | undefined };

export function createCircuitBreaker(options: CircuitBreakerOptions): CircuitBreaker {
  const { threshold, cooldownMs, trialLeaseMs } = optionsSchema().parse({
    threshold: options.threshold,
    cooldownMs: options.cooldownMs ?? cooldownFromEnv(),
    trialLeaseMs: options.trialLeaseMs,
  });
  const { now } = options;
  const states = new Map<string, State>();
  let openCount = 0;

  const open = (toolName: string): void => {
    states.set(toolName, { kind: 'open', openedAt: now() });
    openCount += 1;
  };

  return {
    get openCount() {
      return openCount;
    },

    check(toolName) {
      const state = states.get(toolName);
      if (!state || state.kind === 'closed') return { open: false };
      const t = now();
      if (state.kind === 'open') {
        const remaining = state.openedAt + cooldownMs - t;
        if (remaining > 0) return { open: true, retryInMs: remaining };
        states.set(toolName, { kind: 'half_open', trialAt: t });
        return { open: false };
      }
      if (state.trialAt === undefined || t - state.trialAt >= trialLeaseMs) {
        state.trialAt = t;
        return { open: false };
      }
      // The trial call is still running: others wait for its outcome.
      return { open: true, retryInMs: Math.max(1, state.trialAt + trialLeaseMs - t) };
    },

    record(toolName, success) {
      const state = states.get(toolName) ?? { kind: 'closed', failures: 0 };
      if (state.kind === 'open') {
        // A call that started before the circuit opened; it does not extend the cooldown.
        return;
      }
      if (state.kind === 'half_open') {
        if (success) states.set(toolName, { kind: 'closed', failures: 0 });
        else open(toolName);
        return;
      }
      if (success) {
        states.set(toolName, { kind: 'closed', failures: 0 });
        return;
      }
      const failures = state.failures + 1;
      if (failures >= threshold) open(toolName);
      else states.set(toolName, { kind: 'closed', failures });
    },
  };
}

/** The CIRCUIT_OPEN refusal for a call, with a message the model can act on. */
export function circuitOpenRefusal(toolName: string, retryInMs: number, threshold = 3): Refusal {
  const seconds = Math.max(1, Math.ceil(retryInMs / 1000));
  return {
    code: 'CIRCUIT_OPEN',
    message: `${toolName} failed ${threshold} times in a row and is paused; it can be tried again in ${seconds} s.`,
    suggestion: `Do not call ${toolName} again yet. Use another tool or approach, or tell the user what keeps failing.`,
  };
}
