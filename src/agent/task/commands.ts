import * as os from 'node:os';
import * as path from 'node:path';
import { createAuditLog } from '../safety/audit.ts';
import type { AgentSession, RunOutcome } from '../session/types.ts';
import { scrubEnvironment } from '../tools/bash.ts';
import { INIT_SCRIPT } from './featureList.ts';
import { clip, read } from './files.ts';
import type { TaskDeps } from './harness.ts';

// The commands the harness itself runs: init.sh at each session start and the re-verification of
// passing features. Threat: both come from keel-task/, which lives in the workspace (the repository,
// or a command a session ran, can change them). They run only after the trust room approved the task
// files (harness.ts: assertTaskTrusted; the ledger keeps the versions Keel wrote), and each run gets
// what a Bash call would: the command policy (never-class refused, others ask), a scrubbed
// environment, the OS sandbox (network only after an approved network ask), a timeout.

export interface CommandRun {
  /** False when the policy, the user or a missing required sandbox kept it from running. */
  readonly ran: boolean;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  /** Status and clipped output, or why it did not run. */
  readonly summary: string;
}

/** Why the harness runs a command: its setup script, or re-verifying a feature (named). */
export type HarnessPurpose =
  | { readonly purpose: 'init' }
  | { readonly purpose: 'reverify'; readonly feature: string };

export async function runHarnessCommand(
  deps: TaskDeps,
  command: string,
  why: HarnessPurpose,
  timeoutMs: number,
): Promise<CommandRun> {
  const { workspace, host, signal } = deps;
  // Audited like a Bash call (design §5: every approval and every command), tagged as the harness's.
  const audit = createAuditLog(host.storage, path.join(host.stateDir, 'audit.jsonl'), () => host.clock.now());
  const notRun = (why: string): CommandRun => {
    audit.write({ type: 'policy_block', tool: 'keel task', command, reason: why });
    return { ran: false, exitCode: null, timedOut: false, summary: why };
  };
  const sandbox = host.shell.sandbox?.info;
  const sandboxed = sandbox?.tier === 'bwrap';
  if (sandbox?.tier === 'none' && sandbox.failIfUnavailable)
    return notRun(`Not run: no OS sandbox is available (${sandbox.reason ?? 'unavailable'}).`);
  // Loaded here, as the Bash tool does, so `keel run` loads the command rules on the first command only.
  const { classifyCommand } = await import('../safety/commandPolicy.ts');
  const verdict = classifyCommand(command, { workspaceRoot: workspace, home: os.homedir(), sandboxed });
  if (verdict.decision === 'block' || verdict.decision === 'refuse')
    return notRun(`Not run (${verdict.reason}).`);
  if (verdict.decision === 'ask') {
    const subject = why.purpose === 'init' ? INIT_SCRIPT : why.feature;
    const decision = await host.approvals.ask(
      {
        kind: 'command',
        title:
          why.purpose === 'init' ? `Run ${subject} (long task setup)` : `Re-verify ${subject} (long task)`,
        detail: `${command}\n\nNeeds approval because: ${verdict.reason}`,
        risk: verdict.risk,
        message: { id: 'task_command', purpose: why.purpose, subject, command, reason: verdict.reason },
      },
      signal,
    );
    audit.write({ type: 'approval_decision', tool: 'keel task', command, decision });
    if (decision === 'deny') return notRun('Not run: the user denied it.');
  }
  const result = await host.shell.run({
    command,
    cwd: workspace,
    env: scrubEnvironment(process.env),
    timeoutMs,
    sandbox: verdict.decision === 'ask' && verdict.approvalKind === 'network' ? 'network' : 'on',
    ...(signal ? { signal } : {}),
  });
  audit.write({
    type: 'command',
    tool: 'keel task',
    command,
    exit_code: result.exitCode,
    duration_ms: result.durationMs,
    timed_out: result.timedOut,
    aborted: result.aborted,
    sandboxed: result.sandboxed === true,
  });
  const output = clip(`${result.stdout}${result.stderr ? `\n${result.stderr}` : ''}`, 1500);
  const status = result.timedOut ? 'timed out' : `exit code ${result.exitCode}`;
  return {
    ran: !result.aborted,
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    summary: `${status}${output ? `\n${output}` : ''}`,
  };
}

export async function runInitScript(deps: TaskDeps): Promise<string> {
  if (read(deps.workspace, INIT_SCRIPT) === undefined) return `${INIT_SCRIPT} does not exist.`;
  const run = await runHarnessCommand(
    deps,
    `sh ${INIT_SCRIPT}`,
    { purpose: 'init' },
    deps.initTimeoutMs ?? 120_000,
  );
  return run.summary;
}

/** The session's prompt, aborted when the task is stopped (also if that happened before it began). */
export async function promptUnlessStopped(
  session: AgentSession,
  prompt: string,
  signal: AbortSignal | undefined,
): Promise<RunOutcome> {
  if (signal?.aborted) return { status: 'aborted', finalText: '', error: 'the task was stopped' };
  const onAbort = () => session.abort('the task was stopped');
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await session.prompt(prompt);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
