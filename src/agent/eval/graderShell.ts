import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SandboxDenial, SandboxInfo, ShellPort } from '../host.ts';
import { createNodeShell } from '../node/nodeShell.ts';
import { classifyCommand, verdictFrom } from '../safety/commandPolicy.ts';
import type { SandboxStatus } from '../safety/sandbox/probe.ts';
import { probeSandboxCached } from '../safety/sandbox/probeCache.ts';
import { createSandbox, type Sandbox } from '../safety/sandbox/sandbox.ts';
import { type SandboxSettingsInput, sandboxSettingsSchema } from '../safety/sandbox/settings.ts';
import { graderEnvironment } from './graderEnv.ts';
import type { EvalSuite } from './schema.ts';

// Where a suite's commands run. A suite is repository content, so its graders are treated like the
// Bash tool's commands: the session's OS sandbox machinery (bubblewrap + seccomp, the same wrap()),
// confined to the trial's copy and the trial's home, secrets on the deny list unreadable, no network
// unless the grader declares it (then only through Keel's domain proxy, unlisted domains refused:
// there is nobody to ask), and an allow-list environment. The command policy stays the advisor: its
// never-run list is refused, and without a sandbox whatever it would ask about is not run at all.

export interface GraderRun {
  readonly code: number | null;
  readonly output: string;
  readonly timedOut: boolean;
  readonly sandboxed: boolean;
  readonly denials: readonly SandboxDenial[];
  /** Not run, and why (the command policy, or a required sandbox that is missing). */
  readonly refused?: string;
}

export interface TrialGraderShell {
  run(
    command: string,
    options: { timeoutMs: number; network: boolean; signal?: AbortSignal },
  ): Promise<GraderRun>;
  dispose(): void;
}

export interface TrialScope {
  /** The trial's copy of the fixture (canonical). */
  readonly workspace: string;
  /** The trial's own home (canonical). */
  readonly home: string;
  readonly task: string;
  readonly trial: number;
  readonly declared?: Readonly<Record<string, string>>;
}

export interface GraderShell {
  readonly info: SandboxInfo;
  /** One line for stderr: how graders are confined here (or that they are not). */
  notice(): string;
  forTrial(scope: TrialScope): TrialGraderShell;
}

/**
 * The command policy's word on a grader. Its "use the dedicated tool" refusals are for the model
 * (graders have no tools) and are set aside; what else it finds still counts.
 */
export function graderVerdict(
  command: string,
  workspace: string,
  sandboxed: boolean,
): { run: true } | { run: false; reason: string } {
  const first = classifyCommand(command, { workspaceRoot: workspace, home: os.homedir(), sandboxed });
  // A verdict without findings (unparsable, too long, NUL byte) stands as it is.
  const verdict =
    first.findings.length === 0 ? first : verdictFrom(first.findings.filter((f) => f.class !== 'use_tool'));
  if (verdict.decision === 'block' || verdict.decision === 'refuse')
    return { run: false, reason: `refused by the command policy: ${verdict.reason}` };
  if (verdict.decision === 'ask' && !sandboxed)
    return {
      run: false,
      reason: `not run: the command policy would ask first (${verdict.reason}) and there is no OS sandbox to confine it`,
    };
  return { run: true };
}

/** Graders the policy refuses whatever the trial does: reported before any trial starts. */
export function graderPolicyProblems(suite: EvalSuite, sandboxed: boolean): string[] {
  const problems: string[] = [];
  for (const task of suite.tasks)
    task.graders.forEach((g, i) => {
      if (g.type !== 'command') return;
      const v = graderVerdict(g.run, task.fixtureDir, sandboxed);
      if (!v.run && v.reason.startsWith('refused'))
        problems.push(`${task.file} (task "${task.id}"): graders[${i}].run: ${v.reason}`);
    });
  return problems;
}

export interface GraderShellOptions {
  readonly settings: SandboxSettingsInput;
  /** Where PATH and the locale come from (nothing else is taken from it). */
  readonly parentEnv?: Readonly<Record<string, string | undefined>>;
  readonly probeCacheFile?: string;
  /** A status probed earlier (tests). */
  readonly status?: SandboxStatus;
}

const OUTPUT_CAP = 64 * 1024;

export function createGraderShell(options: GraderShellOptions): GraderShell {
  const settings = sandboxSettingsSchema().parse(options.settings);
  const status =
    options.status ??
    probeSandboxCached({
      bwrapPath: settings.bwrapPath,
      enabled: settings.enabled,
      ...(options.probeCacheFile ? { cacheFile: options.probeCacheFile } : {}),
    });
  const sandboxed = status.tier === 'bwrap';
  const info: SandboxInfo = {
    tier: status.tier,
    summary: status.summary,
    ...(status.reason ? { reason: status.reason } : {}),
    ...(status.fix ? { fix: status.fix } : {}),
    ...(settings.failIfUnavailable ? { failIfUnavailable: true } : {}),
  };
  const parentEnv = options.parentEnv ?? process.env;
  return {
    info,
    notice() {
      if (sandboxed)
        return "keel: eval graders run in the OS sandbox (bubblewrap + seccomp): writes only in the trial's copy and home, secrets unreadable, no network unless a grader declares it (then only through Keel's domain proxy), an allow-list environment without keys or tokens.";
      const refuse = info.failIfUnavailable
        ? ' Command graders will NOT run (the sandbox is required).'
        : ' Commands the policy would ask about are not run.';
      return `keel: eval graders run WITHOUT an OS sandbox (${info.reason ?? 'unavailable'}): only a scrubbed environment and the command policy protect this machine.${refuse}${info.fix ? ` Fix: ${info.fix}` : ''}`;
    },
    forTrial(scope) {
      const made: Sandbox[] = [];
      const shells = new Map<'offline' | 'proxied', ShellPort>();
      const shellFor = (network: boolean): ShellPort => {
        const kind = network ? 'proxied' : 'offline';
        let shell = shells.get(kind);
        if (!shell) {
          let sandbox: Sandbox | undefined;
          if (sandboxed) {
            // No stateDir: the trial's `.keel/` (read-only inside anyway) must not widen the proxy's
            // allow-list with a network file the trial's agent wrote. No approvals: nobody to ask.
            sandbox = createSandbox({
              settings: { ...settings, networkProxy: network && settings.networkProxy },
              roots: [scope.workspace, scope.home],
              status,
            });
            made.push(sandbox);
          }
          shell = createNodeShell({ maxBufferBytes: OUTPUT_CAP, ...(sandbox ? { sandbox } : {}) });
          shells.set(kind, shell);
        }
        return shell;
      };
      const tmpDir = path.join(scope.home, '.tmp');
      return {
        async run(command, runOptions) {
          const none = { code: null, output: '', timedOut: false, sandboxed, denials: [] };
          if (!sandboxed && info.failIfUnavailable)
            return {
              ...none,
              refused: `not run: no OS sandbox is available (${info.reason ?? 'unavailable'}) and one is required`,
            };
          const verdict = graderVerdict(command, scope.workspace, sandboxed);
          if (!verdict.run) return { ...none, refused: verdict.reason };
          fs.mkdirSync(tmpDir, { recursive: true });
          const env = graderEnvironment(parentEnv, {
            home: scope.home,
            tmpDir,
            task: scope.task,
            trial: scope.trial,
            ...(scope.declared ? { declared: scope.declared } : {}),
          });
          const r = await shellFor(runOptions.network).run({
            command,
            cwd: scope.workspace,
            env,
            timeoutMs: runOptions.timeoutMs,
            ...(runOptions.signal ? { signal: runOptions.signal } : {}),
            // Never 'network' (a direct route out): a grader that declares the network gets the
            // sandbox whose only way out is the proxy.
            sandbox: 'on',
          });
          return {
            code: r.exitCode,
            output: `${r.stdout}${r.stderr}`,
            timedOut: r.timedOut,
            sandboxed: r.sandboxed === true,
            denials: r.denials ?? [],
          };
        },
        dispose() {
          for (const sandbox of made) sandbox.dispose();
        },
      };
    },
  };
}
