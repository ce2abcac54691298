import type { ShellPort } from '../host.ts';
import type { AuditEntry } from '../safety/audit.ts';
import { scrubEnvironment } from '../tools/bash.ts';
import type { HookCommand, HookConfig, HookEvent, HookSource } from './config.ts';
import { combineVerdicts, type HookVerdict, interpretRun, verdictWord } from './contract.ts';
import { groupApplies } from './matcher.ts';

// Runs the hooks of one event: the groups whose matcher applies, from the sources allowed to run,
// each distinct command once, all at the same time (as Claude Code does). Every hook is a command
// like any other: it runs through the session's shell — the same OS sandbox as Bash (writes only in
// the workspace and temp, secrets unreadable, no network), a scrubbed environment with
// CLAUDE_PROJECT_DIR set, its own timeout, the session's abort signal killing its process tree — and
// every run is written to the audit log with its event, command, exit code, duration and decision.

export interface HookRunnerOptions {
  readonly config: HookConfig;
  readonly shell: ShellPort;
  readonly root: string;
  readonly sessionId: string;
  readonly transcriptPath?: string;
  readonly audit: (entry: AuditEntry) => void;
  /** May the workspace's hooks run right now (approved, trusted workspace, unchanged since)? */
  readonly workspaceAllowed: () => boolean;
  /** Called once per event run when workspace hooks were left out. */
  readonly onSkipped?: (event: HookEvent) => void;
  readonly env?: NodeJS.ProcessEnv;
}

export interface HookRunner {
  /** Are there hooks for this event (allowed or not)? Cheap: lets callers skip all work. */
  has(event: HookEvent): boolean;
  /**
   * Runs the event's hooks. `subject` is what the matcher applies to (tool name, start source,
   * compaction trigger); `payload` is added to the common stdin fields.
   */
  run(
    event: HookEvent,
    subject: string | undefined,
    payload: Readonly<Record<string, unknown>>,
    signal: AbortSignal,
  ): Promise<HookVerdict>;
}

interface Planned {
  readonly source: HookSource;
  readonly command: HookCommand;
}

export function createHookRunner(options: HookRunnerOptions): HookRunner {
  const env = {
    ...scrubEnvironment(options.env ?? process.env),
    CLAUDE_PROJECT_DIR: options.root,
    KEEL_PROJECT_DIR: options.root,
  };
  const events = new Set(options.config.sources.flatMap((s) => s.entries.map((e) => e.event)));

  const plan = (event: HookEvent, subject: string | undefined, withWorkspace: boolean) => {
    const out: Planned[] = [];
    const seen = new Set<string>();
    let skipped = false;
    for (const source of options.config.sources)
      for (const entry of source.entries) {
        if (entry.event !== event || !groupApplies(event, entry.matcher, subject)) continue;
        if (source.scope === 'workspace' && !withWorkspace) {
          skipped = true;
          continue;
        }
        for (const command of entry.commands) {
          if (seen.has(command.command)) continue;
          seen.add(command.command);
          out.push({ source, command });
        }
      }
    return { planned: out, skipped };
  };

  const runOne = async (
    event: HookEvent,
    subject: string | undefined,
    { source, command }: Planned,
    stdin: string,
    signal: AbortSignal,
  ): Promise<HookVerdict> => {
    const who = `${event} hook \`${command.command.slice(0, 80)}\` (${source.label})`;
    let verdict: HookVerdict;
    let record: Record<string, unknown>;
    try {
      const result = await options.shell.run({
        command: command.command,
        cwd: options.root,
        env,
        timeoutMs: command.timeoutMs,
        signal,
        stdin,
        sandbox: 'on',
      });
      const denied = result.denials?.map((d) => `${d.kind} ${d.target}`.trim()).join(', ');
      verdict = interpretRun(
        event,
        { ...result, timeoutMs: command.timeoutMs, ...(denied ? { denied } : {}) },
        who,
      );
      record = {
        exit_code: result.exitCode,
        duration_ms: result.durationMs,
        timed_out: result.timedOut,
        aborted: result.aborted,
        sandboxed: result.sandboxed === true,
        ...(result.denials?.length ? { sandbox_denied: result.denials } : {}),
      };
    } catch (error) {
      verdict = { notices: [`${who} could not start: ${String(error)}`] };
      record = { exit_code: null, duration_ms: 0, error: String(error) };
    }
    options.audit({
      type: 'hook',
      event,
      command: command.command,
      source: source.label,
      scope: source.scope,
      ...(subject !== undefined ? { subject } : {}),
      ...record,
      decision: verdictWord(verdict),
      session: options.sessionId,
    });
    return verdict;
  };

  return {
    has: (event) => events.has(event),
    async run(event, subject, payload, signal) {
      if (!events.has(event) || signal.aborted) return {};
      const hasWorkspace = options.config.sources.some(
        (s) => s.scope === 'workspace' && s.entries.some((e) => e.event === event),
      );
      const { planned, skipped } = plan(event, subject, hasWorkspace && options.workspaceAllowed());
      if (skipped) options.onSkipped?.(event);
      if (planned.length === 0) return {};
      const stdin = JSON.stringify({
        session_id: options.sessionId,
        ...(options.transcriptPath ? { transcript_path: options.transcriptPath } : {}),
        cwd: options.root,
        hook_event_name: event,
        ...payload,
      });
      const verdicts = await Promise.all(planned.map((p) => runOne(event, subject, p, stdin, signal)));
      return combineVerdicts(verdicts);
    },
  };
}
