import { createHash } from 'node:crypto';
import { z } from 'zod';
import { lazy } from '../../lazy.ts';

// Loop detection outside the model (P6): the model does not notice its own loops, so a deterministic,
// hash-based rule set watches every call. Four detectors share one bookkeeping pass:
//   repeat / poll — the same call (tool name + canonical input) keeps returning the same result;
//   ping-pong     — two calls alternate (A B A B …) and neither result changes;
//   global        — calls of any kind in a row that produced nothing new.
// "Progress" is a (call, result) pair not seen in the recent window, so distinct inputs and changed
// results (e.g. `npm test` after an edit that changed its output) never trip anything; a repeat count
// also restarts once any other call made progress since the repeated call last ran.

export interface LoopDetectorOptions {
  /** Append a warning note to the result from this many repetitions on (default 10). */
  warnAt?: number;
  /** Refuse to execute from this many repetitions on (default 20). */
  blockAt?: number;
  /** End the run at this many calls without progress (default 30). */
  stopAt?: number;
  /** How many recent calls count as "recent" for repeats and for "new result" (default 100). */
  window?: number;
}

export type LoopDetectorKind = 'repeat' | 'ping_pong' | 'global';

export type LoopVerdict =
  | { action: 'allow' }
  | { action: 'warn'; message: string; detector?: LoopDetectorKind }
  | { action: 'block'; message: string; suggestion?: string; detector?: LoopDetectorKind }
  | { action: 'stop'; message: string; suggestion?: string; detector?: LoopDetectorKind };

export interface LoopDetector {
  /** Before executing a call: may block (LOOP_DETECTED, call not executed) or stop the run. */
  check(toolName: string, input: unknown): LoopVerdict;
  /**
   * After executing: records the call and a hash of its rendered result; returns a warn verdict when a
   * warning note must be appended to this result, or 'stop' when this call was the last one allowed.
   */
  record(
    toolName: string,
    input: unknown,
    resultText: string,
    status: 'success' | 'partial' | 'error',
  ): LoopVerdict;
  /** Cumulative for the detector's lifetime (reset() does not clear them): loop_detection_blocks etc. */
  readonly stats: { warnings: number; blocks: number; stops: number };
}

/** Extra controls of the detector createLoopDetector returns (additions to the registry contract). */
export interface LoopDetectorControls {
  /**
   * Progress made outside the tool stream (e.g. the user sent a message, a file changed on disk):
   * resets the no-progress and alternation counters; identical calls keep their repeat counts.
   */
  noteProgress(): void;
  /** Forget all calls, including a 'stop' (call at the start of each run). */
  reset(): void;
}

const optionsSchema = lazy(() =>
  z
    .object({
      warnAt: z.number().int().min(1).default(10),
      blockAt: z.number().int().min(1).default(20),
      stopAt: z.number().int().min(1).default(30),
      window: z.number().int().min(2).default(100),
    })
    .refine((o) => o.warnAt <= o.blockAt && o.blockAt <= o.stopAt, {
      message: 'loop detector thresholds must satisfy warnAt <= blockAt <= stopAt',
    }),
);

/** JSON with object keys sorted at every level, so equal inputs hash equally (P1). */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const encode = (v: unknown, inArray: boolean): string | undefined => {
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      v = (v as { toJSON(): unknown }).toJSON();
    }
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
        return JSON.stringify(v);
      case 'number':
        return Number.isFinite(v) ? JSON.stringify(v) : 'null';
      case 'boolean':
        return v ? 'true' : 'false';
      case 'bigint':
        return JSON.stringify(v.toString());
      case 'undefined':
      case 'function':
      case 'symbol':
        return inArray ? 'null' : undefined;
    }
    const obj = v as object;
    if (seen.has(obj)) return '"[Circular]"';
    seen.add(obj);
    let out: string;
    if (Array.isArray(obj)) {
      out = `[${obj.map((item) => encode(item, true) ?? 'null').join(',')}]`;
    } else {
      const record = obj as Record<string, unknown>;
      const parts: string[] = [];
      for (const key of Object.keys(record).sort()) {
        const encoded = encode(record[key], false);
        if (encoded !== undefined) parts.push(`${JSON.stringify(key)}:${encoded}`);
      }
      out = `{${parts.join(',')}}`;
    }
    seen.delete(obj);
    return out;
  };
  return encode(value, false) ?? 'null';
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

function callSignature(toolName: string, input: unknown): string {
  return hash(`${toolName}\u0000${canonicalJson(input)}`);
}

interface HistoryEntry {
  readonly sig: string;
  readonly tool: string;
}

interface SignatureState {
  result: string;
  /** Executions since the result last changed (the first execution counts as 1). */
  streak: number;
  /** Attempts refused since then. */
  blocked: number;
  lastIndex: number;
}

const BLOCK_SUGGESTION =
  'Do not repeat this call: its earlier results already tell you what it returns. Use them, try a different ' +
  'approach or tool, or stop and explain to the user what is blocking you.';
const STOP_SUGGESTION = 'Review what was tried, then give the agent a different instruction.';

export function createLoopDetector(options: LoopDetectorOptions = {}): LoopDetector & LoopDetectorControls {
  const { warnAt, blockAt, stopAt, window } = optionsSchema().parse(options);
  const stats = { warnings: 0, blocks: 0, stops: 0 };

  let index = 0; // attempts so far (executed or refused)
  let lastProgress = 0; // index of the last call that produced something new
  let history: HistoryEntry[] = [];
  let signatures = new Map<string, SignatureState>();
  let pairsSeen = new Map<string, number>(); // (call, result) → index of its last occurrence
  let noProgress = 0; // calls in a row without a new (call, result) pair, refused attempts included
  let alternation = 0; // length of the A B A B … tail in which nothing changed
  let stopped: LoopVerdict | undefined;

  /**
   * The repeat state of a call, if it is still a repeat: seen recently, and nothing else produced
   * anything new since it last ran. Re-running `npm test` after each of several productive edits is
   * verification, not a loop, even when the output stays the same.
   */
  const unchanged = (sig: string): SignatureState | undefined => {
    const state = signatures.get(sig);
    if (!state || index - state.lastIndex >= window || lastProgress > state.lastIndex) return undefined;
    return state;
  };

  const observe = (sig: string, tool: string, progress: boolean): void => {
    index += 1;
    const last = history[history.length - 1];
    const beforeLast = history[history.length - 2];
    if (!last || last.sig === sig) alternation = 1;
    else if (!progress && beforeLast?.sig === sig && alternation >= 2) alternation += 1;
    else alternation = 2;
    history.push({ sig, tool });
    if (history.length > window) history = history.slice(-window);
  };

  const stop = (message: string, detector: LoopDetectorKind): LoopVerdict => {
    stats.stops += 1;
    stopped = { action: 'stop', message, suggestion: STOP_SUGGESTION, detector };
    return stopped;
  };

  const globalStop = (): LoopVerdict =>
    stop(
      `Stopped: the last ${noProgress} tool calls made no progress (each repeated an earlier call and got the ` +
        'same result back). The run was ended so it does not keep spending time and tokens.',
      'global',
    );

  /** The alternation length this call would make, if it continues an A B A B … pattern. */
  const alternationIfCalled = (sig: string): number => {
    const last = history[history.length - 1];
    const beforeLast = history[history.length - 2];
    if (!last || !beforeLast || alternation < 2) return 0;
    return beforeLast.sig === sig && last.sig !== sig ? alternation + 1 : 0;
  };

  /** "A ↔ B" for the two calls at the end of the history (called after the current one is observed). */
  const pingPongPair = (): string =>
    `${history[history.length - 2]?.tool ?? '?'} ↔ ${history[history.length - 1]?.tool ?? '?'}`;

  return {
    stats,

    check(toolName, input) {
      if (stopped) return stopped;
      const sig = callSignature(toolName, input);
      const state = unchanged(sig);
      const attempt = state ? state.streak + state.blocked + 1 : 1;
      const alt = alternationIfCalled(sig);
      if (attempt >= stopAt) {
        return stop(
          `Stopped: the same ${toolName} call was attempted ${attempt} times and its result never changed. ` +
            'The run was ended so it does not keep spending time and tokens.',
          'repeat',
        );
      }
      if (attempt < blockAt && alt < blockAt) return { action: 'allow' };

      // A refused attempt still counts: it keeps a ping-pong pattern intact and feeds the global breaker.
      if (state) state.blocked += 1;
      observe(sig, toolName, false);
      noProgress += 1;
      if (noProgress >= stopAt) return globalStop();
      stats.blocks += 1;
      if (alt >= blockAt) {
        return {
          action: 'block',
          message:
            `Loop detected: the last ${alt - 1} calls alternated between the same two calls (${pingPongPair()}) ` +
            `and neither result changed, so this ${toolName} call was not executed.`,
          suggestion: BLOCK_SUGGESTION,
          detector: 'ping_pong',
        };
      }
      return {
        action: 'block',
        message:
          `Loop detected: this exact ${toolName} call was already made ${attempt - 1} times with the same ` +
          'result, so it was not executed.',
        suggestion: BLOCK_SUGGESTION,
        detector: 'repeat',
      };
    },

    record(toolName, input, resultText, status) {
      const sig = callSignature(toolName, input);
      const resultHash = hash(`${status}\u0000${resultText}`);
      const pair = `${sig}:${resultHash}`;

      const previous = unchanged(sig);
      const lastSeen = pairsSeen.get(pair);
      const progress = lastSeen === undefined || index + 1 - lastSeen >= window;
      observe(sig, toolName, progress);
      pairsSeen.set(pair, index);
      if (progress) lastProgress = index;
      noProgress = progress ? 0 : noProgress + 1;

      let state: SignatureState;
      if (previous && previous.result === resultHash) {
        state = previous;
        state.streak += 1;
        state.lastIndex = index;
      } else {
        state = { result: resultHash, streak: 1, blocked: 0, lastIndex: index };
        signatures.set(sig, state);
      }

      if (pairsSeen.size > 4 * window) {
        for (const [key, at] of pairsSeen) if (index - at >= window) pairsSeen.delete(key);
      }
      if (signatures.size > 4 * window) {
        for (const [key, s] of signatures) if (index - s.lastIndex >= window) signatures.delete(key);
      }

      if (noProgress >= stopAt) return globalStop();

      let message: string | undefined;
      let detector: LoopDetectorKind = 'repeat';
      if (alternation >= warnAt && alternation >= state.streak) {
        detector = 'ping_pong';
        message =
          `Loop warning: the last ${alternation} calls alternated between the same two calls (${pingPongPair()}) ` +
          `and neither result changed. Change approach; at ${blockAt} alternating calls they are blocked.`;
      } else if (state.streak >= warnAt) {
        message =
          `Loop warning: this exact ${toolName} call has now returned the same result ${state.streak} times. ` +
          'Repeating it will not give new information; change approach (different input, another tool, or ask ' +
          `the user). At ${blockAt} identical calls it is blocked.`;
      } else if (noProgress >= warnAt) {
        detector = 'global';
        message =
          `Loop warning: the last ${noProgress} tool calls produced nothing new. Change approach or ask the ` +
          `user; the run stops after ${stopAt} calls without progress.`;
      }
      if (!message) return { action: 'allow' };
      stats.warnings += 1;
      return { action: 'warn', message, detector };
    },

    noteProgress() {
      noProgress = 0;
      alternation = 0;
    },

    reset() {
      index = 0;
      lastProgress = 0;
      history = [];
      signatures = new Map();
      pairsSeen = new Map();
      noProgress = 0;
      alternation = 0;
      stopped = undefined;
    },
  };
}
