/**
 * A value built on first use, then kept. For zod schemas above all: each costs ~0.25 ms to build in
 * a cold process, and a command that needs one tool (`keel tool LS`) or one CLI command should not
 * pay for all the others at start-up.
 */
export function lazy<T>(build: () => T): () => T {
  let built: { value: T } | undefined;
  return () => {
    built ??= { value: build() };
    return built.value;
  };
}
