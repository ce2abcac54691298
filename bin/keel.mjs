#!/usr/bin/env node
// Entry point of the `keel` command: runs the bundled CLI (built by `npm run build`).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const bundle = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.mjs');
if (!existsSync(bundle)) {
  process.stderr.write('keel: the CLI is not built yet. Run `npm run build` in the Keel repository.\n');
  process.exit(1);
}
const { main } = await import(pathToFileURL(bundle).href);
const code = await main(process.argv.slice(2));
process.exitCode = code;
// Idle keep-alive sockets must not hold the process open once the work is done.
setTimeout(() => process.exit(code), 200).unref();
