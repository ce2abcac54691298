import * as fs from 'node:fs';
import type { ImageAttachment } from '../context/images.ts';
import { randomBytes } from 'node:crypto';
import { createCheckpointRecorder } from '../checkpoints/recorder.ts';
import { DEFAULT_CHECKPOINT_BUDGET_BYTES, pruneCheckpoints } from '../checkpoints/stats.ts';
import type { AgentEvent, TodoItem } from '../events.ts';
import type { ApprovalsPort, Host } from '../host.ts';
import { setupSessionMcp, watchMcpProblems } from '../mcp/setup.ts';
import type { AgentMessage, ToolResultMessage, UserMessage } from '../messages.ts';
import { toolUses } from '../messages.ts';
import { createModelClient, type ModelClient } from '../model/client.ts';
import { anthropicModelName, createProviderLookup } from '../model/providers/index.ts';
import { DEFAULT_EFFORT, type Effort, outputLimitFor } from '../model/models.ts';
import { contextWindowFor, MIN_CONTEXT_WINDOW } from '../model/pricing.ts';
import type { JobManager } from '../jobs/manager.ts';
import { withSessionMemory } from '../safety/approvals.ts';
import { defaultBundledSkillsDir, discoverSkills, formatSkillProblems } from '../skills/discover.ts';
import { createTrustRoom, type TrustRoom } from '../trust/room.ts';
import { isKeelSessionLog } from '../trust/ledger.ts';
import { createSessionLog, isValidSessionId, loadSession, sessionLogPath } from './log.ts';
import type { AgentSessionOptions } from './types.ts';

// What a session is made of before its first prompt: its log (new, or resumed with everything the
// log holds), the per-prompt checkpoint recorder, and approvals that remember "for this session".

export class SessionConfigError extends Error {}

export function newSessionId(now: number): string {
  const stamp = new Date(now).toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/** Tool calls the log shows as started but never answered (crash mid-turn) get an explicit result. */
export function interruptedResults(
  messages: readonly AgentMessage[],
  newId: () => string,
  now: number,
): ToolResultMessage[] {
  const answered = new Set(messages.flatMap((m) => (m.role === 'tool_result' ? [m.toolUseId] : [])));
  const out: ToolResultMessage[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    for (const use of toolUses(m)) {
      if (answered.has(use.id)) continue;
      const text =
        '[Interrupted] The session ended before this call completed; its effect is unknown. Check the state before retrying.';
      const result = { status: 'error' as const, data: null, text, stats: { time_ms: 0 } };
      out.push({
        role: 'tool_result',
        id: newId(),
        ts: now,
        toolUseId: use.id,
        toolName: use.name,
        result,
        content: text,
        isError: true,
      });
    }
  }
  return out;
}

export interface OpenedSession {
  readonly id: string;
  readonly log: ReturnType<typeof createSessionLog>;
  readonly events: AgentEvent[];
  readonly transcript: AgentMessage[];
  readonly seq: number;
  /** Hash of the prefix a resumed log already holds: it is not written again unless it changed. */
  readonly loggedPrefixHash: string | undefined;
  readonly todos: readonly TodoItem[];
  /** The main agent the log's header names (a resumed session keeps its agent). */
  readonly agentName?: string;
}

/** A new session's log (header written), or a resumed one's with its events, messages and todos. */
export function openSessionLog(host: Host, options: AgentSessionOptions, now: number): OpenedSession {
  if (options.resumeId) {
    if (!isValidSessionId(options.resumeId))
      throw new SessionConfigError(`Not a valid session id: ${options.resumeId}`);
    const logPath = sessionLogPath(host.stateDir, options.resumeId);
    if (fs.existsSync(logPath) && !isKeelSessionLog(logPath))
      throw new SessionConfigError(
        `Session ${options.resumeId} was not created by Keel on this machine (its log came with the repository or was written by something else); it is not resumed: its "user" messages would not be yours.`,
      );
    const loaded = loadSession(logPath, { repair: true });
    const lastTodo = [...loaded.events].reverse().find((e) => e.type === 'todo');
    return {
      id: loaded.header.id,
      log: createSessionLog(host.storage, logPath),
      events: [...loaded.events],
      transcript: [...loaded.messages],
      seq: loaded.maxSeq,
      loggedPrefixHash: loaded.prefixes.at(-1)?.hash,
      todos: lastTodo?.type === 'todo' ? lastTodo.todos : [],
      ...(loaded.header.agent ? { agentName: loaded.header.agent } : {}),
    };
  }
  const id = newSessionId(now);
  const log = createSessionLog(host.storage, sessionLogPath(host.stateDir, id), {
    type: 'session',
    version: 1,
    id,
    createdAt: now,
    model: options.model,
    workspace: host.workspace.roots[0] ?? '',
    ...(options.agentName ? { agent: options.agentName } : {}),
  });
  return { id, log, events: [], transcript: [], seq: 0, loggedPrefixHash: undefined, todos: [] };
}

/** Per-prompt checkpoints of the first root (older sessions' pruned to the budget), unless turned off. */
export function sessionCheckpoints(
  host: Host,
  options: AgentSessionOptions,
  sessionId: string,
  promptsSoFar: number,
  now: () => number,
): ReturnType<typeof createCheckpointRecorder> | undefined {
  const root = host.workspace.roots[0];
  if (options.checkpoints === false || root === undefined) return undefined;
  const settings = options.checkpoints || undefined;
  const recorder = createCheckpointRecorder({
    stateDir: host.stateDir,
    sessionId,
    root,
    extraRoots: host.workspace.roots.slice(1),
    now,
    promptsSoFar,
    ...(host.log ? { log: host.log } : {}),
    ...(settings?.detector ? { detector: settings.detector } : {}),
  });
  try {
    pruneCheckpoints(host.stateDir, settings?.budgetBytes ?? DEFAULT_CHECKPOINT_BUDGET_BYTES, [sessionId]);
  } catch (error) {
    host.log?.('warn', `checkpoint pruning failed: ${String(error)}`);
  }
  return recorder;
}

/**
 * "Allow for this session" is remembered per session, whatever the host's dialog is. The time spent
 * waiting for the user's answer is counted, so a tool's reported duration is its own work only.
 */
export function sessionApprovals(host: Host): { approvals: ApprovalsPort; waitMs: () => number } {
  const remembered = withSessionMemory(host.approvals);
  let waited = 0;
  return {
    approvals: {
      ...(remembered.unattended ? { unattended: remembered.unattended } : {}),
      get auto() {
        return remembered.auto === true;
      },
      async ask(request, signal) {
        const asked = host.clock.now();
        try {
          return await remembered.ask(request, signal);
        } finally {
          waited += host.clock.now() - asked;
        }
      },
    },
    waitMs: () => waited,
  };
}

/**
 * The session's skills and MCP servers, each a snapshot taken now: a skill file or an mcp.json that
 * changes mid-session must not move the prefix (P1). MCP servers start only when a tool needs them.
 */
export function sessionSkillsAndMcp(
  host: Host,
  options: AgentSessionOptions,
  readOnly: boolean,
  warn: (text: string) => void,
  trust?: TrustRoom,
): { skills: ReturnType<typeof discoverSkills>; mcp: ReturnType<typeof setupSessionMcp>['mcp'] } {
  const skills = discoverSkills({
    bundledDir: options.bundledSkillsDir ?? defaultBundledSkillsDir(),
    workspaceRoot: host.workspace.roots[0] ?? '',
    ...(options.userSkillsDir !== undefined ? { userDir: options.userSkillsDir } : {}),
  });
  for (const problem of formatSkillProblems(skills.problems)) warn(problem);
  const { mcp, notices } = setupSessionMcp(host, { readOnly, ...(trust ? { trust } : {}) });
  for (const text of notices) warn(text);
  if (mcp) watchMcpProblems(mcp.manager, warn);
  return { skills, mcp };
}

/**
 * What the repository supplies to steer Keel is used only as far as the user approved it (trust/):
 * the host's room, or one made now; what is left out is said once, in one line.
 */
export function sessionTrust(host: Host, warn: (text: string) => void): TrustRoom {
  const trust =
    host.trust ??
    createTrustRoom({ root: host.workspace.roots[0] ?? '', workspaceTrusted: host.workspace.isTrusted() });
  const notice = trust.pendingNotice();
  if (notice) warn(notice);
  return trust;
}

/** A user's message as the transcript keeps it (a steering one is marked, mentions only when any). */
export function newUserMessage(m: {
  readonly id: string;
  readonly ts: number;
  readonly text: string;
  readonly steering: boolean;
  readonly mentions: readonly string[] | undefined;
  readonly images?: readonly ImageAttachment[] | undefined;
}): UserMessage {
  return {
    role: 'user',
    id: m.id,
    ts: m.ts,
    text: m.text,
    ...(m.steering ? { steering: true } : {}),
    ...(m.mentions?.length ? { mentions: [...m.mentions] } : {}),
    ...(m.images?.length ? { images: [...m.images] } : {}),
  };
}

/** The session's model client: its model, then its fallbacks. */
export function sessionModelClient(options: AgentSessionOptions, now: () => number): ModelClient {
  return createModelClient({
    // `anthropic:x` is x to the Anthropic client; `openai:`/`azure:`/`ollama:` models go to their provider
    // (a fallback chain may cross providers).
    models: [options.model, ...(options.fallbackModels ?? [])].map(anthropicModelName),
    providerFor: createProviderLookup(options.providers),
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
    ...(process.env.KEEL_RETRY_BASE_MS ? { retryBaseMs: Number(process.env.KEEL_RETRY_BASE_MS) } : {}),
    now,
  });
}

/** The session's window, output limit and thinking effort; a window too small to work in is refused. */
export function sessionLimits(options: AgentSessionOptions): {
  contextWindow: number;
  maxTokens: number;
  effort: Exclude<Effort, 'off'> | undefined;
} {
  const contextWindow = options.contextWindow ?? contextWindowFor(options.model);
  if (contextWindow < MIN_CONTEXT_WINDOW) {
    throw new SessionConfigError(
      `The context window (${contextWindow} tokens) is below the minimum of ${MIN_CONTEXT_WINDOW}; Keel refuses to run with so little room.`,
    );
  }
  const effort = options.effort ?? DEFAULT_EFFORT;
  // The model's real output limit: a long Write fits in one reply (a fixed 8192 cut them off).
  const maxTokens = options.maxTokens ?? outputLimitFor(options.model);
  return { contextWindow, maxTokens, effort: effort === 'off' ? undefined : effort };
}

/** Stopping the session's jobs (the panel's job list, Stop). */
export function sessionJobControls(jobs: JobManager, runId: () => string | undefined) {
  return {
    async stopJob(jobId: string) {
      if (jobs.get(jobId)?.status !== 'running') return false;
      await jobs.kill(jobId);
      return true;
    },
    stopJobs: (currentRunOnly?: boolean) => jobs.stopAll(currentRunOnly ? (runId() ?? '\0none') : undefined),
  };
}

/** The thinking level the session's log last recorded (the panel's effort picker), else `fallback`. */
export function loggedEffort(
  events: readonly AgentEvent[],
  fallback: Effort | undefined,
): Effort | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === 'effort_change') return event.effort === 'off' ? undefined : event.effort;
  }
  return fallback;
}

/** The level the chat's effort picker last chose, as `{ effort }` (empty when it never chose). */
export function chosenEffort(events: readonly AgentEvent[]): { effort?: Effort | 'off' } {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === 'effort_change') return { effort: event.effort };
  }
  return {};
}
