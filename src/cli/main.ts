import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { rgPath } from '@vscode/ripgrep';
import { z } from 'zod';
import type { ApprovalsPort, Host, McpPort } from '../agent/host.ts';
import { createNodeHost } from '../agent/node/nodeHost.ts';
import { DEMO_MODEL } from '../agent/model/pricing.ts';
import { createPolicyApprovals } from '../agent/safety/approvals.ts';
import { parseDisabledSources, RULE_SOURCES, type RuleSourceName } from '../agent/projectRules/sources.ts';
import type { RunOutcome } from '../agent/session/types.ts';
import {
  type CliArgs,
  parseCli,
  type RunArgs,
  type TaskArgs,
  type ToolArgs,
  USAGE,
  UsageError,
} from './args.ts';
import { demoFailures, startDemo, startDemoWorkspace, workspaceDiff } from './demo.ts';
import { effortOption } from './effort.ts';
import { mentionedFiles } from './mentions.ts';
import { progressLine } from './render.ts';
import { doctorReport, type SandboxFlag, sandboxNotice, sandboxSettings } from './sandboxCli.ts';
import { onSignals, signalExitCode } from './signals.ts';
import { listTools, runToolOnce } from './toolCommand.ts';
import { createTtyApprovals } from './ttyApprovals.ts';

// Cold start: each command imports what only it needs (sessions and the model SDK for run/task, the
// checkpoint store for restore, …) with `await import()`, which the CLI build puts in separate chunks.
// A CLI process parses each schema a handful of times: compiling zod's fast path (new Function per
// object schema) costs more than it saves, and at start-up it is on the critical path.
z.config({ jitless: true });

const EXIT = { finished: 0, failed: 1, usage: 2, aborted: 130 } as const;

// `keel … | head -n 1`: once the reader has gone, stdout's EPIPE ends the run quietly (exit 0, as
// other Unix tools do) — the session is aborted so its processes stop and its log is closed.
// stderr (progress, notices) may go first (`keel run 2>&1 | head`): its EPIPE must not crash keel
// before its clean-up runs (jobs, the demo's scratch repo); the run goes on, stdout decides.
let stdoutGone = false;
let onStdoutGone: (() => void) | undefined;
let watchingOutput = false;
const readerGone = (error: NodeJS.ErrnoException) =>
  error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED';
function watchOutput(): void {
  if (watchingOutput) return;
  watchingOutput = true;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (!readerGone(error)) throw error;
    stdoutGone = true;
    onStdoutGone?.();
  });
  process.stderr.on('error', (error: NodeJS.ErrnoException) => {
    if (!readerGone(error)) throw error;
  });
}
function out(text: string): void {
  if (!stdoutGone) process.stdout.write(text);
}
const DEFAULT_MODEL = 'claude-sonnet-4-6';
const DEFAULT_JOB_WAIT_S = 30;

/** Keel's version, from the package.json next to the bundle (read only when asked). */
function keelVersion(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const file of [path.join(here, '..', 'package.json'), path.join(here, '..', '..', 'package.json')]) {
    try {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'keel' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // Not here.
    }
  }
  return 'unknown (no package.json next to the CLI)';
}

/** dist/cli.mjs sits one level below the repository (or package) root that holds skills/. */
function bundledSkillsDir(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return [path.join(here, '..', 'skills'), path.join(here, '..', '..', 'skills')].find((d) =>
    fs.existsSync(d),
  );
}

function approvalsFor(policy: RunArgs['approve']): ApprovalsPort {
  if (policy) return createPolicyApprovals(policy);
  if (process.stdin.isTTY) return createTtyApprovals();
  // Said to the model and printed with the refusal: the user was never asked, and this is how to allow.
  return createPolicyApprovals(
    'never',
    'keel has no terminal to ask on (stdin is not a TTY), so every approval request is refused; run it on a terminal to be asked, or pass --approve all to allow what asks (the never-run list stays blocked)',
  );
}

function workspaceDir(dir: string | undefined): string {
  const resolved = path.resolve(dir ?? process.cwd());
  if (!fs.existsSync(resolved) || !fs.statSync(resolved).isDirectory())
    throw new UsageError(`Workspace is not a directory: ${resolved}`);
  return resolved;
}

/** KEEL_CHECKPOINT_BUDGET_MB caps the disk use of per-prompt checkpoints (default 512 MB). */
function checkpointBudget(): { checkpoints?: { budgetBytes: number } } {
  const mb = Number(process.env.KEEL_CHECKPOINT_BUDGET_MB);
  return Number.isFinite(mb) && mb > 0 ? { checkpoints: { budgetBytes: mb * 1024 * 1024 } } : {};
}

/**
 * KEEL_RULES_DISABLED=claude,cursor: rules-file sources not read (the CLI's `keel.rules.disabled`).
 * An unknown name is a warning, not an error: a typo must not stop a CI run.
 */
function rulesSettings(): { rulesDisabled?: RuleSourceName[] } {
  const raw = process.env.KEEL_RULES_DISABLED;
  if (!raw) return {};
  const { disabled, unknown } = parseDisabledSources(raw);
  if (unknown.length > 0) {
    process.stderr.write(
      `keel: warning: KEEL_RULES_DISABLED names unknown sources (${unknown.join(', ')}); known: ${RULE_SOURCES.join(', ')}\n`,
    );
  }
  return { rulesDisabled: disabled };
}

function makeHost(
  workspace: string,
  approvals: ApprovalsPort,
  sandbox?: SandboxFlag,
  mcp?: McpPort,
  allowDomains: readonly string[] = [],
): Host {
  const host = createNodeHost({
    workspace,
    approvals,
    // KEEL_RIPGREP_PATH: another ripgrep (a system one), or '' for none (Grep's plain scan answers).
    ripgrepPath: process.env.KEEL_RIPGREP_PATH ?? rgPath,
    sandbox: sandboxSettings(sandbox, process.env, allowDomains),
  });
  return mcp ? { ...host, mcp } : host;
}

async function run(args: RunArgs): Promise<number> {
  // `--demo --workspace DIR` works in DIR (and says so); only without a folder is a scratch repo made.
  const demoWorkspace = args.demo && !args.workspace ? await startDemoWorkspace() : undefined;
  const { createAgentSession, createCliMcpPort, attachTelemetry, prepareRun, sessionAction } = await import(
    './commands.ts'
  );
  const demo = args.demo
    ? await startDemo(demoWorkspace ?? { workspace: workspaceDir(args.workspace) })
    : undefined;
  const demoCheck = demo ? demoFailures() : undefined;
  let stopJobs: (() => Promise<void>) | undefined;
  try {
    const workspace = demo && !args.workspace ? demo.workspace : workspaceDir(args.workspace);
    const prompt = args.prompt || (args.demo ? 'Give me a quick tour of this project.' : 'Continue.');
    // A slash command, --agent/--plan, --from-plan: decided before anything starts (errors are usage errors).
    const start = prepareRun(args, workspace, prompt);
    if (start.kind === 'done') {
      process.stderr.write(`${start.message}\n`);
      return EXIT.finished;
    }
    const host = makeHost(
      workspace,
      approvalsFor(args.approve),
      args.sandbox,
      createCliMcpPort(args, workspace),
      args.allowDomain,
    );
    const notice = sandboxNotice(host);
    if (notice) process.stderr.write(`${notice}\n`);
    // The demo's answers come from the emulator, not from a model: its id and its $0 cost say so.
    const model = demo ? DEMO_MODEL : (args.model ?? process.env.KEEL_MODEL ?? DEFAULT_MODEL);
    if (!demo && !args.contextWindow && !/claude/i.test(model)) {
      // Keel knows Claude models' windows; for any other model the 16K/32K guards need the real figure.
      process.stderr.write(
        `keel: warning: the context window of ${model} is unknown; assuming 200000 tokens. Pass --context-window TOKENS for a smaller model.\n`,
      );
    }
    const session = createAgentSession({
      host,
      model,
      fallbackModels: args.fallbackModels,
      ...(bundledSkillsDir() ? { bundledSkillsDir: bundledSkillsDir() } : {}),
      ...(demo ? { apiKey: 'demo', baseURL: demo.baseURL } : {}),
      ...(args.maxTurns ? { maxTurns: args.maxTurns } : {}),
      ...(args.contextWindow ? { contextWindow: args.contextWindow } : {}),
      ...(args.resume ? { resumeId: args.resume } : {}),
      ...(start.kind === 'prompt' && start.agentName ? { agentName: start.agentName } : {}),
      ...(start.kind === 'prompt' && start.initialTodos ? { initialTodos: start.initialTodos } : {}),
      jobWaitMs: (args.jobWait ?? DEFAULT_JOB_WAIT_S) * 1000,
      ...effortOption(args),
      ...checkpointBudget(),
      ...rulesSettings(),
    });
    stopJobs = () => session.stopJobs();
    let shownError: string | undefined;
    const dimmable = process.stderr.isTTY === true && !process.env.NO_COLOR;
    session.subscribe((event) => {
      demoCheck?.onEvent(event);
      if (event.type === 'error' && !args.json) shownError = event.message;
      if (args.json) out(`${JSON.stringify(event)}\n`);
      else {
        const line = progressLine(event, { color: dimmable });
        if (line) process.stderr.write(`${line}\n`);
      }
    });
    const flushTelemetry = await attachTelemetry(session, model);
    process.stderr.write(
      `keel: session ${session.id} (log: ${path.relative(process.cwd(), session.logPath) || session.logPath})\n`,
    );
    let interrupts = 0;
    const onSigint = () => {
      interrupts++;
      if (interrupts > 1) {
        // Aborting the jobs sends their process trees SIGTERM at once, before we go.
        void session.stopJobs();
        process.exit(EXIT.aborted);
      }
      process.stderr.write('\nkeel: aborting (Ctrl-C again to exit at once)\n');
      session.abort('interrupted by the user');
    };
    process.on('SIGINT', onSigint);
    // A supervisor's SIGTERM (`keel eval`'s timeout, a service manager) or a closed terminal's SIGHUP
    // ends the run as Ctrl-C does, then unwinds: jobs and commands stopped, MCP servers shut down, the
    // sandbox's and the demo's temp folders removed (the default action would skip all of that).
    let terminatedBy: NodeJS.Signals | undefined;
    const onTerminate = (signal: NodeJS.Signals) => {
      terminatedBy ??= signal;
      session.abort(`terminated (${signal})`);
      void session.stopJobs();
      // An unwind that hangs must not keep keel alive; the 'exit' clean-up still runs.
      setTimeout(() => process.exit(signalExitCode(signal)), 5000).unref();
    };
    const stopListening = onSignals(['SIGTERM', 'SIGHUP'], onTerminate);
    onStdoutGone = () => session.abort('stdout was closed');
    const mentions = mentionedFiles(prompt, workspace);
    let outcome: RunOutcome = { status: 'finished', finalText: '' };
    try {
      if (start.kind === 'session') await sessionAction(start, session, host.stateDir, out);
      else {
        outcome = await session.prompt(start.prompt, {
          ...start.options,
          ...(mentions.length ? { mentions } : {}),
        });
        // The session ends here: durable facts go to MEMORY.md (never blocks the exit for long, never fails it).
        if (outcome.status === 'finished') await session.consolidateMemory();
      }
    } finally {
      // MCP servers end with the session, before the process does.
      await session.mcp?.shutdown();
    }
    process.off('SIGINT', onSigint);
    stopListening();
    await flushTelemetry();
    onStdoutGone = undefined;
    if (terminatedBy) return signalExitCode(terminatedBy);
    if (stdoutGone) return EXIT.finished;
    if (!args.json && outcome.finalText) out(`${outcome.finalText}\n`);
    if (demo && !args.workspace && !args.json) {
      // The scratch workspace goes away with the run: show what the demo changed in it.
      const diff = workspaceDiff(workspace);
      if (diff) out(`\n${diff}`);
    }
    // Said once: the progress line (✖) already gave this very message.
    if (outcome.error && outcome.error !== shownError)
      process.stderr.write(`keel: ${outcome.status}: ${outcome.error}\n`);
    const demoFailed = demoCheck?.failed() ?? [];
    if (outcome.status === 'finished' && demoFailed.length > 0) {
      process.stderr.write(`keel: the demo did not go as scripted: ${demoFailed.join(', ')}\n`);
      return EXIT.failed;
    }
    return outcome.status === 'finished'
      ? EXIT.finished
      : outcome.status === 'aborted'
        ? EXIT.aborted
        : EXIT.failed;
  } finally {
    // No job outlives `keel run`, however it ends (finished, Ctrl-C, error).
    await stopJobs?.();
    await demo?.close();
  }
}

async function task(args: TaskArgs): Promise<number> {
  const { createAgentSession, runTaskCommand } = await import('./commands.ts');
  const workspace = fs.realpathSync(workspaceDir(args.workspace));
  const host = makeHost(workspace, approvalsFor(args.approve));
  const model = args.model ?? process.env.KEEL_MODEL ?? DEFAULT_MODEL;
  const skills = bundledSkillsDir();
  return runTaskCommand(args, {
    workspace,
    host,
    // Each call is a NEW session: fresh context, its own log (seed 003).
    createSession: (extra) =>
      createAgentSession({
        host,
        model,
        fallbackModels: args.fallbackModels,
        ...(skills ? { bundledSkillsDir: skills } : {}),
        ...(args.maxTurns ? { maxTurns: args.maxTurns } : {}),
        ...effortOption(args),
        ...checkpointBudget(),
        ...rulesSettings(),
        ...extra,
      }),
  });
}

async function tool(args: ToolArgs): Promise<number> {
  const host = makeHost(
    workspaceDir(args.workspace),
    approvalsFor(args.approve),
    args.sandbox,
    undefined,
    args.allowDomain,
  );
  const skillsDir = bundledSkillsDir();
  if (!args.name) {
    out(`${listTools(host, skillsDir ? { bundledSkillsDir: skillsDir } : {})}\n`);
    out('\nRun one: keel tool NAME \'JSON-INPUT\', e.g. keel tool Read \'{"path":"README.md"}\'\n');
    return EXIT.finished;
  }
  const result = await runToolOnce(
    host,
    args.name,
    args.input,
    skillsDir ? { bundledSkillsDir: skillsDir } : {},
  );
  out(`${JSON.stringify(result)}\n`);
  return result.status === 'error' ? EXIT.failed : EXIT.finished;
}

async function writeTraceHtml(sessionLog: string, out: string): Promise<number> {
  const { traceHtml } = await import('../agent/trace/html.ts');
  const html = await traceHtml(sessionLog);
  fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  fs.writeFileSync(out, html);
  process.stderr.write(`keel: trace written to ${out}\n`);
  return EXIT.finished;
}

export async function main(argv: readonly string[]): Promise<number> {
  watchOutput();
  const code = await dispatch(argv);
  return stdoutGone ? EXIT.finished : code;
}

async function dispatch(argv: readonly string[]): Promise<number> {
  let args: CliArgs;
  try {
    args = parseCli(argv);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`keel: ${error.message}\n\n${USAGE}\n`);
      return EXIT.usage;
    }
    throw error;
  }
  try {
    switch (args.command) {
      case 'help':
        out(`${USAGE}\n`);
        return EXIT.finished;
      case 'version':
        out(`keel ${keelVersion()}\n`);
        return EXIT.finished;
      case 'run':
        return await run(args);
      case 'tool':
        return await tool(args);
      case 'eval': {
        const { evalCommand } = await import('./commands.ts');
        return await evalCommand(args);
      }
      case 'doctor': {
        const report = doctorReport(args.sandbox);
        process.stdout.write(`${report.text}\n`);
        return report.ok ? EXIT.finished : EXIT.failed;
      }
      case 'memory': {
        const { memoryCommand } = await import('./commands.ts');
        return await memoryCommand(args, workspaceDir(args.workspace), (t) => process.stdout.write(t));
      }
      case 'trust': {
        const { trustCommand } = await import('./commands.ts');
        return await trustCommand(args, workspaceDir(args.workspace), {
          out: (t) => out(t),
          err: (t) => process.stderr.write(t),
          interactive: process.stdin.isTTY === true && process.stderr.isTTY === true,
        });
      }
      case 'sessions': {
        const { sessionsCommand } = await import('./commands.ts');
        return sessionsCommand(
          args,
          workspaceDir(args.workspace),
          (t) => process.stdout.write(t),
          (t) => process.stderr.write(t),
        );
      }
      case 'task':
        return await task(args);
      case 'commands':
      case 'agents': {
        const { listingCommand } = await import('./commands.ts');
        return listingCommand(args, workspaceDir(args.workspace), out, (t) => process.stderr.write(t));
      }
      case 'restore': {
        const { runRestore } = await import('./commands.ts');
        return runRestore(args, workspaceDir(args.workspace), () => Date.now());
      }
      case 'trace': {
        const { resolveSessionLog, traceMetrics } = await import('./commands.ts');
        const stateDir = path.join(workspaceDir(args.workspace), '.keel');
        if (args.html) return await writeTraceHtml(resolveSessionLog(args.target, stateDir), args.html);
        out(`${JSON.stringify(traceMetrics(args.target, stateDir), null, 2)}\n`);
        return EXIT.finished;
      }
    }
  } catch (error) {
    // Usage, session-config, restore, task, feature-list and git errors all carry a message written
    // for the user; only a usage error also changes the exit code.
    process.stderr.write(`keel: ${error instanceof Error ? error.message : String(error)}\n`);
    return error instanceof UsageError ? EXIT.usage : EXIT.failed;
  }
}
