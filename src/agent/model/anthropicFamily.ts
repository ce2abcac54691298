// Claude through its three doors: Anthropic's API, Amazon Bedrock and Google Vertex AI. A model name
// may say which (`bedrock:claude-sonnet-4-5`, `vertex:claude-opus-4-5`); otherwise the environment
// may (Claude Code's CLAUDE_CODE_USE_BEDROCK / CLAUDE_CODE_USE_VERTEX), otherwise any profile may
// answer. The name never carries an address or a credential: a prefix only picks among the user's
// own profiles (auth.json, environment).

export const PROVIDERS = ['anthropic', 'bedrock', 'vertex'] as const;
export type Provider = (typeof PROVIDERS)[number];

export interface ModelRoute {
  /** Only profiles of this provider answer; absent: any profile, in order. */
  readonly provider?: Provider;
  /** The model as Anthropic names it (or a platform id given as is). */
  readonly model: string;
}

/** `bedrock:claude-sonnet-4-5` → provider + model; a name without a known prefix as given. */
export function parseModelRoute(name: string, env: NodeJS.ProcessEnv = process.env): ModelRoute {
  const match = /^(anthropic|bedrock|vertex):(.+)$/i.exec(name.trim());
  if (match) return { provider: match[1]!.toLowerCase() as Provider, model: match[2]!.trim() };
  const forced = providerFromEnv(env);
  return forced ? { provider: forced, model: name } : { model: name };
}

/** Claude Code's switches: `CLAUDE_CODE_USE_BEDROCK=1` / `CLAUDE_CODE_USE_VERTEX=1`. */
export function providerFromEnv(env: NodeJS.ProcessEnv): Provider | undefined {
  const on = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim());
  if (on(env.CLAUDE_CODE_USE_BEDROCK)) return 'bedrock';
  if (on(env.CLAUDE_CODE_USE_VERTEX)) return 'vertex';
  return undefined;
}

// Models published before the platforms dropped the date from their ids. Later models are
// `anthropic.<name>` on Bedrock and `<name>` on Vertex.
const DATED: Readonly<Record<string, string>> = {
  'claude-opus-4-5': '20251101',
  'claude-sonnet-4-5': '20250929',
  'claude-haiku-4-5': '20251001',
  'claude-opus-4-1': '20250805',
  'claude-opus-4': '20250514',
  'claude-sonnet-4': '20250514',
  'claude-3-7-sonnet': '20250219',
  'claude-3-5-haiku': '20241022',
  'claude-3-haiku': '20240307',
};
const BEDROCK_UNDATED: Readonly<Record<string, string>> = {
  'claude-opus-4-6': 'anthropic.claude-opus-4-6-v1',
};

/** An Anthropic model name, without a `-YYYYMMDD` date, and its date if it had one. */
function splitDate(model: string): { base: string; date?: string } {
  const m = /^(.*)-(\d{8})$/.exec(model);
  return m ? { base: m[1]!, date: m[2]! } : { base: model };
}

/**
 * The id `provider` knows `model` by. Ids already in the platform's form (`anthropic.…`,
 * `us.anthropic.…`, an ARN; `…@date`) are sent as given.
 */
export function platformModelId(provider: Provider, model: string): string {
  if (provider === 'anthropic') return model;
  if (provider === 'bedrock') {
    if (/^([a-z]{2,6}\.)?anthropic\.|^arn:/.test(model)) return model;
    const { base, date } = splitDate(model);
    if (BEDROCK_UNDATED[base] && !date) return BEDROCK_UNDATED[base];
    const d = date ?? DATED[base];
    return d ? `anthropic.${base}-${d}-v1:0` : `anthropic.${base}`;
  }
  if (model.includes('@')) return model;
  const { base, date } = splitDate(model);
  const d = date ?? DATED[base];
  return d ? `${base}@${d}` : base;
}
