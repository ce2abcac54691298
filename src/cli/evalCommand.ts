import { effortOption } from './effort.ts';
import { setMaxListeners } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GraderShell } from '../agent/eval/graderShell.ts';
import { renderReportHtml, formatSummary } from '../agent/eval/report.ts';
import { type EvalReport, runEval } from '../agent/eval/runner.ts';
import { loadSuite, SuiteError } from '../agent/eval/schema.ts';
import type { ModelProvider } from '../agent/eval/trial.ts';
import type { EvalArgs } from './args.ts';
import { defaultProbeCacheFile } from '../agent/safety/sandbox/probeCache.ts';
import { sandboxSettings } from './sandboxCli.ts';
import { onSignals, signalExitCode } from './signals.ts';

// `keel eval SUITE`: validates the suite, runs its trials (each a separate `keel run` process) and
// writes the report. `--emulator` plays every task's scripted model policy on a local emulator, one
// per trial; without it the trials call whatever ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY name. The
// key stays in Keel's processes: the suite's command graders run in the OS sandbox with an
// allow-list environment (graderShell.ts), and stderr says once how they are confined.

/** The keel command the trials run: this very installation (bin/keel.mjs), in a new process. */
function keelCommand(): string[] {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const bin = [path.join(here, '..', 'bin', 'keel.mjs'), path.join(here, '..', '..', 'bin', 'keel.mjs')].find(
    (p) => fs.existsSync(p),
  );
  if (!bin) throw new Error('keel eval: cannot find bin/keel.mjs next to this installation');
  return [process.execPath, bin];
}

async function emulatorProvider(suiteTasks: Parameters<ModelProvider['setup']>[0][]): Promise<ModelProvider> {
  const { startEmulator } = await import('../../test/emulator/server.ts');
  const { parsePolicyPlan, policyScenario } = await import('../../test/emulator/policies.ts');
  const problems: string[] = [];
  for (const task of suiteTasks) {
    if (!task.emulator)
      problems.push(`${task.file}: emulator: missing (--emulator needs a policy for every task)`);
    else
      try {
        parsePolicyPlan(task.emulator);
      } catch (error) {
        problems.push(`${task.file}: ${(error as Error).message}`);
      }
  }
  if (problems.length > 0) throw new SuiteError(problems);
  return {
    async setup(task, trial) {
      const emulator = await startEmulator({
        scenario: policyScenario(parsePolicyPlan(task.emulator), trial),
      });
      return {
        env: { ANTHROPIC_BASE_URL: emulator.url, ANTHROPIC_API_KEY: 'emulator', KEEL_RETRY_BASE_MS: '5' },
        close: () => emulator.close(),
      };
    },
  };
}

function stamp(): string {
  return new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

/** `keel eval --from-session SESSION-ID OUT-DIR`: writes the task; the user fills in its grader. */
async function fromSessionCommand(args: EvalArgs & { fromSession: string }): Promise<number> {
  const { createTaskFromSession, FromSessionError } = await import('../agent/eval/fromSession.ts');
  const root = fs.realpathSync(path.resolve(args.workspace ?? process.cwd()));
  try {
    const made = createTaskFromSession({
      root,
      stateDir: path.join(root, '.keel'),
      session: args.fromSession,
      outDir: args.suite,
    });
    for (const warning of made.warnings) process.stderr.write(`keel: warning: ${warning}\n`);
    process.stdout.write(
      [
        `Wrote ${made.taskFile}`,
        `  fixture: ${made.fixtureDir} (the workspace before the session: ${made.restored} file(s) put back, ${made.removed} created by the session left out)`,
        `Next: replace the placeholder command grader (marked TODO) in the task file, then: keel eval ${args.suite}`,
      ].join('\n') + '\n',
    );
    return 0;
  } catch (error) {
    if (error instanceof FromSessionError) {
      process.stderr.write(`keel: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

/** `keel eval merge REPORT… [--json FILE] [--html FILE]`: the shards' reports as one run's. */
async function mergeCommand(files: readonly string[], args: EvalArgs): Promise<number> {
  const { mergeReportFiles, MergeError } = await import('../agent/eval/merge.ts');
  let report: ReturnType<typeof mergeReportFiles>;
  try {
    report = mergeReportFiles(files, path.dirname(path.resolve(args.json ?? args.html ?? 'report.json')));
  } catch (error) {
    if (error instanceof MergeError) {
      process.stderr.write(`keel: eval merge: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  process.stdout.write(`${formatSummary(report)}\n`);
  writeReports(report, args);
  return 0;
}

function writeReports(report: EvalReport, args: EvalArgs): void {
  if (args.json) {
    fs.mkdirSync(path.dirname(path.resolve(args.json)), { recursive: true });
    fs.writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
  }
  if (args.html) {
    fs.mkdirSync(path.dirname(path.resolve(args.html)), { recursive: true });
    fs.writeFileSync(args.html, renderReportHtml(report, path.dirname(path.resolve(args.html))));
  }
}

/** `keel eval calibrate SET.json [--model ID] [--json FILE]`: the judge's agreement with people. */
async function calibrateCommand(file: string, args: EvalArgs): Promise<number> {
  const { loadCalibrationSet, runCalibration, formatCalibration } = await import(
    '../agent/eval/calibrate.ts'
  );
  const { DEFAULT_JUDGE_MODEL, judgeClient } = await import('../agent/eval/judge.ts');
  let set: ReturnType<typeof loadCalibrationSet>;
  try {
    set = loadCalibrationSet(file);
  } catch (error) {
    process.stderr.write(`keel: eval calibrate: ${(error as Error).message}\n`);
    return 2;
  }
  if (!process.env.ANTHROPIC_API_KEY && !process.env.ANTHROPIC_BASE_URL) {
    process.stderr.write('keel: eval calibrate calls the judge model: set ANTHROPIC_API_KEY\n');
    return 2;
  }
  const model = args.model ?? process.env.KEEL_MODEL ?? DEFAULT_JUDGE_MODEL;
  const controller = new AbortController();
  const stopListening = onSignals(['SIGINT', 'SIGTERM'], () => controller.abort());
  try {
    const result = await runCalibration(
      set,
      judgeClient({
        model,
        ...(process.env.KEEL_RETRY_BASE_MS ? { retryBaseMs: Number(process.env.KEEL_RETRY_BASE_MS) } : {}),
      }),
      controller.signal,
    );
    process.stdout.write(`${formatCalibration(result, model)}\n`);
    if (args.json) {
      fs.mkdirSync(path.dirname(path.resolve(args.json)), { recursive: true });
      fs.writeFileSync(args.json, `${JSON.stringify({ model, ...result }, null, 2)}\n`);
    }
    return 0;
  } finally {
    stopListening();
  }
}

/** `keel eval --from-feedback OUT-DIR`: a draft task per thumbs-down session; the user writes the graders. */
async function fromFeedbackCommand(args: EvalArgs): Promise<number> {
  const { tasksFromFeedback } = await import('../agent/eval/feedback.ts');
  const root = fs.realpathSync(path.resolve(args.workspace ?? process.cwd()));
  const r = tasksFromFeedback({ root, stateDir: path.join(root, '.keel'), outDir: args.suite });
  for (const m of r.made) {
    process.stdout.write(`Wrote ${m.taskFile} (session ${m.session})\n`);
    for (const w of m.warnings) process.stderr.write(`keel: warning: ${m.session}: ${w}\n`);
  }
  for (const s of r.skipped) process.stderr.write(`keel: skipped session ${s.session}: ${s.reason}\n`);
  if (r.unreadable > 0)
    process.stderr.write(
      `keel: warning: ${r.unreadable} unreadable feedback record(s) in .keel/feedback/ ignored\n`,
    );
  process.stdout.write(
    r.made.length === 0
      ? 'No new thumbs-down session to turn into a task.\n'
      : `Next: replace each draft's placeholder command grader (marked TODO), then: keel eval ${args.suite}\n`,
  );
  return 0;
}

export async function evalCommand(args: EvalArgs): Promise<number> {
  if (args.fromFeedback) return fromFeedbackCommand(args);
  if (args.calibrate !== undefined) return calibrateCommand(args.calibrate, args);
  if (args.merge !== undefined) return mergeCommand(args.merge, args);
  if (args.fromSession !== undefined) return fromSessionCommand({ ...args, fromSession: args.fromSession });
  let suite: ReturnType<typeof loadSuite>;
  let provider: ModelProvider | undefined;
  let graders: GraderShell;
  try {
    suite = loadSuite(args.suite);
    if (args.emulator) provider = await emulatorProvider([...suite.tasks]);
    // The same settings `keel run` takes from the environment (KEEL_SANDBOX, KEEL_BWRAP, …). Loaded
    // here: the grader shell needs the command rules, which `keel run` loads only on its first command.
    const { createGraderShell, graderPolicyProblems } = await import('../agent/eval/graderShell.ts');
    graders = createGraderShell({
      settings: sandboxSettings(undefined, process.env),
      probeCacheFile: defaultProbeCacheFile(),
    });
    const refused = graderPolicyProblems(suite, graders.info.tier === 'bwrap');
    if (refused.length > 0) throw new SuiteError(refused);
  } catch (error) {
    if (error instanceof SuiteError) {
      process.stderr.write(`keel: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (!args.emulator && !process.env.ANTHROPIC_API_KEY && !process.env.ANTHROPIC_BASE_URL) {
    process.stderr.write(
      'keel: eval needs ANTHROPIC_API_KEY (real API) or --emulator (each task plays its scripted policy)\n',
    );
    return 2;
  }
  process.stderr.write(`${graders.notice()}\n`);
  const outDir = path.resolve(args.out ?? path.join('.keel', 'evals', `${suite.name}-${stamp()}`));
  const controller = new AbortController();
  // Every trial waiting for a slot listens for the interrupt.
  setMaxListeners(0, controller.signal);
  // SIGTERM too: the trials are process groups of their own, which would outlive a killed keel eval.
  let stoppedBy: NodeJS.Signals | undefined;
  const stopListening = onSignals(['SIGINT', 'SIGTERM'], (signal) => {
    stoppedBy ??= signal;
    controller.abort();
  });
  try {
    const report = await runEval(suite, {
      keel: keelCommand(),
      graders,
      outDir,
      concurrency: args.concurrency ?? 2,
      retryInfra: args.retryInfra ?? 0,
      ...(args.trials ? { trials: args.trials } : {}),
      ...(args.filter ? { filter: args.filter } : {}),
      ...(args.shard ? { shard: args.shard } : {}),
      ...(args.model ? { model: args.model } : suite.defaults.model ? { model: suite.defaults.model } : {}),
      // The trials' `keel run` falls back to KEEL_MODEL too; the judge follows the same model.
      ...(process.env.KEEL_MODEL
        ? { judgeModel: args.model ?? suite.defaults.model ?? process.env.KEEL_MODEL }
        : {}),
      ...(provider ? { provider } : {}),
      ...effortOption(args),
      signal: controller.signal,
      onTrial: (r, done, total) =>
        process.stderr.write(
          `[${done}/${total}] ${r.task} #${r.trial}: ${r.status} — ${r.reason.split('\n')[0]}\n`,
        ),
    });
    process.stdout.write(`${formatSummary(report)}\n`);
    writeReports(report, args);
    return stoppedBy ? signalExitCode(stoppedBy) : 0;
  } finally {
    stopListening();
  }
}
