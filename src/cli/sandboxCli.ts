import type { Host } from '../agent/host.ts';
import { probeSandbox } from '../agent/safety/sandbox/probe.ts';
import {
  DEFAULT_DENY_READ,
  type SandboxSettingsInput,
  sandboxSettingsFromEnv,
  sandboxSettingsSchema,
} from '../agent/safety/sandbox/settings.ts';

// The CLI's side of the OS sandbox: settings from `--sandbox on|off|required` and KEEL_* variables,
// the one-line notice `keel run` prints first on stderr, and `keel doctor`.

export type SandboxFlag = 'on' | 'off' | 'required';

export function sandboxSettings(
  flag: SandboxFlag | undefined,
  env: NodeJS.ProcessEnv = process.env,
): SandboxSettingsInput {
  const fromEnv = sandboxSettingsFromEnv(env);
  if (flag === 'off') return { ...fromEnv, enabled: false };
  if (flag === 'required') return { ...fromEnv, enabled: true, failIfUnavailable: true };
  if (flag === 'on') return { ...fromEnv, enabled: true };
  return fromEnv;
}

/** First line on stderr: the tier, and what to do when there is none. */
export function sandboxNotice(host: Host): string | undefined {
  const info = host.shell.sandbox?.info;
  if (!info) return undefined;
  if (info.tier !== 'none') return `keel: ${info.summary}`;
  const refuse = info.failIfUnavailable ? ' Commands will NOT run (--sandbox required).' : '';
  return `keel: ${info.summary}${refuse}${info.fix ? ` Fix: ${info.fix}` : ''}`;
}

/** `keel doctor`: what confinement is available here, and why not. */
export function doctorReport(flag: SandboxFlag | undefined): { text: string; ok: boolean } {
  const settings = sandboxSettingsSchema.parse(sandboxSettings(flag));
  const status = probeSandbox({ bwrapPath: settings.bwrapPath, enabled: settings.enabled });
  const lines = [`Sandbox: ${status.tier === 'none' ? 'unavailable' : status.tier}`, `  ${status.summary}`];
  for (const check of status.checks)
    lines.push(`  [${check.ok ? 'ok' : 'no'}] ${check.name}: ${check.detail}`);
  if (status.fix) lines.push(`  Fix: ${status.fix}`);
  lines.push(
    `  Fail if unavailable: ${settings.failIfUnavailable ? 'yes' : 'no'}`,
    `  Unreadable inside the sandbox: ${settings.denyRead.length === DEFAULT_DENY_READ.length ? 'the default secrets list' : 'a custom list'} (${settings.denyRead.slice(0, 6).join(', ')}, …)`,
    '  Network: off inside the sandbox; commands that need it ask and then run sandboxed with the network.',
    '  Domain allow-list proxy: not built; macOS sandbox-exec: not built; native Windows: unsandboxed (use WSL2).',
  );
  return { text: lines.join('\n'), ok: status.tier !== 'none' };
}
