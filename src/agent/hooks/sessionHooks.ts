import type { ApprovalsPort, Host } from '../host.ts';
import type { LoopDeps } from '../loop.ts';
import type { AgentMessage, ReminderMessage, UserMessage } from '../messages.ts';
import type { RunOutcome } from '../session/types.ts';
import type { AuditEntry } from '../safety/audit.ts';
import type { AnyToolDefinition } from '../tools/protocol.ts';
import type { TrustRoom } from '../trust/room.ts';
import { type HookConfig, type HookEvent, loadHookConfig } from './config.ts';
import { createHookRunner, type HookRunner } from './runner.ts';
import { withToolHooks } from './toolHooks.ts';
import { HOOKS_ITEM_ID, workspaceHookSources, workspaceHooksHash } from './trustItem.ts';

// A session's hooks: the configuration read once at start (a settings file changed mid-session
// applies from the next session, like skills), the trust gate, and one method per place the session
// calls them. Who may run: the user's hooks (~/.claude/settings.json, Keel's user settings) always —
// they are the user's own; the workspace's only in a trusted workspace, once the user approved that
// exact set (`keel trust`, or VS Code's trust modal), and only while the configuration and every
// script it names still hash to what was approved (checked before each run: a script edited
// mid-session by a command or the model does not run). Approvals live in Keel's home, outside the
// workspace and unreadable from the sandbox: a prompt-injected model cannot approve anything.
//
// Threats this design answers (each has a test in test/unit/hooks*.test.ts):
// - a hostile repository ships hooks that run on SessionStart to exfiltrate: unapproved workspace
//   hooks never run, and an approved one runs in the OS sandbox (no network, secrets unreadable);
// - a hook script edited after approval: the hash covers the scripts, re-checked before every run;
// - a hook that hangs: its timeout (default 60 s) and the session's abort kill its process tree;
// - a hook that prints megabytes: what reaches the model or the user is capped (contract.ts);
// - a hook's updatedInput smuggling a command past the policy: the rewritten input is validated and
//   judged inside the tool exactly like the model's (toolHooks.ts), and `allow` skips no question;
// - a prompt-injected model editing approvals: they live in Keel's home, outside the workspace, out
//   of the Write tools' reach and unreadable from the sandbox; editing the settings only unapproves.

/** A Stop hook may send the agent back to work this many times per prompt (a hook that always blocks
 * would otherwise spend every turn). */
export const MAX_STOP_CONTINUATIONS = 5;

/** What runs instead of the loop when a UserPromptSubmit hook blocked the prompt. */
export const blockedPrompt =
  (reason: string) =>
  async (_deps: LoopDeps): Promise<RunOutcome> => ({
    status: 'stopped',
    finalText: '',
    error: `A UserPromptSubmit hook blocked this prompt; it was not sent: ${reason}`,
  });

export interface SessionHooks {
  readonly runner: HookRunner;
  /** Wraps a tool with PreToolUse/PostToolUse (outermost, after `inner`'s own wrapper). */
  wrapTool(
    inner?: (tool: AnyToolDefinition) => AnyToolDefinition,
  ): (tool: AnyToolDefinition) => AnyToolDefinition;
  /** An approvals port that runs Notification hooks when Keel is about to ask the user. */
  wrapApprovals(port: ApprovalsPort): ApprovalsPort;
  /**
   * Before a prompt enters the transcript: SessionStart (first prompt of this session object), then
   * UserPromptSubmit. `blocked`: the prompt is not sent (the reason is for the user).
   */
  beforePrompt(
    prompt: string,
    signal: AbortSignal,
  ): Promise<{ blocked?: string; before: ReminderMessage[]; after: ReminderMessage[] }>;
  /**
   * A message sent while a run goes on (steering): queued with `push` once UserPromptSubmit let it
   * through (at once when there is no such hook), its context after it; a blocked one is never sent.
   */
  steer(message: UserMessage, push: (m: AgentMessage) => void): void;
  /** The agent is about to stop: a reminder to append and keep going when a Stop hook blocked. */
  beforeStop(signal: AbortSignal): Promise<ReminderMessage | undefined>;
  /** Compaction is about to run (its hooks cannot stop it). */
  preCompact(trigger: 'manual' | 'auto', signal: AbortSignal): Promise<void>;
  /** `summarize` with the PreCompact hooks run first (once per compaction, however it falls back). */
  beforeCompact<A>(
    summarize: (arg: A, signal: AbortSignal) => Promise<string>,
  ): (arg: A, signal: AbortSignal) => Promise<string>;
}

export interface SessionHooksOptions {
  readonly host: Host;
  readonly trust: TrustRoom;
  readonly sessionId: string;
  readonly transcriptPath: string;
  readonly resumed: boolean;
  readonly audit: (entry: AuditEntry) => void;
  readonly warn: (text: string) => void;
  /** A hook answered `continue: false`. */
  readonly stopRun: (reason: string) => void;
  readonly newId: () => string;
  readonly now: () => number;
  /** For tests: the configuration to use instead of reading the settings files. */
  readonly config?: HookConfig;
  readonly env?: NodeJS.ProcessEnv;
  readonly home?: string;
}

export function createSessionHooks(options: SessionHooksOptions): SessionHooks {
  const { host, trust } = options;
  const root = host.workspace.roots[0] ?? '';
  const config =
    options.config ??
    loadHookConfig({
      root,
      readText: (f) => host.storage.readText(f),
      ...(options.env ? { env: options.env } : {}),
      ...(options.home ? { home: options.home } : {}),
    });
  for (const problem of config.problems) options.warn(`Hook settings: ${problem}`);
  const workspaceSources = workspaceHookSources(root, config);
  const approvedAtStart = trust.workspaceTrusted && isApprovedNow();
  function isApprovedNow(): boolean {
    if (!trust.workspaceTrusted || workspaceSources.length === 0) return false;
    const hash = workspaceHooksHash(workspaceSources, root);
    return trust.isApproved({ id: HOOKS_ITEM_ID, kind: 'hooks', file: '', title: '', grants: [], hash });
  }
  let toldChanged = false;
  const runner = createHookRunner({
    config,
    shell: host.shell,
    root,
    // Read when a hook runs (a session reset changes them).
    get sessionId() {
      return options.sessionId;
    },
    get transcriptPath() {
      return options.transcriptPath;
    },
    audit: options.audit,
    workspaceAllowed: isApprovedNow,
    // Unapproved at start: the trust room's one-line notice already named them and `keel trust`.
    // Approved at start but changed since: said once, here.
    onSkipped: () => {
      if (!approvedAtStart || toldChanged) return;
      toldChanged = true;
      options.warn(
        'Workspace hooks changed since you approved them (their settings or a script they run): they no longer run; review them with `keel trust`.',
      );
    },
    ...(options.env ? { env: options.env } : {}),
  });
  const reminder = (event: HookEvent, text: string): ReminderMessage => ({
    role: 'reminder',
    id: options.newId(),
    ts: options.now(),
    text: `Context from a ${event} hook:\n${text}`,
    source: 'hook',
  });
  const report = (v: { notices?: readonly string[]; stop?: string }) => {
    for (const n of v.notices ?? []) options.warn(n);
    if (v.stop !== undefined) options.stopRun(v.stop);
  };
  let started = false;
  let continuations = 0;
  const toolDeps = { hooks: runner, notice: options.warn, stopRun: options.stopRun };

  let lastCompactHook = Number.NEGATIVE_INFINITY;
  const hooks: SessionHooks = {
    runner,
    wrapTool: (inner) => (tool) => withToolHooks(inner ? inner(tool) : tool, toolDeps),
    wrapApprovals(port) {
      // Nobody is asked when the session is unattended (`--approve never`): nothing to notify.
      if (!runner.has('Notification') || port.unattended) return port;
      // The port as its prototype, not a copy: its live getters (the extension's `auto` setting,
      // re-read at each decision) keep answering through the wrapper.
      const wrapped: ApprovalsPort = Object.create(port);
      return Object.assign(wrapped, {
        async ask(request: Parameters<ApprovalsPort['ask']>[0], signal?: AbortSignal) {
          const message = `Keel needs your permission: ${request.title}`;
          const v = await runner.run(
            'Notification',
            undefined,
            { message },
            signal ?? new AbortController().signal,
          );
          for (const n of v.notices ?? []) options.warn(n);
          return port.ask(request, signal);
        },
      });
    },
    async beforePrompt(prompt, signal) {
      continuations = 0;
      const before: ReminderMessage[] = [];
      if (!started) {
        started = true;
        const source = options.resumed ? 'resume' : 'startup';
        const v = await runner.run('SessionStart', source, { source }, signal);
        report(v);
        if (v.context) before.push(reminder('SessionStart', v.context));
      }
      const v = await runner.run('UserPromptSubmit', undefined, { prompt }, signal);
      report(v);
      if (v.block !== undefined) return { blocked: v.block, before, after: [] };
      return { before, after: v.context ? [reminder('UserPromptSubmit', v.context)] : [] };
    },
    steer(message, push) {
      if (!runner.has('UserPromptSubmit')) return push(message);
      // Not the run's signal: a Stop must not let an unchecked message through to the next prompt.
      void runner
        .run('UserPromptSubmit', undefined, { prompt: message.text }, new AbortController().signal)
        .then((v) => {
          report(v);
          if (v.block !== undefined) {
            options.warn(`A UserPromptSubmit hook blocked this message; it was not sent: ${v.block}`);
            return;
          }
          push(message);
          if (v.context) push(reminder('UserPromptSubmit', v.context));
        })
        .catch((error) =>
          options.warn(`UserPromptSubmit hooks failed; the message was not sent: ${String(error)}`),
        );
    },
    async beforeStop(signal) {
      if (!runner.has('Stop') || signal.aborted) return undefined;
      const v = await runner.run('Stop', undefined, { stop_hook_active: continuations > 0 }, signal);
      report(v);
      if (v.block === undefined || v.stop !== undefined) return undefined;
      if (continuations >= MAX_STOP_CONTINUATIONS) {
        options.warn(
          `A Stop hook blocked stopping ${MAX_STOP_CONTINUATIONS} times in a row; Keel stops anyway: ${v.block.slice(0, 200)}`,
        );
        return undefined;
      }
      continuations++;
      return {
        ...reminder('Stop', ''),
        text: `A Stop hook did not let you finish yet. Its reason:\n${v.block}`,
      };
    },
    beforeCompact(summarize) {
      return async (arg, signal) => {
        // The in-context summary falls back to the plain one: one compaction, one PreCompact run.
        if (options.now() - lastCompactHook > 60_000) {
          lastCompactHook = options.now();
          await hooks.preCompact('auto', signal);
        }
        return summarize(arg, signal);
      };
    },
    async preCompact(trigger, signal) {
      const v = await runner.run('PreCompact', trigger, { trigger, custom_instructions: '' }, signal);
      for (const n of v.notices ?? []) options.warn(n);
      if (v.block !== undefined) options.warn(`PreCompact hook: ${v.block.slice(0, 500)}`);
    },
  };
  return hooks;
}
