import { appendFileSync } from 'node:fs';

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (process.env.KEEL_MODULE_LOG) appendFileSync(process.env.KEEL_MODULE_LOG, `${resolved.url}\n`);
  return resolved;
}
