import type { AgentEvent, AgentEventBody, Listener } from '../events.ts';

// A session's events: numbered, logged and flushed before anyone sees them, kept for catching up
// (`eventsSince`), and delivered to subscribers. Notices raised while the session is being built
// (small window, skill problems) reach every subscriber, however late it subscribes: no host can
// subscribe before the factory returns.

export interface SessionEvents {
  emit(body: AgentEventBody): AgentEvent;
  /** The next number in the session's one sequence (events and prefix records share it). */
  nextSeq(): number;
  subscribe(listener: Listener): { dispose(): void };
  /** A session reset: later events carry the new session's id (the sequence goes on). */
  continueAs(sessionId: string): void;
  /** The session is built: later notices are delivered live only. */
  built(): void;
  clear(): void;
}

export function createSessionEvents(deps: {
  readonly sessionId: string;
  readonly firstSeq: number;
  readonly now: () => number;
  readonly append: (event: AgentEvent) => void;
  /** Kept for `eventsSince` (deltas and tool updates are not). */
  readonly kept: AgentEvent[];
  readonly log?: (level: 'error', message: string) => void;
}): SessionEvents {
  const listeners = new Set<Listener>();
  const startupNotices: AgentEvent[] = [];
  let constructing = true;
  let seq = deps.firstSeq;
  let sessionId = deps.sessionId;
  return {
    emit(body) {
      const event = { ...body, sessionId, seq: ++seq, ts: deps.now() } as AgentEvent;
      deps.append(event);
      if (event.type !== 'message_delta' && event.type !== 'tool_update') deps.kept.push(event);
      if (constructing && event.type === 'notice') startupNotices.push(event);
      for (const listener of listeners) {
        try {
          listener(event);
        } catch (error) {
          deps.log?.('error', `event listener failed: ${String(error)}`);
        }
      }
      return event;
    },
    nextSeq: () => ++seq,
    continueAs(next) {
      sessionId = next;
    },
    subscribe(listener) {
      listeners.add(listener);
      for (const notice of startupNotices) listener(notice);
      return { dispose: () => listeners.delete(listener) };
    },
    built() {
      constructing = false;
    },
    clear: () => listeners.clear(),
  };
}
