// The build step of `npm start`: the `keel` CLI (dist/cli.mjs, so `npx keel` works afterwards — it
// used to say "not built yet" after a first `npm start`) and the extension, then dist/keel.vsix with the
// user README (scripts/package-vsix.mjs). Factored out of start.mjs so a test can check what it runs.
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { packageVsix } from './package-vsix.mjs';

const repo = path.resolve(import.meta.dirname, '..');

function runNode(args) {
  const result = spawnSync(process.execPath, args, { cwd: repo, stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error(`failed (${result.status ?? result.signal}): node ${args.join(' ')}`);
}

/** Builds the CLI and the extension, then packages the .vsix; returns the .vsix's path. */
export function buildForStart({ run = runNode, pack = packageVsix } = {}) {
  run(['scripts/build.mjs']);
  return pack({ build: true }).path;
}
