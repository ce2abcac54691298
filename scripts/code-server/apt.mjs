#!/usr/bin/env node
// The apt step of the first `npm start` (as root, through install.sh): install the build prerequisites
// code-server's native modules need. On a fresh machine apt is often busy (unattended-upgrades, cloud
// init) and apt-get fails at once with "Could not get lock": instead, apt-get waits for the lock itself
// (`-o DPkg::Lock::Timeout=N`), and a lock failure that still gets through (apt's lists lock, an older
// apt) is retried a bounded number of times, saying what it waits for. Any other failure stops at once.
// Usage: node scripts/code-server/apt.mjs PACKAGE...
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';

export const LOCK_TIMEOUT_S = 120;
const LOCKED =
  /Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock (the )?(administration )?directory|is another process using it/i;

/** Runs apt-get, its output passed through and kept for the lock check. */
function aptGet(aptGet, args, env) {
  return new Promise((resolve) => {
    const child = spawn(aptGet, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c) => {
      output += c;
      process.stdout.write(c);
    });
    child.stderr.on('data', (c) => {
      output += c;
      process.stderr.write(c);
    });
    child.on('error', (error) => resolve({ code: 127, output: `${output}${error.message}\n` }));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/**
 * `apt-get update`, then `apt-get install -y PACKAGES`, each waiting for a busy apt lock: apt's own
 * timeout first, then up to `attempts` tries `waitMs` apart. Resolves when installed; rejects with what
 * failed otherwise.
 */
export async function aptInstall(packages, options = {}) {
  const {
    aptGet: bin = 'apt-get',
    attempts = 5,
    waitMs = 15_000,
    lockTimeoutS = LOCK_TIMEOUT_S,
    log = (line) => process.stdout.write(`${line}\n`),
    env = process.env,
  } = options;
  const lock = ['-o', `DPkg::Lock::Timeout=${lockTimeoutS}`];
  const steps = [
    ['update', [...lock, 'update', '-qq']],
    ['install', [...lock, 'install', '-y', '-qq', '--no-install-recommends', ...packages]],
  ];
  for (const [name, args] of steps) {
    for (let attempt = 1; ; attempt++) {
      const { code, output } = await aptGet(bin, args, { ...env, DEBIAN_FRONTEND: 'noninteractive' });
      if (code === 0) break;
      if (!LOCKED.test(output))
        throw new Error(`apt-get ${name} failed (exit ${code}); see its output above`);
      if (attempt >= attempts)
        throw new Error(
          `apt-get ${name}: apt is still locked by another process after ${attempts} tries; wait for it (e.g. unattended-upgrades) to finish, then run npm start again`,
        );
      log(
        `apt is busy (another apt or dpkg holds its lock, e.g. unattended-upgrades on a fresh machine): waiting ${Math.round(waitMs / 1000)} s, then apt-get ${name} again (try ${attempt + 1} of ${attempts})`,
      );
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const waitMs = Number(process.env.KEEL_APT_WAIT_MS);
  aptInstall(process.argv.slice(2), Number.isFinite(waitMs) && waitMs >= 0 ? { waitMs } : {}).catch(
    (error) => {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    },
  );
}
