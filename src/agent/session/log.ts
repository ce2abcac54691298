import { recordSessionLog } from '../trust/ledger.ts';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import type { AgentEvent } from '../events.ts';
import type { StoragePort } from '../host.ts';
import type { AgentMessage } from '../messages.ts';
import { openLog, readLines, type TrailingFragment } from './logLines.ts';

// `.keel/sessions/<id>.jsonl`: the append-only source of truth (P8). Line 1 is a header; every
// other line is one AgentEvent, written and fsynced BEFORE the event is published. Streaming
// fragments (message_delta, tool_update) are not persisted: the complete message/result is.

export const TRANSIENT_EVENTS: ReadonlySet<string> = new Set(['message_delta', 'tool_update']);

const headerSchema = z.object({
  type: z.literal('session'),
  version: z.literal(1),
  id: z.string(),
  createdAt: z.number(),
  model: z.string(),
  workspace: z.string(),
  /** A sub-agent's log names the session (and the Task call) that started it. */
  parent: z.string().optional(),
  parentToolUseId: z.string().optional(),
  /** A fork ("Restore and edit this message") names the session it copied and the prompt it stopped before. */
  forkOf: z.string().optional(),
  forkBeforePrompt: z.number().int().positive().optional(),
  /** The main agent (`plan`, a custom agent) when not Keel's own: part of the session's fixed prefix. */
  agent: z.string().optional(),
  /** A session reset (seed 002 P4): the session this one continues, and why it was reset. */
  continuedFrom: z.string().optional(),
  continuedReason: z.string().optional(),
});
export type SessionHeader = z.infer<typeof headerSchema>;

/**
 * The frozen prefix (system + tools) exactly as sent, logged once per session before its first model
 * call, and again only if a request's prefix ever differs (which is itself a finding: P1). Log-only:
 * subscribers never see it, but `keel trace` and a replay can rebuild every request from the log.
 */
export interface PrefixRecord {
  readonly type: 'prefix';
  readonly seq: number;
  readonly sessionId: string;
  readonly ts: number;
  readonly hash: string;
  readonly system: readonly unknown[];
  readonly tools: readonly unknown[];
}

export interface LoadedSession {
  readonly header: SessionHeader;
  readonly events: AgentEvent[];
  /** Every prefix the session logged, in order (the last one is what the next call should send). */
  readonly prefixes: PrefixRecord[];
  /** Highest seq in the log (events and prefix records share one sequence). */
  readonly maxSeq: number;
  readonly messages: AgentMessage[];
  /** Lines that could not be parsed (a torn last line after a crash), kept aside, not dropped. */
  readonly tornLines: number;
}

export function sessionLogPath(stateDir: string, id: string): string {
  return path.join(stateDir, 'sessions', `${id}.jsonl`);
}

export function isValidSessionId(id: string): boolean {
  return /^[A-Za-z0-9_-]{1,80}$/.test(id);
}

export interface SessionLog {
  readonly path: string;
  append(event: AgentEvent | PrefixRecord): void;
}

export function createSessionLog(storage: StoragePort, logPath: string, header?: SessionHeader): SessionLog {
  if (header) {
    // Recorded outside the workspace first: only logs Keel made can be resumed or searched (trust/).
    recordSessionLog(logPath);
    storage.appendLine(logPath, JSON.stringify(header));
  }
  return {
    path: logPath,
    append(event) {
      if (TRANSIENT_EVENTS.has(event.type)) return;
      storage.appendLine(logPath, JSON.stringify(event));
      // Every line is written before its event is published; the disk flush happens when a run ends.
      if (event.type === 'agent_end') storage.sync?.(logPath);
    },
  };
}

/** An event line's envelope (bodies come from our own writer). */
function isEnvelope(value: unknown): value is AgentEvent | PrefixRecord {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.type === 'string' &&
    typeof v.seq === 'number' &&
    typeof v.sessionId === 'string' &&
    typeof v.ts === 'number'
  );
}

/**
 * Reads a session log, line by line (never the whole file as one string). A torn trailing line
 * (crash mid-write) is moved to `<log>.torn` and cut off when `repair` is set.
 */
export function loadSession(logPath: string, options: { repair?: boolean } = {}): LoadedSession {
  const fd = openLog(logPath);
  let header: SessionHeader | undefined;
  const events: AgentEvent[] = [];
  const prefixes: PrefixRecord[] = [];
  const messages: AgentMessage[] = [];
  let maxSeq = 0;
  let torn = 0;
  let fragment: TrailingFragment | undefined;
  // A tool's result is logged twice (tool_end, then the tool_result message): keep one copy of its text.
  const resultTexts = new Map<string, string>();
  try {
    for (const { bytes } of readLines(fd, 0, (f) => {
      fragment = f;
    })) {
      const line = bytes.toString('utf8');
      if (line.trim().length === 0) continue;
      if (!header) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          parsed = undefined;
        }
        const checked = headerSchema.safeParse(parsed);
        if (!checked.success)
          throw new Error(
            `Session log ${logPath} has no valid header: ${parsed === undefined ? 'line 1 is not JSON' : checked.error.message}`,
          );
        header = checked.data;
        continue;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        torn++;
        continue;
      }
      if (!isEnvelope(parsed)) {
        torn++;
        continue;
      }
      maxSeq = Math.max(maxSeq, parsed.seq);
      if (parsed.type === 'prefix') prefixes.push(parsed);
      else {
        events.push(parsed);
        shareResultText(parsed, resultTexts);
        if (parsed.type === 'message_appended') messages.push(parsed.message);
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  if (fragment) {
    torn++;
    if (options.repair) {
      fs.appendFileSync(`${logPath}.torn`, Buffer.concat([fragment.bytes, Buffer.from('\n')]));
      fs.truncateSync(logPath, fragment.start);
    }
  }
  if (!header) throw new Error(`Session log ${logPath} is empty`);
  return { header, events, prefixes, maxSeq, messages, tornLines: torn };
}

function shareResultText(event: AgentEvent, texts: Map<string, string>): void {
  if (event.type === 'tool_end' && typeof event.result?.text === 'string') {
    texts.set(event.toolUseId, event.result.text);
    return;
  }
  if (event.type !== 'message_appended' || event.message.role !== 'tool_result') return;
  const message = event.message as { toolUseId: string; result?: { text?: unknown }; content?: unknown };
  const text = texts.get(message.toolUseId);
  if (text === undefined) return;
  texts.delete(message.toolUseId);
  // Equal strings, two copies after parsing: point both at one (strings are immutable).
  if (message.result && message.result.text === text) message.result.text = text;
  if (message.content === text) message.content = text;
}

export { listSessions, type SessionSummary } from './sessionIndex.ts';
