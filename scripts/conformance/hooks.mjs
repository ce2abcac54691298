// Resolves 'fs' to fsShim.mjs for the conformance bundle only (see fsShim.mjs).
export async function resolve(specifier, context, next) {
  if (
    (specifier === 'fs' || specifier === 'node:fs') &&
    context.parentURL?.includes('/@modelcontextprotocol/conformance/')
  ) {
    return { url: new URL('./fsShim.mjs', import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
