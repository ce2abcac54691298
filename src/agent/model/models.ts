// What each model can do with its output: its real output limit and how it thinks. One table (the
// pricing table's neighbour); the request's `max_tokens`, `thinking` and `output_config` derive from it.

/** The user-visible thinking level (CLI `--effort`, setting `keel.effort`). */
export const EFFORTS = ['low', 'medium', 'high', 'max'] as const;
export type Effort = (typeof EFFORTS)[number];
/** Thinking on at this level for models that support it, unless the user says otherwise. */
export const DEFAULT_EFFORT: Effort = 'medium';

export function isEffort(value: unknown): value is Effort {
  return typeof value === 'string' && (EFFORTS as readonly string[]).includes(value);
}

interface ModelSpec {
  /** The most output tokens (thinking included) one reply may have. */
  readonly outputLimit: number;
  /**
   * `adaptive`: the model decides how much to think, steered by `output_config.effort` (4.6 and later);
   * `budget`: manual extended thinking with `budget_tokens`; `none`: no thinking.
   */
  readonly thinking: 'adaptive' | 'budget' | 'none';
  /** The `output_config.effort` levels the model takes (empty: the parameter is not sent). */
  readonly efforts: readonly Effort[];
  /** Budget models of the Claude 4 family think between tool calls with this beta. */
  readonly interleaved?: boolean;
}

const ALL: readonly Effort[] = EFFORTS;
const NO_MAX: readonly Effort[] = ['low', 'medium', 'high'];

// First match wins: the specific generations before the families they would otherwise fall into.
const TABLE: readonly (readonly [RegExp, ModelSpec])[] = [
  // The demo's scripted emulator: long scripted writes, and no thinking (its answers are fixed).
  [/^keel-demo/, { outputLimit: 64_000, thinking: 'none', efforts: [] }],
  [/claude-(opus|sonnet|haiku|fable|mythos)-[5-9]|mythos-preview/, spec(128_000, 'adaptive', ALL)],
  [/opus-4-[6-9]|opus-4\.[6-9]|sonnet-4-6|sonnet-4\.6/, spec(128_000, 'adaptive', ALL)],
  [/opus-4-5|opus-4\.5/, { ...spec(64_000, 'budget', NO_MAX), interleaved: true }],
  [/sonnet-4-5|sonnet-4\.5|haiku-4-5|haiku-4\.5/, { ...spec(64_000, 'budget', []), interleaved: true }],
  // Opus 4 and 4.1, Sonnet 4 (the later ones matched above).
  [/opus-4/, { ...spec(32_000, 'budget', []), interleaved: true }],
  [/sonnet-4/, { ...spec(64_000, 'budget', []), interleaved: true }],
  [/3-7-sonnet|sonnet-3-7/, spec(64_000, 'budget', [])],
  [/claude-3-haiku|claude-3-opus/, spec(4_096, 'none', [])],
  // OpenAI-family models (providers/openai.ts): their output limits; thinking is not sent to them.
  [/gpt-5/, spec(128_000, 'none', [])],
  [/gpt-4\.1/, spec(32_768, 'none', [])],
  [/gpt-4o/, spec(16_384, 'none', [])],
  [/claude-3/, spec(8_192, 'none', [])],
];

// Unknown models (compatible local servers, gateways with their own names): what Keel always sent,
// and no thinking parameter they may not understand. A server that allows fewer tokens says so and
// the client adopts its figure.
const UNKNOWN: ModelSpec = spec(8_192, 'none', []);

function spec(outputLimit: number, thinking: ModelSpec['thinking'], efforts: readonly Effort[]): ModelSpec {
  return { outputLimit, thinking, efforts };
}

export function modelSpec(model: string): ModelSpec {
  for (const [pattern, s] of TABLE) if (pattern.test(model)) return s;
  return UNKNOWN;
}

export function outputLimitFor(model: string): number {
  return modelSpec(model).outputLimit;
}

export function supportsThinking(model: string): boolean {
  return modelSpec(model).thinking !== 'none';
}

// Manual budgets per level; the reply (text, tool input) needs room after the thinking.
const BUDGET: Record<Effort, number> = { low: 2_048, medium: 8_192, high: 24_000, max: 48_000 };
const MIN_BUDGET = 1_024;
const ROOM_AFTER_THINKING = 4_096;

export type ThinkingParam = { type: 'adaptive' } | { type: 'enabled'; budget_tokens: number };

/** The thinking part of a request to `model`: what goes in the body, and the beta header if any. */
export interface ThinkingPlan {
  readonly thinking?: ThinkingParam;
  readonly outputConfig?: { effort: Effort };
  readonly beta?: string;
}

export const INTERLEAVED_THINKING_BETA = 'interleaved-thinking-2025-05-14';

/** Nothing when `effort` is absent (thinking off) or the model does not think. */
export function thinkingPlan(model: string, effort: Effort | undefined, maxTokens: number): ThinkingPlan {
  const s = modelSpec(model);
  if (!effort || s.thinking === 'none') return {};
  // A level the model does not know becomes the highest it does ('max' on Opus 4.5 is 'high').
  const level = s.efforts.includes(effort) ? effort : s.efforts.at(-1);
  const outputConfig = level ? { outputConfig: { effort: level } } : {};
  if (s.thinking === 'adaptive') return { thinking: { type: 'adaptive' }, ...outputConfig };
  // The API requires MIN_BUDGET <= budget < max_tokens; too small a reply gets no thinking at all.
  const budget = Math.min(BUDGET[effort], maxTokens - ROOM_AFTER_THINKING);
  if (budget < MIN_BUDGET) return {};
  return {
    thinking: { type: 'enabled', budget_tokens: budget },
    ...outputConfig,
    ...(s.interleaved ? { beta: INTERLEAVED_THINKING_BETA } : {}),
  };
}

// Models that take image blocks (Claude 3 and later; OpenAI's GPT-4o, 4.1 and 5 families). Anything
// else — a local server, a gateway's own name, the demo — is not assumed to: an image it cannot take
// would fail the request, and keep failing it while the image sits in the conversation.
const VISION = /claude-(3|opus|sonnet|haiku|fable|mythos)|mythos-preview|gpt-4o|gpt-4\.1|gpt-5/;

/** The model accepts image blocks (in a user message or a tool result). */
export function acceptsImages(model: string): boolean {
  return VISION.test(model);
}
