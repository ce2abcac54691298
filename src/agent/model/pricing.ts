// USD per million tokens. One table; cost is derived, never stored per model elsewhere.
interface Price {
  readonly input: number;
  readonly output: number;
  readonly cacheWrite: number;
  readonly cacheRead: number;
  readonly contextWindow: number;
}

/**
 * The model id of the demo (`keel run --demo`, `npm start` without a key): the bundled emulator with
 * scripted answers. Not a real model and free — anything that shows a model name or a cost says so.
 */
export const DEMO_MODEL = 'keel-demo-emulator';

const TABLE: readonly (readonly [RegExp, Price])[] = [
  [/^keel-demo/, { input: 0, output: 0, cacheWrite: 0, cacheRead: 0, contextWindow: 200_000 }],
  [
    /opus-4-[5-9]|opus-4\.[5-9]/,
    { input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5, contextWindow: 200_000 },
  ],
  [/opus/, { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5, contextWindow: 200_000 }],
  [/haiku-4|haiku-4\./, { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1, contextWindow: 200_000 }],
  [/haiku/, { input: 0.8, output: 4, cacheWrite: 1, cacheRead: 0.08, contextWindow: 200_000 }],
  // OpenAI-family models (providers/): cached input at its own price, no cache-write charge; a local
  // Ollama model costs nothing.
  [/^ollama:/, { input: 0, output: 0, cacheWrite: 0, cacheRead: 0, contextWindow: 200_000 }],
  [/gpt-4o-mini/, { input: 0.15, output: 0.6, cacheWrite: 0, cacheRead: 0.075, contextWindow: 128_000 }],
  [/gpt-4o/, { input: 2.5, output: 10, cacheWrite: 0, cacheRead: 1.25, contextWindow: 128_000 }],
  [/gpt-4\.1-mini/, { input: 0.4, output: 1.6, cacheWrite: 0, cacheRead: 0.1, contextWindow: 1_047_576 }],
  [/gpt-4\.1/, { input: 2, output: 8, cacheWrite: 0, cacheRead: 0.5, contextWindow: 1_047_576 }],
  [/gpt-5-mini/, { input: 0.25, output: 2, cacheWrite: 0, cacheRead: 0.025, contextWindow: 400_000 }],
  [/gpt-5/, { input: 1.25, output: 10, cacheWrite: 0, cacheRead: 0.125, contextWindow: 400_000 }],
  [/sonnet|.*/, { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3, contextWindow: 200_000 }],
];

export function priceFor(model: string): Price {
  for (const [pattern, price] of TABLE) if (pattern.test(model)) return price;
  return TABLE[TABLE.length - 1]![1];
}

export function costUsd(
  model: string,
  usage: { input: number; output: number; cacheRead: number; cacheWrite: number; cacheWrite1h?: number },
): number {
  const p = priceFor(model);
  // 5-minute cache writes cost 1.25x input, 1-hour writes 2x input (Anthropic's published multipliers).
  const oneHour = Math.min(usage.cacheWrite1h ?? 0, usage.cacheWrite);
  const micros =
    usage.input * p.input +
    usage.output * p.output +
    usage.cacheRead * p.cacheRead +
    (usage.cacheWrite - oneHour) * p.cacheWrite +
    oneHour * p.input * 2;
  return Math.round(micros) / 1_000_000;
}

/** Keel refuses to run below this window (P6) and warns below WARN_CONTEXT_WINDOW. Here, not in the
 * session, so the CLI's argument check can name the limit without loading the session code. */
export const MIN_CONTEXT_WINDOW = 16_000;
export const WARN_CONTEXT_WINDOW = 32_000;

export function contextWindowFor(model: string): number {
  return priceFor(model).contextWindow;
}
