import type { Host } from '../agent/host.ts';
import { probeProcessTree } from '../agent/node/processTree.ts';
import { findExecutable, probeSandbox } from '../agent/safety/sandbox/probe.ts';
import { allowedDomainsFor } from '../agent/safety/sandbox/domains.ts';
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
  allowDomains: readonly string[] = [],
): SandboxSettingsInput {
  const base = sandboxSettingsFromEnv(env);
  const fromEnv =
    allowDomains.length > 0
      ? { ...base, allowedDomains: [...(base.allowedDomains ?? []), ...allowDomains] }
      : base;
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
  const settings = sandboxSettingsSchema().parse(sandboxSettings(flag));
  const status = probeSandbox({ bwrapPath: settings.bwrapPath, enabled: settings.enabled });
  const proxy =
    status.tier === 'bwrap' &&
    settings.networkProxy &&
    findExecutable(settings.socatPath) !== undefined &&
    findExecutable('nsenter') !== undefined;
  const summary = proxy
    ? status.summary.replace('no network,', "network only through Keel's domain proxy,")
    : status.summary;
  const lines = [`Sandbox: ${status.tier === 'none' ? 'unavailable' : status.tier}`, `  ${summary}`];
  for (const check of status.checks)
    lines.push(`  [${check.ok ? 'ok' : 'no'}] ${check.name}: ${check.detail}`);
  if (status.fix) lines.push(`  Fix: ${status.fix}`);
  lines.push(
    `  Fail if unavailable: ${settings.failIfUnavailable ? 'yes' : 'no'}`,
    `  Unreadable inside the sandbox: ${settings.denyRead.length === DEFAULT_DENY_READ.length ? 'the default secrets list' : 'a custom list'} (${settings.denyRead.slice(0, 6).join(', ')}, …)`,
    status.tier === 'none'
      ? '  Network: unconfined (no sandbox); network commands ask through the command policy.'
      : proxy
        ? `  Network: only through Keel's domain-filtering proxy; allowed without asking: ${allowedDomainsFor({ roots: [process.cwd()] }, settings).join(', ') || '(none: no registry configured, no KEEL_ALLOWED_DOMAINS)'}; others ask.`
        : `  Network: off inside the sandbox (${settings.networkProxy ? `${findExecutable(settings.socatPath) ? 'nsenter' : settings.socatPath} not found: install socat for the domain allow-list` : 'proxy turned off'}); commands that need it ask and then run sandboxed with the network.`,
    '  macOS sandbox-exec: not built; Landlock-only tier: not built; native Windows: unsandboxed (use WSL2).',
    "  Keel's own folder (~/.keel, $KEEL_HOME): always unreadable inside the sandbox, whatever the deny list says.",
    '  What host tools act on later (git hooks/config, .vscode/, .npmrc, .yarnrc*, .cargo/config, …): read-only to commands; new ones removed after each command.',
  );
  // Outside the sandbox (--sandbox off, no sandbox, an approved outside_sandbox run).
  const tree = probeProcessTree({ fresh: true });
  lines.push(`Process-tree cleanup outside the sandbox: ${tree.tier}`, `  ${tree.detail}`);
  for (const check of tree.checks) lines.push(`  [${check.ok ? 'ok' : 'no'}] ${check.name}: ${check.detail}`);
  return { text: lines.join('\n'), ok: status.tier !== 'none' };
}
