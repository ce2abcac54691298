import * as fs from 'node:fs';
import type { AgentEvent, AgentEventBody, TodoItem } from '../events.ts';
import type { AgentMessage } from '../messages.ts';
import { buildHandoff, compactionsIn } from './handoff.ts';
import type { Host } from '../host.ts';
import { isKeelSessionLog } from '../trust/ledger.ts';
import { createSessionLog, isValidSessionId, loadSession, type SessionLog, sessionLogPath } from './log.ts';
import { newSessionId, type OpenedSession, openSessionLog } from './sessionStart.ts';
import type { AgentSessionOptions } from './types.ts';

// The session a reset continues into (seed 002 P4): a new log whose header names the old session, and
// the way back — resuming the old session leads to the newest one it was continued as (the old log
// ends with the `session_reset` event that names it; nothing in it is rewritten, P2).

/** The new log of a session continuing `oldId`, its header written. */
export function openContinuedLog(
  host: Host,
  options: AgentSessionOptions,
  old: { readonly id: string; readonly model: string; readonly agentName?: string },
  reason: string,
  now: number,
): { id: string; log: SessionLog } {
  const id = newSessionId(now);
  const log = createSessionLog(host.storage, sessionLogPath(host.stateDir, id), {
    type: 'session',
    version: 1,
    id,
    createdAt: now,
    model: old.model || options.model,
    workspace: host.workspace.roots[0] ?? '',
    ...(old.agentName ? { agent: old.agentName } : {}),
    continuedFrom: old.id,
    continuedReason: reason,
  });
  return { id, log };
}

/** The session a log's last event says this one was reset into, if any. */
export function resetInto(
  events: readonly AgentEvent[],
): (AgentEvent & { type: 'session_reset' }) | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === 'session_reset') return event;
    // Only the end of a log counts: a session that went on after its reset line (never written by
    // Keel) is resumed as it is.
    if (event.type === 'message_appended' || event.type === 'agent_start') return undefined;
  }
  return undefined;
}

const MAX_HOPS = 50;

/**
 * The session to resume for `id`: itself, or — when it was reset — the session it went on as (and
 * that one's successor, and so on). A successor whose log is missing or not Keel's stops the walk there.
 */
export function resumeTarget(stateDir: string, id: string): { id: string; via: string[] } {
  const via: string[] = [];
  let current = id;
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    const file = sessionLogPath(stateDir, current);
    if (!fs.existsSync(file) || !isKeelSessionLog(file)) break;
    let next: string | undefined;
    try {
      next = resetInto(loadSession(file).events)?.newSessionId;
    } catch {
      break;
    }
    if (!next || !isValidSessionId(next) || via.includes(next) || next === id) break;
    const nextFile = sessionLogPath(stateDir, next);
    if (!fs.existsSync(nextFile) || !isKeelSessionLog(nextFile)) break;
    via.push(current);
    current = next;
  }
  return { id: current, via };
}

/**
 * `openSessionLog`, where resuming a session that was reset resumes the session it went on as; the
 * note says so (the host shows it once the session's events flow).
 */
export function openFollowingResets(
  host: Host,
  options: AgentSessionOptions,
  now: number,
): OpenedSession & { readonly redirectNote?: string } {
  const asked = options.resumeId;
  if (!asked || !isValidSessionId(asked)) return openSessionLog(host, options, now);
  const target = resumeTarget(host.stateDir, asked);
  if (target.id === asked) return openSessionLog(host, options, now);
  return {
    ...openSessionLog(host, { ...options, resumeId: target.id }, now),
    redirectNote: `Session ${asked} was reset and went on as ${target.id}${target.via.length > 1 ? ` (via ${target.via.slice(1).join(', ')})` : ''}; resuming ${target.id}.`,
  };
}

export interface SessionResetDeps {
  readonly host: Host;
  readonly options: AgentSessionOptions;
  readonly now: () => number;
  readonly newId: (prefix: string) => string;
  readonly contextWindow: number;
  /** The session as it is now. */
  readonly current: () => {
    readonly id: string;
    readonly logPath: string;
    readonly transcript: AgentMessage[];
    readonly todos: readonly TodoItem[];
    readonly model: string;
    readonly agentName?: string;
    /** The thinking level the chat chose (effort picker), if it chose one. */
    readonly effort?: 'low' | 'medium' | 'high' | 'max' | 'off';
  };
  readonly emit: (body: AgentEventBody) => void;
  /** Points the session at the new log and id (events, engine, transcript holder). */
  readonly switchTo: (next: { readonly id: string; readonly log: SessionLog }) => void;
  readonly append: (message: AgentMessage) => void;
}

/** Share of the window the handoff may fill (the rest is room to work in). */
const HANDOFF_SHARE = 0.2;

/**
 * The last rung (seed 002 P4: Truncate → Retry → Fallback → Auto-compact → Reset → Fail-fast): the
 * session ends its log with a `session_reset` line and goes on as a new session seeded with a handoff.
 * False (nothing done) when the session has had no reply since it started: a fresh session that
 * cannot work is not helped by another one.
 */
export function createSessionReset(deps: SessionResetDeps): (reason: string) => Promise<boolean> {
  return async (reason) => {
    const old = deps.current();
    if (!old.transcript.some((m) => m.role === 'assistant')) return false;
    const compactions = compactionsIn(old.transcript);
    const now = deps.now();
    const next = openContinuedLog(deps.host, deps.options, old, reason, now);
    const handoff = buildHandoff({
      transcript: old.transcript,
      todos: old.todos,
      oldSessionId: old.id,
      oldLogPath: old.logPath,
      reason,
      maxChars: Math.floor(deps.contextWindow * 4 * HANDOFF_SHARE),
      id: deps.newId('ctx'),
      now,
    });
    // The old log's last line: why it ended and where the work went.
    deps.emit({
      type: 'session_reset',
      oldSessionId: old.id,
      newSessionId: next.id,
      reason,
      compactions,
      logPath: next.log.path,
    });
    // The old transcript is in the old log (P2, P8); the one in memory is now the new session's.
    old.transcript.splice(0);
    deps.switchTo(next);
    // What a resume of the new session must find in its own log: the model and the todo list.
    if (old.model !== deps.options.model) deps.emit({ type: 'model_switch', model: old.model });
    if (old.todos.length > 0) deps.emit({ type: 'todo', todos: old.todos });
    if (old.effort) deps.emit({ type: 'effort_change', effort: old.effort });
    deps.append(handoff);
    return true;
  };
}
