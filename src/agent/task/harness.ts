import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Host } from '../host.ts';
import type { AgentSession, RunOutcome } from '../session/types.ts';
import type { AnyToolDefinition } from '../tools/protocol.ts';
import { promptUnlessStopped, runInitScript } from './commands.ts';
import { createFeatureDoneTool } from './featureDone.ts';
import {
  countPassing,
  FEATURE_LIST,
  type Feature,
  type FeatureList,
  INIT_SCRIPT,
  nextFailing,
  PROGRESS,
  parseFeatureList,
  SESSIONS_LOG,
  serializeFeatureList,
  withFlips,
  withRegressions,
} from './featureList.ts';
import { commitAll, ensureRepository, logOneline, statusShort } from './git.ts';
import { protectFeatureList } from './guard.ts';
import { initializerPrompt, orientationPrompt } from './prompts.ts';
import {
  type ReverifyPolicy,
  type ReverifyResult,
  reverifyLine,
  reverifyPassing,
  reverifyProgress,
} from './reverify.ts';
import {
  appendLine,
  appendProgress,
  clip,
  committedList,
  featureLabel,
  read,
  stamp,
  TaskError,
  assertTaskTrusted,
  readOwnLines,
  recordTaskFiles,
  taskTarget,
  writeOwnTaskFile,
  writeTaskFile,
} from './files.ts';
import { readSessionsLog, type SessionLine } from './sessionsLog.ts';
import { type TaskStatus, taskStatus } from './status.ts';

// The long-task harness (seed 003): an initializer session writes the feature list, then coding
// sessions — each a NEW session with a fresh context — complete one feature at a time. What the seed
// leaves to the prompt, this does in code: orientation, init.sh first, FeatureDone as the only way
// to pass a feature, the list reverted if changed anyway, progress.md and one commit per session.

export interface TaskDeps {
  /** Absolute, symlink-resolved workspace root. */
  readonly workspace: string;
  /** The host the sessions run on (its shell runs init.sh, like Bash would). */
  readonly host: Host;
  readonly newSession: (extra: {
    extraTools?: readonly AnyToolDefinition[];
    wrapTool?: (tool: AnyToolDefinition) => AnyToolDefinition;
  }) => AgentSession | Promise<AgentSession>;
  /** Called once a session exists (so a host can subscribe to its events). */
  readonly onSessionStart?: (session: AgentSession, feature: Feature | undefined) => void;
  readonly initTimeoutMs?: number;
  /** Per verify command when passing features are re-verified at a session start. */
  readonly verifyTimeoutMs?: number;
  /** Which passing features each session start re-verifies (default 'all'; see reverify.ts). */
  readonly reverify?: ReverifyPolicy;
  /** Stops the task: the session at work is aborted and no further session starts. */
  readonly signal?: AbortSignal;
}

export { TaskError } from './files.ts';
export { type TaskStatus, taskStatus } from './status.ts';

export type SessionOutcome = 'passed' | 'not_passed' | 'failed' | 'aborted' | 'crashed';

export interface SessionReport {
  readonly session: string;
  readonly feature: string | undefined;
  readonly outcome: SessionOutcome;
  readonly status: RunOutcome['status'] | 'crashed';
  readonly passed: string[];
  /** Features that passed but failed their re-verification at this session's start. */
  readonly regressed: string[];
  readonly reverted: boolean;
  readonly commit: string | undefined;
  readonly finalText: string;
}

// ---------- init ----------

export interface InitReport {
  readonly session: string;
  readonly status: RunOutcome['status'];
  readonly features: number;
  readonly commit: string | undefined;
  readonly createdRepository: boolean;
  readonly notes: string[];
}

export async function initTask(deps: TaskDeps, spec: string): Promise<InitReport> {
  const { workspace } = deps;
  if (read(workspace, FEATURE_LIST) !== undefined)
    throw new TaskError(`${FEATURE_LIST} already exists; continue with: keel task run`);
  const session = await deps.newSession({});
  deps.onSessionStart?.(session, undefined);
  const outcome = await promptUnlessStopped(session, initializerPrompt(spec), deps.signal);
  const text = read(workspace, FEATURE_LIST);
  if (text === undefined)
    throw new TaskError(
      `The initializer session (${session.id}, ${outcome.status}) did not write ${FEATURE_LIST}; nothing was committed.`,
    );
  const list = parseFeatureList(text);
  const notes: string[] = [];
  if (list.features.some((f) => f.passes))
    notes.push('every feature starts failing: `passes` was set to false');
  const clean: FeatureList = { features: list.features.map((f) => ({ ...f, passes: false })) };
  writeOwnTaskFile(workspace, FEATURE_LIST, serializeFeatureList(clean));
  if (read(workspace, INIT_SCRIPT) === undefined) {
    writeTaskFile(workspace, INIT_SCRIPT, '#!/bin/sh\n# Starts what the project needs.\nexit 0\n', 0o755);
    notes.push(`${INIT_SCRIPT} was missing: a no-op one was written`);
  }
  // Checked right before: chmod follows a link, and a planted one would make its target executable.
  fs.chmodSync(taskTarget(workspace, INIT_SCRIPT).abs, 0o755);
  const now = deps.host.clock.now();
  appendProgress(workspace, [
    `## ${stamp(now)} — initializer session ${session.id}`,
    `- Spec: ${clip(spec, 400)}`,
    `- Features: ${clean.features.length} (all failing)`,
    ...notes.map((n) => `- Note: ${n}`),
  ]);
  appendLine(workspace, SESSIONS_LOG, {
    type: 'init',
    session: session.id,
    ts: now,
    features: clean.features.length,
  });
  recordTaskFiles(workspace);
  const createdRepository = ensureRepository(workspace);
  const commit = commitAll(
    workspace,
    `keel task: initialize — ${clean.features.length} features\n\nSpec: ${clip(spec, 2000)}`,
  );
  return {
    session: session.id,
    status: outcome.status,
    features: clean.features.length,
    commit,
    createdRepository,
    notes,
  };
}

// ---------- sessions ----------

/** A session whose start line has no end line crashed or was killed: close it and keep its verified flips. */
function recoverCrashed(deps: TaskDeps): SessionReport | undefined {
  const { workspace } = deps;
  const lines = readSessionsLog(readOwnLines(workspace, SESSIONS_LOG));
  const ended = new Set(lines.flatMap((l) => (l.type === 'end' ? [l.session] : [])));
  const open = lines.find(
    (l): l is Extract<SessionLine, { type: 'start' }> => l.type === 'start' && !ended.has(l.session),
  );
  if (!open) return undefined;
  const flips = new Set(
    lines.flatMap((l) => (l.type === 'flip' && l.session === open.session ? [l.id] : [])),
  );
  const committed = committedList(workspace);
  writeOwnTaskFile(workspace, FEATURE_LIST, serializeFeatureList(withFlips(committed, flips)));
  const left = statusShort(workspace);
  const now = deps.host.clock.now();
  appendProgress(workspace, [
    `## ${stamp(now)} — session ${open.session} did not end (crashed or killed)`,
    `- Feature: ${open.feature ?? '(none)'}`,
    `- Outcome: crashed; verified passes kept: ${flips.size > 0 ? [...flips].join(', ') : 'none'}`,
    `- Log: .keel/sessions/${open.session}.jsonl`,
    `- Left uncommitted: ${left ? left.split('\n').join('; ') : 'nothing'}`,
  ]);
  appendLine(workspace, SESSIONS_LOG, {
    type: 'end',
    session: open.session,
    ...(open.feature ? { feature: open.feature } : {}),
    outcome: 'crashed',
    passed: [...flips],
    reverted: false,
    ts: now,
  });
  const commit = commitAll(
    workspace,
    `keel task: session ${open.session} crashed — ${open.feature ?? 'no feature'} (what it left)`,
  );
  return {
    session: open.session,
    feature: open.feature,
    outcome: 'crashed',
    status: 'crashed',
    passed: [...flips],
    regressed: [],
    reverted: false,
    commit,
    finalText: '',
  };
}

/** What a session start establishes before any new work: init.sh ran, passing features re-verified. */
interface SessionStart {
  readonly committed: FeatureList;
  /** The committed list with the features that failed their re-verification back to failing. */
  readonly base: FeatureList;
  readonly initOutput: string;
  readonly check: ReverifyResult;
}

async function startChecks(deps: TaskDeps): Promise<SessionStart> {
  const { workspace } = deps;
  const committed = committedList(workspace);
  const initOutput = await runInitScript(deps); // first: the verify commands may need what it starts
  const check = await reverifyPassing(deps, committed, deps.reverify ?? 'all');
  const base = withRegressions(committed, new Set(check.failed.map((f) => f.id)));
  // Written (and recorded as Keel's) now, committed with the session: a crash before that loses
  // nothing, the next start re-verifies from the committed list again.
  if (check.failed.length > 0) writeOwnTaskFile(workspace, FEATURE_LIST, serializeFeatureList(base));
  const notes = reverifyProgress(committed, check);
  if (notes.length > 0)
    appendProgress(workspace, [
      `## ${stamp(deps.host.clock.now())} — passing features re-verified before new work`,
      ...notes,
    ]);
  return { committed, base, initOutput, check };
}

async function runOneSession(
  deps: TaskDeps,
  start: SessionStart,
  crashed: SessionReport | undefined,
): Promise<SessionReport> {
  const { workspace } = deps;
  const { base, check } = start;
  const feature = nextFailing(base);
  const flipped = new Set<string>();
  const listNow = () => withFlips(base, flipped);
  const real = fs.realpathSync(workspace);
  const guarded = [FEATURE_LIST, SESSIONS_LOG].map((rel) => path.join(real, ...rel.split('/')));
  let sessionId = '';
  const featureDone = createFeatureDoneTool({
    current: listNow,
    assigned: feature?.id,
    flip: (id) => {
      flipped.add(id);
      writeOwnTaskFile(workspace, FEATURE_LIST, serializeFeatureList(listNow()));
      appendLine(workspace, SESSIONS_LOG, {
        type: 'flip',
        session: sessionId,
        id,
        ts: deps.host.clock.now(),
      });
    },
  });
  const session = await deps.newSession({
    extraTools: [featureDone as unknown as AnyToolDefinition],
    wrapTool: (tool) => protectFeatureList(tool, guarded),
  });
  sessionId = session.id;
  deps.onSessionStart?.(session, feature);
  appendLine(workspace, SESSIONS_LOG, {
    type: 'start',
    session: session.id,
    ...(feature ? { feature: feature.id } : {}),
    ts: deps.host.clock.now(),
  });
  const prompt = orientationPrompt({
    list: base,
    feature,
    progressTail: read(workspace, PROGRESS) ?? '',
    gitLog: logOneline(workspace, 20),
    initOutput: start.initOutput,
    regressed: check.failed,
    crashed: crashed
      ? { session: crashed.session, feature: crashed.feature, left: statusShort(workspace) }
      : undefined,
  });
  let outcome: RunOutcome;
  try {
    outcome = await promptUnlessStopped(session, prompt, deps.signal);
  } catch (error) {
    outcome = {
      status: 'failed',
      finalText: '',
      error: error instanceof Error ? error.message : String(error),
    };
  }

  // The list must be exactly the committed one plus this session's verified flips.
  const expected = serializeFeatureList(listNow());
  const actual = read(workspace, FEATURE_LIST);
  const reverted = actual !== expected;
  const warning = `${FEATURE_LIST} was changed outside FeatureDone during this session; it was reverted to the committed list (plus verified passes).`;
  if (reverted) {
    writeOwnTaskFile(workspace, FEATURE_LIST, expected);
    session.notice('warn', warning);
  }
  // init.sh as the session left it was written in a session the user ran (and every run of it is
  // sandboxed and policy-checked like Bash): it stays Keel's. Changes from elsewhere ask (trust/).
  recordTaskFiles(workspace);
  const passed = [...flipped];
  const result: SessionOutcome =
    feature && flipped.has(feature.id)
      ? 'passed'
      : outcome.status === 'aborted'
        ? 'aborted'
        : outcome.status === 'finished'
          ? 'not_passed'
          : 'failed';
  const now = deps.host.clock.now();
  const after = listNow();
  appendProgress(workspace, [
    `## ${stamp(now)} — session ${session.id}`,
    `- Feature: ${featureLabel(feature)}`,
    `- Re-verified at start: ${reverifyLine(check)}`,
    `- Outcome: ${result}${passed.length > 0 ? ` (passing now: ${passed.join(', ')})` : ''}; run ${outcome.status}${outcome.error ? ` — ${clip(outcome.error, 200)}` : ''}`,
    `- Features passing: ${countPassing(after)}/${after.features.length}`,
    `- Left (the session's final message): ${clip(outcome.finalText || '(no final message)', 600).replace(/\n+/g, ' ')}`,
    ...(reverted ? [`- WARNING: ${warning}`] : []),
  ]);
  appendLine(workspace, SESSIONS_LOG, {
    type: 'end',
    session: session.id,
    ...(feature ? { feature: feature.id } : {}),
    outcome: result,
    passed,
    reverted,
    ts: now,
  });
  const commit = commitAll(
    workspace,
    `keel task: ${feature ? `${feature.id} ${clip(feature.description, 60)}` : 'no feature'} — ${result}\n\nSession ${session.id}.`,
  );
  session.dispose();
  return {
    session: session.id,
    feature: feature?.id,
    outcome: result,
    status: outcome.status,
    passed,
    regressed: check.failed.map((f) => f.id),
    reverted,
    commit,
    finalText: outcome.finalText,
  };
}

export interface RunTaskReport {
  readonly allPassing: boolean;
  readonly sessions: SessionReport[];
  readonly status: TaskStatus;
}

export async function runTask(
  deps: TaskDeps,
  options: { sessions: number; onReport?: (r: SessionReport) => void },
): Promise<RunTaskReport> {
  const { workspace } = deps;
  committedList(workspace); // fails early with a clear message when there is no task
  assertTaskTrusted(workspace);
  ensureRepository(workspace); // the harness commits once per session
  const reports: SessionReport[] = [];
  const crashed = recoverCrashed(deps);
  if (crashed) {
    reports.push(crashed);
    options.onReport?.(crashed);
  }
  for (let i = 0; i < options.sessions; i++) {
    if (deps.signal?.aborted) break;
    // Even when the list says every feature passes: that is what the re-verification checks.
    const start = await startChecks(deps);
    if (deps.signal?.aborted || !nextFailing(start.base)) break;
    const report = await runOneSession(deps, start, i === 0 ? crashed : undefined);
    reports.push(report);
    options.onReport?.(report);
    if (report.status === 'aborted') break;
  }
  const status = taskStatus(workspace);
  return { allPassing: status.passing === status.total, sessions: reports, status };
}
