import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../../lazy.ts';
import { findExecutable, type ProbeOptions, probeSandbox, type SandboxStatus } from './probe.ts';

// Probing runs bubblewrap once (a process start, ~10 ms) before the first command of every session.
// Its answer only changes when the machine does, so a working probe is remembered for the rest of
// this boot, keyed on everything it depends on: the boot, the user, the bwrap binary itself and the
// kernel switches that turn unprivileged user namespaces off. Only success is remembered — a machine
// the user just fixed is probed again at once — and a stale success fails closed (bwrap refuses
// to start, the command does not run), never open.

const cachedSchema = lazy(() =>
  z.object({
    key: z.string(),
    status: z.object({
      tier: z.literal('bwrap'),
      summary: z.string(),
      bwrap: z.string(),
      checks: z.array(z.object({ name: z.string(), ok: z.boolean(), detail: z.string() })),
    }),
  }),
);

function read(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Where a host keeps the probe: per user, cleared with the boot where the OS offers such a place. */
export function defaultProbeCacheFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_RUNTIME_DIR || env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'keel', 'sandbox-probe.json');
}

function probeKey(bwrap: string): string | undefined {
  const boot = read('/proc/sys/kernel/random/boot_id');
  if (!boot) return undefined;
  let binary: fs.Stats;
  try {
    binary = fs.statSync(bwrap);
  } catch {
    return undefined;
  }
  return JSON.stringify([
    1,
    boot,
    process.getuid?.() ?? -1,
    process.arch,
    bwrap,
    binary.ino,
    binary.size,
    binary.mtimeMs,
    read('/proc/sys/user/max_user_namespaces'),
    read('/proc/sys/kernel/unprivileged_userns_clone'),
    read('/proc/sys/kernel/apparmor_restrict_unprivileged_userns'),
  ]);
}

/** probeSandbox, answered from `cacheFile` when this boot already saw the same bwrap work. */
export function probeSandboxCached(options: ProbeOptions & { readonly cacheFile?: string }): SandboxStatus {
  const platform = options.platform ?? process.platform;
  const bwrap = findExecutable(options.bwrapPath, options.env);
  const key =
    options.cacheFile && options.enabled !== false && platform === 'linux' && bwrap && probeKey(bwrap);
  if (!key || !options.cacheFile) return probeSandbox(options);
  try {
    const cached = cachedSchema().parse(JSON.parse(fs.readFileSync(options.cacheFile, 'utf8')));
    if (cached.key === key) {
      return {
        ...cached.status,
        checks: [
          ...cached.status.checks,
          { name: 'probe', ok: true, detail: 'remembered from earlier in this boot' },
        ],
      };
    }
  } catch {
    // No cache yet, or one this version cannot read: probe.
  }
  const status = probeSandbox(options);
  if (status.tier === 'bwrap') {
    try {
      fs.mkdirSync(path.dirname(options.cacheFile), { recursive: true, mode: 0o700 });
      const temp = `${options.cacheFile}.${process.pid}.tmp`;
      fs.writeFileSync(temp, JSON.stringify({ key, status }), { mode: 0o600 });
      fs.renameSync(temp, options.cacheFile);
    } catch {
      // A cache that cannot be written only costs the next session a probe.
    }
  }
  return status;
}
