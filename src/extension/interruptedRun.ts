import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AgentEvent } from '../agent/events.ts';
import type { StoragePort } from '../agent/host.ts';
import { createSessionLog, loadSession, sessionLogPath } from '../agent/session/log.ts';

// A window reload (or a crash) can end the extension host in the middle of a run. Deactivation
// aborts the run so the session records its own `agent_end`, but a host that is killed before that
// leaves the log with an `agent_start` and no end: a run that would stay "dangling" forever. When
// such a session is reopened, Keel writes the missing end (status `aborted`) first, so the log, the
// history and the panel all agree the run is over.
// Guard: a session log that another live extension host holds open (its lock names a running
// process other than this one) is left alone: that run may still be going.

export const INTERRUPTED_MESSAGE =
  'Interrupted: VS Code reloaded or closed the window while Keel was working; the run did not finish.';

type AgentStart = Extract<AgentEvent, { type: 'agent_start' }>;

export function danglingRun(events: readonly AgentEvent[]): AgentStart | undefined {
  let open: AgentStart | undefined;
  for (const e of events) {
    if (e.type === 'agent_start') open = e;
    else if (e.type === 'agent_end' && e.runId === open?.runId) open = undefined;
  }
  return open;
}

function lockPath(stateDir: string, sessionId: string): string {
  return `${sessionLogPath(stateDir, sessionId)}.lock`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Another live process holds this session open (not this one). */
export function heldElsewhere(stateDir: string, sessionId: string): boolean {
  try {
    const pid = Number(JSON.parse(fs.readFileSync(lockPath(stateDir, sessionId), 'utf8')).pid);
    return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid);
  } catch {
    return false;
  }
}

/** Marks the session as open in this extension host; the disposer removes the mark. */
export function holdSession(stateDir: string, sessionId: string): () => void {
  const p = lockPath(stateDir, sessionId);
  try {
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, JSON.stringify({ pid: process.pid, since: Date.now() }));
  } catch {
    return () => undefined;
  }
  return () => {
    try {
      const held = JSON.parse(fs.readFileSync(p, 'utf8')) as { pid?: number };
      if (held.pid === process.pid) fs.rmSync(p, { force: true });
    } catch {
      // already gone
    }
  };
}

/**
 * Before reopening `sessionId`: if its log ends inside a run, append that run's `agent_end`
 * (aborted). Returns the run id it closed, if any.
 */
export function closeInterruptedRun(
  storage: StoragePort,
  stateDir: string,
  sessionId: string,
  now: number,
): string | undefined {
  if (heldElsewhere(stateDir, sessionId)) return undefined;
  const logPath = sessionLogPath(stateDir, sessionId);
  const loaded = loadSession(logPath, { repair: true });
  const open = danglingRun(loaded.events);
  if (!open) return undefined;
  const seq = loaded.maxSeq + 1;
  const end: AgentEvent = {
    type: 'agent_end',
    runId: open.runId,
    status: 'aborted',
    finalText: '',
    error: INTERRUPTED_MESSAGE,
    sessionId: loaded.header.id,
    seq,
    ts: now,
  };
  createSessionLog(storage, logPath).append(end);
  storage.sync?.(logPath);
  return open.runId;
}
