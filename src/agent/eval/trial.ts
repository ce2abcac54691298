import type { Effort } from '../model/models.ts';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadSession } from '../session/log.ts';
import { traceHtml } from '../trace/html.ts';
import { type GraderResult, runGrader, type TranscriptFacts, transcriptFacts } from './graders.ts';
import type { GraderShell, TrialGraderShell } from './graderShell.ts';
import { DEFAULT_JUDGE_MODEL } from './judge.ts';
import type { EvalTask } from './schema.ts';

// One trial: a fresh copy of the fixture (git-initialised when it is not a repo), one `keel run` in
// its own process, then the graders. A trial that could not be judged because the infrastructure
// failed (API still failing after retries, a crash, a broken fixture copy) is `infra_error`: it is
// not a model failure and does not enter pass@k.

/** Model errors that are the provider's or the harness's fault, not the model's. */
export const INFRA_ERROR_CODES: ReadonlySet<string> = new Set([
  'overloaded',
  'rate_limited',
  'server_error',
  'connection',
  'cut_stream',
  'stream_error',
  'exhausted',
  'auth',
  'model_unavailable',
  'invalid_request',
  'internal',
]);

export type TrialStatus = 'passed' | 'failed' | 'infra_error';

export interface TrialResult {
  readonly task: string;
  readonly trial: number;
  readonly attempt: number;
  readonly status: TrialStatus;
  readonly reason: string;
  readonly graders: readonly GraderResult[];
  readonly facts: TranscriptFacts | undefined;
  readonly sessionId: string | undefined;
  /** The trial's session log, relative to the report directory. */
  readonly log: string | undefined;
  readonly exitCode: number | null;
  readonly durationMs: number;
  readonly workspace: string;
}

/** Where the model calls of one trial go (`--emulator` starts a scripted emulator per trial). */
export interface ModelProvider {
  setup(task: EvalTask, trial: number): Promise<{ env: Record<string, string>; close(): Promise<void> }>;
}

export interface TrialOptions {
  /** The keel command: [node, keel.mjs] (a separate process per trial). */
  readonly keel: readonly string[];
  readonly outDir: string;
  readonly model?: string;
  /** Passed on to each trial's `keel run` (--effort / --no-thinking); absent = Keel's default. */
  readonly effort?: Effort | 'off';
  readonly provider?: ModelProvider;
  /** Where command graders run (the OS sandbox, an allow-list environment). */
  readonly graders: GraderShell;
  /** Keel's own environment for the trial's `keel run` (the only process that holds the API key). */
  readonly env?: NodeJS.ProcessEnv;
  readonly keepWorkspaces?: boolean;
  readonly signal?: AbortSignal;
  /** The judge graders' model when a grader names none (default: the run's model). */
  readonly judgeModel?: string;
}

function git(cwd: string, args: string[]): void {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${r.error?.message ?? r.stderr}`);
}

/** A fresh copy of the fixture in a new temp dir; `git init` + one commit when it is not a repo. */
export function freshCopy(fixtureDir: string, taskId: string): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `keel-eval-${taskId.slice(0, 40)}-`)));
  fs.cpSync(fixtureDir, dir, { recursive: true, verbatimSymlinks: true });
  if (!fs.existsSync(path.join(dir, '.git'))) {
    git(dir, ['init', '-q']);
    git(dir, ['add', '-A']);
    git(dir, [
      '-c',
      'user.name=keel-eval',
      '-c',
      'user.email=eval@keel.invalid',
      '-c',
      'commit.gpgsign=false',
      'commit',
      '-q',
      '--allow-empty',
      '-m',
      'fixture',
    ]);
  }
  return dir;
}

interface ProcessOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  timedOut: boolean;
}

function runKeel(
  keel: readonly string[],
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  logFile: string,
  signal?: AbortSignal,
): Promise<ProcessOutcome> {
  return new Promise((resolve) => {
    const out = fs.openSync(logFile, 'w');
    const child = spawn(keel[0]!, [...keel.slice(1), ...args], {
      env,
      stdio: ['ignore', out, 'pipe'],
      detached: true,
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
      fs.appendFileSync(logFile, c);
    });
    let timedOut = false;
    const kill = (sig: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill('SIGTERM');
      setTimeout(() => kill('SIGKILL'), 5000).unref();
    }, timeoutMs);
    const onAbort = () => kill('SIGTERM');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (error) => {
      stderr += String(error);
    });
    child.on('close', (code, sig) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      fs.closeSync(out);
      resolve({ code, signal: sig, stderr, timedOut });
    });
  });
}

export async function runTrial(
  task: EvalTask,
  trial: number,
  attempt: number,
  options: TrialOptions,
): Promise<TrialResult> {
  const started = Date.now();
  const rel = path.join('trials', task.id, attempt > 0 ? `${trial}-retry${attempt}` : String(trial));
  const trialDir = path.join(options.outDir, rel);
  fs.mkdirSync(trialDir, { recursive: true });
  let workspace = '';
  let home = '';
  const base = { task: task.id, trial, attempt };
  const result = (
    r: Omit<TrialResult, 'task' | 'trial' | 'attempt' | 'durationMs' | 'workspace'>,
  ): TrialResult => {
    const full: TrialResult = { ...base, ...r, durationMs: Date.now() - started, workspace };
    fs.writeFileSync(path.join(trialDir, 'result.json'), `${JSON.stringify(full, null, 2)}\n`);
    return full;
  };
  const infra = (reason: string, extra: Partial<TrialResult> = {}) =>
    result({
      status: 'infra_error',
      reason,
      graders: [],
      facts: undefined,
      sessionId: undefined,
      log: undefined,
      exitCode: null,
      ...extra,
    });

  let provider: Awaited<ReturnType<ModelProvider['setup']>> | undefined;
  let graderShell: TrialGraderShell | undefined;
  try {
    try {
      workspace = freshCopy(task.fixtureDir, task.id);
      // A home of its own: user-level state (memory, skills, caches) cannot leak between trials.
      home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-eval-home-')));
    } catch (error) {
      return infra(`could not prepare the fixture copy: ${(error as Error).message}`);
    }
    try {
      provider = await options.provider?.setup(task, trial);
    } catch (error) {
      return infra(`could not start the model provider: ${(error as Error).message}`);
    }
    const env: NodeJS.ProcessEnv = {
      ...(options.env ?? process.env),
      ...provider?.env,
      HOME: home,
      // The agent's sandbox hides the secrets of the user's real home, not only the trial's.
      KEEL_SANDBOX_DENY_HOME: os.homedir(),
      KEEL_EVAL_TASK: task.id,
      KEEL_EVAL_TRIAL: String(trial),
    };
    const args = [
      'run',
      '--workspace',
      workspace,
      '--approve',
      task.approve,
      '--max-turns',
      String(task.max_turns),
      ...(options.model ? ['--model', options.model] : []),
      ...(options.effort === 'off' ? ['--no-thinking'] : options.effort ? ['--effort', options.effort] : []),
      task.prompt,
    ];
    const proc = await runKeel(
      options.keel,
      args,
      env,
      task.timeout_s * 1000,
      path.join(trialDir, 'output.txt'),
      options.signal,
    );
    const sessionId = /keel: session (\S+)/.exec(proc.stderr)?.[1];
    // Past timeout_s the trial is the model's failure (it did not finish in time), whatever else
    // is missing: never infra_error.
    const timedOut = () =>
      result({
        sessionId,
        log: undefined,
        facts: undefined,
        exitCode: proc.code,
        status: 'failed',
        reason: `timed out after ${task.timeout_s} s${sessionId ? '' : ' (before a session started)'}`,
        graders: [],
      });
    if (!sessionId && proc.timedOut) return timedOut();
    if (!sessionId) {
      return infra(
        `keel exited (${proc.signal ?? proc.code}) before a session started: ${proc.stderr.trim().slice(-400)}`,
        { exitCode: proc.code },
      );
    }
    const logSource = path.join(workspace, '.keel', 'sessions', `${sessionId}.jsonl`);
    const logRel = path.join(rel, 'session.jsonl');
    try {
      fs.copyFileSync(logSource, path.join(options.outDir, logRel));
    } catch (error) {
      if (proc.timedOut) return timedOut();
      return infra(`the session log is missing: ${(error as Error).message}`, {
        sessionId,
        exitCode: proc.code,
      });
    }
    const events = loadSession(path.join(options.outDir, logRel)).events;
    const facts = transcriptFacts(events);
    // The trial's trace page next to its log: every figure in the report can be opened and checked.
    try {
      fs.writeFileSync(path.join(trialDir, 'trace.html'), await traceHtml(path.join(options.outDir, logRel)));
    } catch {
      // The log is the evidence; its page is a convenience.
    }
    const common = { sessionId, log: logRel, exitCode: proc.code, facts };
    if (proc.timedOut) {
      return result({
        ...common,
        status: 'failed',
        reason: `timed out after ${task.timeout_s} s`,
        graders: [],
      });
    }
    if (facts.runStatus === undefined || (proc.code !== 0 && proc.code !== 1)) {
      return infra(`keel ended abnormally (exit ${proc.signal ?? proc.code}, no run end in the log)`, common);
    }
    if (facts.runStatus === 'failed' && facts.errorCode && INFRA_ERROR_CODES.has(facts.errorCode)) {
      return infra(`${facts.errorCode}: ${facts.errorMessage ?? ''}`.trim(), common);
    }
    // The graders never see `env` (Keel's, with the key): only the allow-list graderShell builds.
    graderShell = options.graders.forTrial({ workspace, home, task: task.id, trial, declared: task.env });
    // The judge calls the model from this process, where the trial's model went (its emulator, or
    // the API this process was given).
    const modelEnv = { ...(options.env ?? process.env), ...provider?.env };
    const judge = {
      prompt: task.prompt,
      fixtureDir: task.fixtureDir,
      events,
      endpoint: {
        defaultModel: options.judgeModel ?? options.model ?? DEFAULT_JUDGE_MODEL,
        ...(modelEnv.ANTHROPIC_API_KEY ? { apiKey: modelEnv.ANTHROPIC_API_KEY } : {}),
        ...(modelEnv.ANTHROPIC_BASE_URL ? { baseURL: modelEnv.ANTHROPIC_BASE_URL } : {}),
        ...(modelEnv.KEEL_RETRY_BASE_MS ? { retryBaseMs: Number(modelEnv.KEEL_RETRY_BASE_MS) } : {}),
      },
    };
    const graders: GraderResult[] = [];
    for (const grader of task.graders)
      graders.push(
        await runGrader(grader, {
          workspace,
          facts,
          shell: graderShell,
          judge,
          ...(options.signal ? { signal: options.signal } : {}),
        }),
      );
    // A grader that could not judge (a judge without a verdict) leaves the trial unjudged: neither
    // a pass nor the model's failure, so it stays out of pass@k like any infrastructure error.
    const broken = graders.filter((g) => g.error);
    if (broken.length > 0)
      return result({
        ...common,
        status: 'infra_error',
        reason: broken.map((g) => `${g.type}: ${g.detail.split('\n')[0]}`).join('; '),
        graders,
      });
    const failed = graders.filter((g) => !g.pass);
    return result({
      ...common,
      status: failed.length === 0 ? 'passed' : 'failed',
      reason:
        failed.length === 0
          ? `all ${graders.length} grader(s) passed (run ${facts.runStatus})`
          : `run ${facts.runStatus}; ${failed.map((g) => `${g.type}: ${g.detail.split('\n')[0]}`).join('; ')}`,
      graders,
    });
  } finally {
    graderShell?.dispose();
    await provider?.close().catch(() => undefined);
    if (!options.keepWorkspaces)
      for (const dir of [workspace, home]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}
