#!/usr/bin/env node
// Entry point of the `keel` command: runs the bundled CLI (built by `npm run build`).
import { existsSync } from 'node:fs';
import module from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// Node ≥ 22.1 can keep V8's compiled code on disk between runs (module.enableCompileCache; Node 20
// has no such API): it goes to the user's cache folder, never the repository or the temp dir.
// NODE_DISABLE_COMPILE_CACHE=1 turns it off; NODE_COMPILE_CACHE=dir picks the folder.
function userCacheDir() {
  if (process.platform === 'win32')
    return join(process.env.LOCALAPPDATA || join(homedir(), 'AppData', 'Local'), 'keel', 'Cache');
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Caches', 'keel');
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'keel');
}
if (typeof module.enableCompileCache === 'function') {
  try {
    module.enableCompileCache(process.env.NODE_COMPILE_CACHE || join(userCacheDir(), 'compile-cache'));
  } catch {
    // A cache that cannot be set up only costs speed.
  }
}

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
