import type { ContextEngine } from '../context/engine.ts';

export interface SentPrefix {
  readonly prefixHash: string;
  readonly system: readonly unknown[];
  readonly tools: readonly unknown[];
}

/**
 * The engine, with the frozen prefix (system + tools exactly as about to be sent) handed to `write`
 * once, and again only when its hash changes — a change is itself a finding (P1). Logging from the
 * prepared request means the log holds what the API saw, so a trace or replay can rebuild it.
 */
export function withPrefixLog(
  engine: ContextEngine,
  lastLoggedHash: string | undefined,
  write: (prefix: SentPrefix) => void,
): ContextEngine {
  let logged = lastLoggedHash;
  return {
    ...engine,
    skillInContext: (name) => engine.skillInContext(name),
    afterTools: (transcript) => engine.afterTools(transcript),
    prepare: async (args) => {
      const prepared = await engine.prepare(args);
      if (prepared.request.prefixHash !== logged) {
        logged = prepared.request.prefixHash;
        write(prepared.request);
      }
      return prepared;
    },
  };
}
