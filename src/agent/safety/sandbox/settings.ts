import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../../lazy.ts';
import { keelHome } from '../../trust/paths.ts';

// What the OS sandbox allows, as settings (VS Code: keel.sandbox.*; CLI: flags and KEEL_* variables).

/** Secrets no sandboxed command may read, relative to HOME unless absolute. */
export const DEFAULT_DENY_READ: readonly string[] = [
  '.ssh',
  '.aws',
  '.gnupg',
  '.config/gh',
  '.netrc',
  '.git-credentials',
  '.config/git/credentials',
  '.docker/config.json',
  '.kube',
  '.config/gcloud',
  '.azure',
  '.oci',
  '.npmrc',
  '.pypirc',
  '.cargo/credentials',
  '.cargo/credentials.toml',
  '.gem/credentials',
  '.vault-token',
  '.terraform.d/credentials.tfrc.json',
  '.password-store',
  '.local/share/keyrings',
  '.mozilla',
  '.config/google-chrome',
  '.config/chromium',
  '.config/BraveSoftware',
  '.config/microsoft-edge',
  'snap/firefox',
];

/**
 * Keel's user-level folder — `~/.keel` and `$KEEL_HOME` when set (mcp.json with tokens in headers and
 * env, MEMORY.md, per-workspace trust approvals): never readable or writable by a sandboxed command,
 * whatever `keel.sandbox.denyRead` says (a custom list replaces the default one, never this).
 */
export function keelDirs(home: string = os.homedir(), env: NodeJS.ProcessEnv = process.env): string[] {
  return [...new Set([path.join(home, '.keel'), keelHome(env)])];
}

/** Files a shell runs at start-up: read-only even where they sit inside a writable folder. */
export const SHELL_STARTUP_FILES: readonly string[] = [
  '.bashrc',
  '.bash_profile',
  '.bash_login',
  '.bash_logout',
  '.profile',
  '.zshrc',
  '.zshenv',
  '.zprofile',
  '.zlogin',
  '.config/fish',
];

export const sandboxSettingsSchema = lazy(() =>
  z.object({
    /** Run commands in the OS sandbox when one is available. */
    enabled: z.boolean().default(true),
    /** Refuse to run any command when no sandbox is available. */
    failIfUnavailable: z.boolean().default(false),
    /** Paths (HOME-relative or absolute) no sandboxed command can read. */
    denyRead: z.array(z.string().min(1)).default([...DEFAULT_DENY_READ]),
    /** The bubblewrap executable (a path, or a name looked up on PATH). */
    bwrapPath: z.string().min(1).default('bwrap'),
    /** Network through Keel's filtering proxy (needs socat); off = no network inside the sandbox. */
    networkProxy: z.boolean().default(true),
    /**
     * Domains the proxy lets through without asking (`*.example.com` for subdomains), in addition to
     * the registries the package managers are configured with.
     */
    allowedDomains: z.array(z.string().min(1)).default([]),
    /** The socat executable that bridges the proxy into the sandbox's network namespace. */
    socatPath: z.string().min(1).default('socat'),
  }),
);
export type SandboxSettings = z.infer<ReturnType<typeof sandboxSettingsSchema>>;
export type SandboxSettingsInput = z.input<ReturnType<typeof sandboxSettingsSchema>>;

/**
 * Settings from the environment (KEEL_SANDBOX=off, KEEL_SANDBOX_FAIL_IF_UNAVAILABLE=1, KEEL_BWRAP=path,
 * KEEL_ALLOWED_DOMAINS=a.com,*.b.org allowed without asking, KEEL_SANDBOX_NETWORK=off,
 * KEEL_SANDBOX_DENY_HOME=/home/me: that home's secrets denied too).
 */
export function sandboxSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxSettingsInput {
  const out: { -readonly [K in keyof SandboxSettingsInput]: SandboxSettingsInput[K] } = {};
  if (env.KEEL_SANDBOX && /^(0|off|false|no)$/i.test(env.KEEL_SANDBOX.trim())) out.enabled = false;
  if (
    env.KEEL_SANDBOX_FAIL_IF_UNAVAILABLE &&
    /^(1|on|true|yes)$/i.test(env.KEEL_SANDBOX_FAIL_IF_UNAVAILABLE.trim())
  )
    out.failIfUnavailable = true;
  if (env.KEEL_BWRAP?.trim()) out.bwrapPath = env.KEEL_BWRAP.trim();
  if (env.KEEL_SOCAT?.trim()) out.socatPath = env.KEEL_SOCAT.trim();
  if (env.KEEL_SANDBOX_NETWORK && /^(0|off|false|no)$/i.test(env.KEEL_SANDBOX_NETWORK.trim()))
    out.networkProxy = false;
  const extra = (env.KEEL_ALLOWED_DOMAINS ?? '')
    .split(/[\s,]+/)
    .map((d) => d.trim())
    .filter(Boolean);
  if (extra.length > 0) out.allowedDomains = extra;
  // An eval trial runs `keel run` with a temp HOME of its own; the user's real home (where the
  // secrets are) is named here so its deny list still applies. It only ever adds entries.
  const realHome = env.KEEL_SANDBOX_DENY_HOME?.trim();
  if (realHome && path.isAbsolute(realHome))
    out.denyRead = [...DEFAULT_DENY_READ, ...DEFAULT_DENY_READ.map((entry) => path.join(realHome, entry))];
  return out;
}

/** Absolute form of a deny-list entry. */
export function resolveDenyPath(entry: string, home: string = os.homedir()): string {
  const expanded = entry.startsWith('~/') ? entry.slice(2) : entry;
  return path.isAbsolute(expanded) ? path.normalize(expanded) : path.join(home, expanded);
}
