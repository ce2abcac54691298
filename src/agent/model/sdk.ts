import type Anthropic from '@anthropic-ai/sdk';

// The SDK (~1 MB of JavaScript) is imported on the first model call, not when the CLI or the
// extension starts: `keel tool`, `keel trace` and friends never load it.

let sdk: typeof Anthropic | undefined;

export async function loadSdk(): Promise<typeof Anthropic> {
  sdk ??= (await import('@anthropic-ai/sdk')).default;
  return sdk;
}

/** The SDK if a model call has loaded it; until then no error can be one of its classes. */
export function loadedSdk(): typeof Anthropic | undefined {
  return sdk;
}
