import * as path from 'node:path';
import type { Host } from '../agent/host.ts';
import type { AgentSession, AgentSessionOptions } from '../agent/session/types.ts';
import { initTask, runTask, type SessionReport, type TaskDeps, taskStatus } from '../agent/task/harness.ts';
import { parseReverifyPolicy } from '../agent/task/reverify.ts';
import type { TaskArgs } from './args.ts';
import { progressLine } from './render.ts';
import { onSignals, STOP_SIGNALS, signalExitCode } from './signals.ts';

// `keel task init|run|status`: the long-task harness from the command line. Exit codes: init 0 when
// the list was written and committed; run 0 when every feature passes, 1 otherwise; status 0.

export interface TaskCliDeps {
  readonly workspace: string;
  readonly host: Host;
  readonly createSession: (extra: Pick<AgentSessionOptions, 'extraTools' | 'wrapTool'>) => AgentSession;
}

function sessionLine(r: SessionReport): string {
  const passed = r.passed.length > 0 ? ` passed: ${r.passed.join(', ')}` : '';
  const regressed = r.regressed.length > 0 ? ` — failing again at its start: ${r.regressed.join(', ')}` : '';
  const reverted = r.reverted ? ' — feature list REVERTED (changed outside FeatureDone)' : '';
  return `keel task: session ${r.session} on ${r.feature ?? '(none)'}: ${r.outcome}${regressed}${passed}${reverted}${r.commit ? ` [${r.commit}]` : ''}`;
}

export async function runTaskCommand(args: TaskArgs, deps: TaskCliDeps): Promise<number> {
  const out = (text: string) => process.stdout.write(`${text}\n`);
  if (args.action === 'status') {
    const status = taskStatus(deps.workspace);
    if (args.json) out(JSON.stringify(status));
    else {
      out(`${status.passing}/${status.total} features pass.`);
      out(status.next ? `Next: ${status.next.id} — ${status.next.description}` : 'Every feature passes.');
      if (status.lastSession)
        out(
          `Last session: ${status.lastSession.session} (${status.lastSession.feature ?? 'no feature'}): ${status.lastSession.outcome}`,
        );
    }
    return 0;
  }
  // Ctrl-C, SIGTERM, SIGHUP stop the task: the session at work is aborted and no other starts; a
  // second signal exits at once. Either way the 'exit' clean-up (the sandbox folder) runs.
  const stop = new AbortController();
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppedBy) process.exit(signalExitCode(signal));
    stoppedBy = signal;
    process.stderr.write(`\nkeel: stopping the task (${signal}; again to exit at once)\n`);
    stop.abort(signal);
  };
  const stopListening = onSignals(STOP_SIGNALS, onSignal);
  try {
    const code = await runTaskAction(args, deps, stop.signal);
    return stoppedBy ? signalExitCode(stoppedBy) : code;
  } finally {
    stopListening();
  }
}

async function runTaskAction(args: TaskArgs, deps: TaskCliDeps, signal: AbortSignal): Promise<number> {
  const out = (text: string) => process.stdout.write(`${text}\n`);
  const taskDeps: TaskDeps = {
    workspace: deps.workspace,
    host: deps.host,
    newSession: (extra) => deps.createSession(extra),
    signal,
    // The user's environment, never the workspace's files: the sample decides what is re-checked.
    reverify: parseReverifyPolicy(process.env.KEEL_TASK_REVERIFY),
    onSessionStart: (session, feature) => {
      process.stderr.write(
        `keel: session ${session.id}${feature ? ` on ${feature.id}` : ''} (log: ${path.relative(process.cwd(), session.logPath) || session.logPath})\n`,
      );
      if (!args.json)
        session.subscribe((event) => {
          const line = progressLine(event, { color: process.stderr.isTTY === true && !process.env.NO_COLOR });
          if (line) process.stderr.write(`${line}\n`);
        });
    },
  };
  if (args.action === 'init') {
    const report = await initTask(taskDeps, args.spec ?? '');
    if (args.json) out(JSON.stringify(report));
    else {
      out(
        `Initialized a long task: ${report.features} features${report.commit ? `, commit ${report.commit}` : ''}.`,
      );
      for (const note of report.notes) out(`  note: ${note}`);
      out('Continue with: keel task run');
    }
    return 0;
  }
  const report = await runTask(taskDeps, {
    sessions: args.sessions ?? 1,
    onReport: (r) => {
      if (!args.json) process.stderr.write(`${sessionLine(r)}\n`);
    },
  });
  if (args.json)
    out(JSON.stringify({ allPassing: report.allPassing, sessions: report.sessions, status: report.status }));
  else out(`${report.status.passing}/${report.status.total} features pass.`);
  return report.allPassing ? 0 : 1;
}
