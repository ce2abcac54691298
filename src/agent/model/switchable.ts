import type { ModelClient } from './client.ts';

// The session's model can change: `/model NAME` for the rest of the session, a prompt file's `model`
// for one turn. Each model gets its own client (with the session's fallbacks behind it), made when
// first used. The frozen prefix (tools + system) is not touched; only the request's model field moves.

export interface SwitchableModelClient extends ModelClient {
  /** The session's model (what `/model` set last). */
  readonly current: string;
  setModel(model: string): void;
  /** A model for the current run only; `undefined` ends it. */
  setTurnModel(model: string | undefined): void;
}

export function createSwitchableModelClient(
  initial: string,
  make: (model: string) => ModelClient,
): SwitchableModelClient {
  const clients = new Map<string, ModelClient>();
  let current = initial;
  let turn: string | undefined;
  const active = () => {
    const name = turn ?? current;
    let client = clients.get(name);
    if (!client) {
      client = make(name);
      clients.set(name, client);
    }
    return client;
  };
  return {
    get current() {
      return current;
    },
    get models() {
      return active().models;
    },
    setModel(model) {
      current = model;
    },
    setTurnModel(model) {
      turn = model;
    },
    stream: (request, signal, callbacks) => active().stream(request, signal, callbacks),
  };
}

// Claude Code's agent files and `/model` take family names; they mean the current model of that family.
const ALIASES: Readonly<Record<string, string>> = {
  sonnet: 'claude-sonnet-4-6',
  opus: 'claude-opus-4-5',
  haiku: 'claude-haiku-4-5',
};

/** `sonnet` → its model id; `inherit` (agent files) → undefined; anything else as given. */
export function resolveModelName(name: string | undefined): string | undefined {
  const trimmed = name?.trim();
  if (!trimmed || trimmed === 'inherit') return undefined;
  // `anthropic:sonnet` is the alias too; another provider's names are its own.
  const prefixed = /^anthropic:/i.exec(trimmed);
  if (prefixed)
    return `anthropic:${ALIASES[trimmed.slice(10).trim().toLowerCase()] ?? trimmed.slice(10).trim()}`;
  return ALIASES[trimmed.toLowerCase()] ?? trimmed;
}
