import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import type { SandboxDenial } from '../host.ts';
import { refusal } from '../safety/approvals.ts';
import type { CommandVerdict } from '../safety/commandPolicy.ts';
import { renderDenials, SANDBOX_SUGGESTION } from '../safety/sandbox/denials.ts';
import { autoStage } from './bashAuto.ts';
import { approvalRequest, outsideSandboxRequest } from './bashApproval.ts';
import { limitOutput } from './output.ts';
import { fail, ok, partial, type ToolContext, type ToolDefinition, type ToolResult } from './protocol.ts';

// Bash: the fallback tool, never the main road. Every command is classified by the command policy
// first (a real shell parser, every sub-command judged); only then does it run, in the workspace,
// with a scrubbed environment, a timeout, and a process-tree kill on abort.

export const BASH_DEFAULT_TIMEOUT_MS = 120_000;
export const BASH_MAX_TIMEOUT_MS = 600_000;

/** A background job's default life (timeout_ms overrides it). */
export const JOB_DEFAULT_TIMEOUT_MS = 3_600_000;

export const bashInputSchema = lazy(() =>
  z.object({
    command: z.string().min(1),
    timeout_ms: z.number().int().positive().max(BASH_MAX_TIMEOUT_MS).optional(),
    description: z.string().max(200).optional().describe('5-10 words for the user'),
    run_in_background: z.boolean().optional(),
    notify_on: z.string().max(200).optional().describe('Regex: also notify on a matching line'),
    // A workspace folder's name or a path inside one; the system prompt says so when there are several.
    cwd: z.string().min(1).max(4096).optional(),
    outside_sandbox: z
      .boolean()
      .optional()
      .describe('After SANDBOX_DENIED, only if essential: run once unconfined (asks the user)'),
  }),
);
export type BashInput = z.infer<ReturnType<typeof bashInputSchema>>;

export interface BashData {
  readonly command: string;
  readonly exit_code: number | null;
  readonly signal: string | null;
  /** As shown to the model (head+tail when long; the full text is in the spill file). */
  readonly stdout: string;
  readonly stderr: string;
  readonly timed_out: boolean;
  readonly stdout_file?: string;
  readonly stderr_file?: string;
  /** Ran inside the OS sandbox. */
  readonly sandboxed?: boolean;
  /** What the sandbox refused (SANDBOX_DENIED). */
  readonly denials?: readonly SandboxDenial[];
}

const DESCRIPTION = `Run a bash command in the workspace root. The FALLBACK tool: tests, builds, linters, git, package scripts.
Refused: reading, listing, searching or editing files (use the file tools), interactive programs. Network, delete and overwrite commands ask the user; sudo, rm -rf / etc. are blocked.
Timeout ${BASH_DEFAULT_TIMEOUT_MS / 1000} s; long output is cut and saved to a file. Servers, watchers, slow builds: run_in_background (then Job).
Examples: {"command":"npm test"} · {"command":"npm run dev","run_in_background":true}`;

// The environment commands see lives with the other safety rails (hooks, task verify and the
// extension's git probes use it too); re-exported here for existing importers.
import { scrubEnvironment } from '../safety/commandEnv.ts';

export { scrubEnvironment };

// ---------- rendering ----------

const TAG_LIKE = /<(\s*\/?\s*)(untrusted[-_\s]*data|command[-_\s]*output|job[-_\s]*notice)/gi;

function wrapOutput(stream: 'stdout' | 'stderr', text: string): string {
  if (text.length === 0) return `(no ${stream})`;
  // Output cannot close its wrapper or fake one.
  const body = text.replace(TAG_LIKE, '&lt;$1$2');
  const newline = body.endsWith('\n') ? '' : '\n';
  return `<command-output source="bash" stream="${stream}" trust="untrusted">\n${body}${newline}</command-output>`;
}

const DENIED_SUGGESTION =
  'Do not retry this command or a variant of it. Use a dedicated tool if one fits, or explain to the user what you wanted to run and why.';

function policyFailure(command: string, verdict: CommandVerdict, ctx: ToolContext): ToolResult {
  ctx.audit({
    type: 'policy_block',
    command,
    decision: verdict.decision,
    class: verdict.class,
    reason: verdict.reason,
  });
  if (verdict.decision === 'block') {
    return fail(
      'BLOCKED_BY_POLICY',
      `Blocked: ${verdict.reason}. This command is never run, with or without approval.`,
      'Do not try to work around this block. If the task truly needs it, tell the user to run it themselves.',
      { command, class: verdict.class },
    );
  }
  if (verdict.findings.length === 0) {
    return fail(
      'INVALID_PARAM',
      `Not run: ${verdict.reason}.`,
      verdict.suggestion ?? 'Fix the command and try again.',
      { command },
    );
  }
  return fail(
    'BLOCKED_BY_POLICY',
    `Refused: ${verdict.reason}.`,
    verdict.suggestion ?? 'Use a dedicated tool, or a non-interactive form of the command.',
    { command, class: verdict.class },
  );
}

/**
 * `cwd`, through the path guard like any tool path (a folder name, `api/src`, or an absolute path
 * inside any workspace folder); it must be an existing directory. Not given: the first folder.
 */
function runFolder(
  input: BashInput,
  primary: string,
  ctx: ToolContext,
): { ok: true; cwd: string; root: string } | { ok: false; failure: ToolResult } {
  if (input.cwd === undefined) return { ok: true, cwd: primary, root: primary };
  const resolved = ctx.guard.resolve(input.cwd);
  if (!resolved.ok) {
    return {
      ok: false,
      failure: fail(resolved.error.code, resolved.error.message, resolved.error.suggestion, {
        cwd: input.cwd,
      }),
    };
  }
  let isDir = false;
  try {
    isDir = fs.statSync(resolved.path).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) {
    return {
      ok: false,
      failure: fail(
        'INVALID_PARAM',
        `cwd is not a folder: ${JSON.stringify(input.cwd)}`,
        'Pass an existing folder inside a workspace folder, or leave cwd out.',
        { cwd: input.cwd },
      ),
    };
  }
  const root = ctx.guard.roots.includes(resolved.root) ? resolved.root : primary;
  return { ok: true, cwd: resolved.path, root };
}

async function execute(input: BashInput, ctx: ToolContext): Promise<ToolResult<BashData>> {
  const started = ctx.host.clock.now();
  const primary = ctx.host.workspace.roots[0];
  if (primary === undefined) {
    return fail(
      'UNAVAILABLE',
      'No workspace folder is open.',
      'Open a folder first.',
    ) as ToolResult<BashData>;
  }
  const where = runFolder(input, primary, ctx);
  if (!where.ok) return where.failure as ToolResult<BashData>;
  // The folder the command runs in, and the workspace folder it belongs to (the policy's root).
  const { cwd, root } = where;
  // Windows line endings: bash would keep the \r in every word; run (and judge) the Unix form.
  const command = input.command.replace(/\r\n/g, '\n');
  const sandbox = ctx.host.shell.sandbox?.info;
  const sandboxed = sandbox?.tier === 'bwrap';
  if (sandbox?.tier === 'none' && sandbox.failIfUnavailable) {
    return fail(
      'UNAVAILABLE',
      `Not run: no OS sandbox is available (${sandbox.reason ?? 'unavailable'}) and the user requires one (keel.sandbox.failIfUnavailable).`,
      'Do the task with the other tools, or tell the user the command that is needed.',
      { command },
    ) as ToolResult<BashData>;
  }
  const outside = sandboxed && input.outside_sandbox === true;
  // The command policy (and the shell parser under it) loads with the first command, not at start-up.
  const { classifyCommand } = await import('../safety/commandPolicy.ts');
  const verdict = classifyCommand(command, {
    workspaceRoot: root,
    home: os.homedir(),
    sandboxed: sandboxed && !outside,
  });
  if (verdict.decision === 'block' || verdict.decision === 'refuse') {
    return policyFailure(command, verdict, ctx) as ToolResult<BashData>;
  }
  // --approve auto: effect classes first, then the classifier for what they leave (bashAuto.ts).
  const auto =
    verdict.decision === 'ask' && !outside && ctx.host.approvals.auto
      ? await autoStage(command, verdict, ctx)
      : undefined;
  if (auto?.refused) return auto.refused as ToolResult<BashData>;
  if ((verdict.decision === 'ask' && !auto?.allowed) || outside) {
    // Outside the sandbox: one plain-words question for this one run, never remembered.
    const request = outside
      ? outsideSandboxRequest(command, verdict)
      : approvalRequest(command, verdict, input.description, auto?.escalated);
    ctx.audit({
      type: 'approval_request',
      tool: 'Bash',
      command,
      kind: request.kind,
      risk: request.risk,
      reason: verdict.reason,
      ...(outside ? { outside_sandbox: true, title: request.title } : {}),
    });
    const decision = await ctx.host.approvals.ask(request, ctx.signal);
    ctx.audit({
      type: 'approval_decision',
      tool: 'Bash',
      command,
      decision,
      ...(outside ? { outside_sandbox: true } : {}),
    });
    if (ctx.signal.aborted)
      return fail('ABORTED', 'Aborted before the command ran.', 'Wait for the user.') as ToolResult<BashData>;
    if (decision === 'deny') {
      return fail('DENIED_BY_USER', refusal(ctx.host.approvals, `running: ${command}`), DENIED_SUGGESTION, {
        command,
      }) as ToolResult<BashData>;
    }
  }

  // Approved network commands keep the file-system confinement and get the network.
  const sandboxMode = outside
    ? 'off'
    : verdict.decision === 'ask' && verdict.approvalKind === 'network'
      ? 'network'
      : 'on';
  if (input.run_in_background)
    return startJob(input, command, primary, ctx, sandboxMode, cwd) as ToolResult<BashData>;
  const timeoutMs = Math.min(input.timeout_ms ?? BASH_DEFAULT_TIMEOUT_MS, BASH_MAX_TIMEOUT_MS);
  const result = await ctx.host.shell.run({
    command,
    cwd,
    env: scrubEnvironment(process.env),
    timeoutMs,
    signal: ctx.signal,
    onOutput: (chunk) => ctx.update(chunk),
    sandbox: sandboxMode,
  });
  ctx.audit({
    type: 'command',
    command,
    exit_code: result.exitCode,
    duration_ms: result.durationMs,
    timed_out: result.timedOut,
    aborted: result.aborted,
    sandboxed: result.sandboxed === true,
    ...(result.denials?.length ? { sandbox_denied: result.denials } : {}),
  });
  if (result.aborted) {
    return fail(
      'ABORTED',
      'The command was aborted; its process tree was stopped.',
      'Wait for the user before running it again.',
      {
        command,
      },
    ) as ToolResult<BashData>;
  }

  const out = limitOutput(result.stdout, { host: ctx.host, label: 'bash-stdout', toolUseId: ctx.toolUseId });
  const err = limitOutput(result.stderr, { host: ctx.host, label: 'bash-stderr', toolUseId: ctx.toolUseId });
  const status = result.timedOut
    ? `Timed out after ${timeoutMs} ms [TIMEOUT]: the command and its child processes were stopped. Output so far:`
    : result.exitCode === null
      ? `Killed by signal ${result.signal ?? 'unknown'}.`
      : `Exit code: ${result.exitCode}`;
  const text = [
    status,
    'stdout:',
    wrapOutput('stdout', out.text),
    'stderr:',
    wrapOutput('stderr', err.text),
  ].join('\n');
  const data: BashData = {
    command,
    exit_code: result.exitCode,
    signal: result.signal,
    stdout: out.text,
    stderr: err.text,
    timed_out: result.timedOut,
    ...(out.spillPath ? { stdout_file: out.spillPath } : {}),
    ...(err.spillPath ? { stderr_file: err.spillPath } : {}),
    ...(result.sandboxed ? { sandboxed: true } : {}),
    ...(result.denials?.length ? { denials: result.denials } : {}),
  };
  const stats = {
    time_ms: ctx.host.clock.now() - started,
    exit_code: result.exitCode ?? -1,
    stdout_bytes: out.totalBytes,
    stderr_bytes: err.totalBytes,
  };
  const ui = {
    command,
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    class: verdict.class,
    ...(result.sandboxed ? { sandboxed: true } : {}),
    ...(outside ? { outsideSandbox: true } : {}),
    ...(result.denials?.length ? { denials: result.denials } : {}),
  };
  if (result.denials?.length) {
    const message = `The OS sandbox stopped part of this command.\n${renderDenials(result.denials)}\n${text}`;
    return {
      status: 'error',
      data,
      text: message,
      error: { code: 'SANDBOX_DENIED', message, suggestion: SANDBOX_SUGGESTION },
      stats,
      ui,
    } as ToolResult<BashData>;
  }
  const incomplete = result.timedOut || out.truncated || err.truncated;
  return incomplete ? partial(data, text, stats, ui) : ok(data, text, stats, ui);
}

function startJob(
  input: BashInput,
  command: string,
  root: string,
  ctx: ToolContext,
  sandbox: 'on' | 'network' | 'off',
  cwd: string,
): ToolResult {
  if (!ctx.jobs) {
    return fail(
      'UNAVAILABLE',
      'Background commands are not available here.',
      'Run the command in the foreground (without run_in_background).',
    );
  }
  let notifyOn: RegExp | undefined;
  if (input.notify_on !== undefined) {
    try {
      notifyOn = new RegExp(input.notify_on);
    } catch (error) {
      return fail(
        'INVALID_PARAM',
        `notify_on is not a valid regex: ${(error as Error).message}`,
        'Fix the regex, or leave notify_on out.',
      );
    }
  }
  const job = ctx.jobs.start({
    command,
    cwd,
    env: scrubEnvironment(process.env),
    timeoutMs: input.timeout_ms ?? JOB_DEFAULT_TIMEOUT_MS,
    runId: ctx.runId ?? '',
    ...(notifyOn ? { notifyOn } : {}),
    sandbox,
  });
  ctx.audit({ type: 'command', command, background: true, job: job.id });
  const log = path.relative(root, job.logPath);
  return ok(
    { job_id: job.id, command, log },
    `Started background job ${job.id}. You will get a notice when it ends${notifyOn ? ' or prints a matching line' : ''}. Job {"id":"${job.id}","action":"output"} shows new output; "kill" stops it. Log: ${log}`,
    {},
    { command, jobId: job.id, background: true },
  );
}

export function createBashTool(): ToolDefinition<BashInput, BashData> {
  return {
    name: 'Bash',
    description: DESCRIPTION,
    get inputSchema() {
      return bashInputSchema();
    },
    readOnly: false,
    execute,
  };
}
