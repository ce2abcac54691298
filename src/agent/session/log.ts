import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import type { AgentEvent } from '../events.ts';
import type { StoragePort } from '../host.ts';
import type { AgentMessage } from '../messages.ts';

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
});
export type SessionHeader = z.infer<typeof headerSchema>;

// Events are validated by envelope; bodies come from our own writer.
const eventSchema = z.looseObject({
  type: z.string(),
  seq: z.number(),
  sessionId: z.string(),
  ts: z.number(),
});

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
  if (header) storage.appendLine(logPath, JSON.stringify(header));
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

/** Reads a session log. A torn trailing line (crash mid-write) is moved to `<log>.torn` and cut off. */
export function loadSession(logPath: string, options: { repair?: boolean } = {}): LoadedSession {
  let text: string;
  try {
    text = fs.readFileSync(logPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`No session log at ${logPath}`);
    throw error;
  }
  const lines = text.split('\n');
  let torn = 0;
  if (!text.endsWith('\n') && lines.length > 0) {
    const fragment = lines.pop() ?? '';
    if (fragment.length > 0) {
      torn++;
      if (options.repair) {
        fs.appendFileSync(`${logPath}.torn`, `${fragment}\n`);
        fs.truncateSync(logPath, Buffer.byteLength(text) - Buffer.byteLength(fragment));
      }
    }
  }
  const nonEmpty = lines.filter((l) => l.trim().length > 0);
  const first = nonEmpty.shift();
  if (!first) throw new Error(`Session log ${logPath} is empty`);
  const header = headerSchema.safeParse(JSON.parse(first));
  if (!header.success) throw new Error(`Session log ${logPath} has no valid header: ${header.error.message}`);
  const events: AgentEvent[] = [];
  const prefixes: PrefixRecord[] = [];
  let maxSeq = 0;
  for (const line of nonEmpty) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      torn++;
      continue;
    }
    if (!eventSchema.safeParse(parsed).success) {
      torn++;
      continue;
    }
    const record = parsed as AgentEvent | PrefixRecord;
    maxSeq = Math.max(maxSeq, record.seq);
    if (record.type === 'prefix') prefixes.push(record);
    else events.push(record);
  }
  const messages = events.flatMap((e) => (e.type === 'message_appended' ? [e.message] : []));
  return { header: header.data, events, prefixes, maxSeq, messages, tornLines: torn };
}

export interface SessionSummary {
  readonly id: string;
  readonly title: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly messageCount: number;
}

/** Past sessions, newest first, for `--resume` and the extension's history list. */
export function listSessions(stateDir: string): SessionSummary[] {
  const dir = path.join(stateDir, 'sessions');
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return [];
  }
  const out: SessionSummary[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      const loaded = loadSession(file);
      // A sub-agent's log belongs to its parent session: not a chat of its own.
      if (loaded.header.parent) continue;
      const firstUser = loaded.messages.find((m) => m.role === 'user');
      out.push({
        id: loaded.header.id,
        title: firstUser && firstUser.role === 'user' ? firstUser.text.slice(0, 80) : '(empty session)',
        createdAt: loaded.header.createdAt,
        updatedAt: fs.statSync(file).mtimeMs,
        messageCount: loaded.messages.length,
      });
    } catch {
      // An unreadable log is skipped from the list, not deleted.
    }
  }
  return out.sort((a, b) => b.updatedAt - a.updatedAt);
}
