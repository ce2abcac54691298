import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DEMO_MODEL } from '../agent/model/pricing.ts';
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
import {
  approvalsFor,
  classifierModelFor,
  bundledSkillsDir,
  checkpointBudget,
  addedRoots,
  makeHost,
  rulesSettings,
  workspaceDir,
} from './cliHost.ts';
import { isStdoutGone, out, setOnStdoutGone, watchOutput } from './cliOutput.ts';
import { demoFailures, startDemo, startDemoWorkspace, workspaceDiff } from './demo.ts';
import { effortOption } from './effort.ts';
import { mentionedFiles, promptImages } from './mentions.ts';
import { progressLine } from './render.ts';
import { doctorReport, sandboxNotice } from './sandboxCli.ts';
import { onSignals, signalExitCode } from './signals.ts';
import { listTools, runToolOnce } from './toolCommand.ts';

// Cold start: each command imports what only it needs (sessions and the model SDK for run/task, the
// checkpoint store for restore, …) with `await import()`, which the CLI build puts in separate chunks.
// A CLI process parses each schema a handful of times: compiling zod's fast path (new Function per
// object schema) costs more than it saves, and at start-up it is on the critical path.
z.config({ jitless: true });

const EXIT = { finished: 0, failed: 1, usage: 2, aborted: 130 } as const;
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
    // `--image FILE` and `@shot.png`: attached as images; a bad one stops here, before a session exists.
    const images = promptImages(args.images, prompt, workspace);
    if (!images.ok) throw new UsageError(images.error);
    const extraRoots = addedRoots(workspace, args.addDirs);
    const host = makeHost(
      workspace,
      approvalsFor(args.approve, await classifierModelFor(args)),
      args.sandbox,
      createCliMcpPort(args, workspace),
      args.allowDomain,
      extraRoots,
    );
    const notice = sandboxNotice(host);
    if (notice) process.stderr.write(`${notice}\n`);
    if (extraRoots.length > 0)
      process.stderr.write(
        `keel: workspace folders: ${[workspace, ...extraRoots].join(', ')} (all writable)\n`,
      );
    // The demo's answers come from the emulator, not from a model: its id and its $0 cost say so.
    const model = demo ? DEMO_MODEL : (args.model ?? process.env.KEEL_MODEL ?? DEFAULT_MODEL);
    // A provider prefix, a key, --api: checked before the session starts (a usage error).
    const choice = demo ? undefined : (await import('./modelChoice.ts')).modelChoice(model, args);
    if (!demo && !args.contextWindow && !/claude|gpt-[45]/i.test(model)) {
      // Keel knows Claude models' windows; for any other model the 16K/32K guards need the real figure.
      process.stderr.write(
        `keel: warning: the context window of ${model} is unknown; assuming 200000 tokens. Pass --context-window TOKENS for a smaller model.\n`,
      );
    }
    const session = createAgentSession({
      host,
      model,
      fallbackModels: args.fallbackModels,
      ...choice,
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
      // An unwind that hangs must not keep keel alive; the 'exit' clean-up still runs. Said, so a
      // user (or a supervisor's log) knows the run did not wind down on its own.
      setTimeout(() => {
        process.stderr.write(`keel: still winding down 5 s after ${signal}; exiting now\n`);
        process.exit(signalExitCode(signal));
      }, 5000).unref();
    };
    const stopListening = onSignals(['SIGTERM', 'SIGHUP'], onTerminate);
    setOnStdoutGone(() => session.abort('stdout was closed'));
    const mentions = mentionedFiles(prompt, workspace);
    let outcome: RunOutcome = { status: 'finished', finalText: '' };
    try {
      if (start.kind === 'session') await sessionAction(start, session, host.stateDir, out);
      else {
        outcome = await session.prompt(start.prompt, {
          ...start.options,
          ...(mentions.length ? { mentions } : {}),
          ...(images.images.length ? { images: images.images } : {}),
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
    setOnStdoutGone(undefined);
    if (terminatedBy) return signalExitCode(terminatedBy);
    if (isStdoutGone()) return EXIT.finished;
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
  const host = makeHost(workspace, approvalsFor(args.approve, await classifierModelFor(args)));
  const model = args.model ?? process.env.KEEL_MODEL ?? DEFAULT_MODEL;
  const choice = (await import('./modelChoice.ts')).modelChoice(model, args);
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
        ...choice,
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
    addedRoots(workspaceDir(args.workspace), args.addDirs),
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
  return isStdoutGone() ? EXIT.finished : code;
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
        // The auth profiles a run would use (masked keys), or why auth.json is refused.
        const auth = (await import('./authReport.ts')).authReport();
        process.stdout.write(`${auth.text}\n`);
        return report.ok && auth.ok ? EXIT.finished : EXIT.failed;
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
        return runRestore(
          args,
          workspaceDir(args.workspace),
          () => Date.now(),
          addedRoots(workspaceDir(args.workspace), args.addDirs),
        );
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
