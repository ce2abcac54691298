import { isKeelSessionLog, recordSessionLog } from '../trust/ledger.ts';
import * as fs from 'node:fs';
import { writeForkOrigin } from '../checkpoints/store.ts';
import type { StoragePort } from '../host.ts';
import { isValidSessionId, loadSession, type SessionHeader, sessionLogPath } from './log.ts';
import { newSessionId } from './sessionStart.ts';

// "Restore and edit this message": the conversation goes on from just before a user prompt, in a NEW
// session whose log starts with a copy of every line the old log held before that prompt (events and
// the frozen prefix, so the first call of the fork hits the same prompt cache). The old log is only
// read (P2): both branches stay, and the fork's header names its parent and the prompt it forked at.

export class ForkError extends Error {}

export interface ForkResult {
  readonly id: string;
  /** The user message the fork starts before: what goes back into the input for editing. */
  readonly text: string;
  readonly mentions: readonly string[];
}

export function forkSession(options: {
  readonly stateDir: string;
  readonly storage: StoragePort;
  readonly sessionId: string;
  /** 1-based prompt number (as in `agent_start.promptNumber` / `keel restore --before-prompt`). */
  readonly beforePrompt: number;
  readonly now: number;
}): ForkResult {
  if (!isValidSessionId(options.sessionId))
    throw new ForkError(`Not a valid session id: ${options.sessionId}`);
  const logPath = sessionLogPath(options.stateDir, options.sessionId);
  const loaded = loadSession(logPath);
  const starts = loaded.events.filter((e) => e.type === 'agent_start');
  const start = starts.find((e, i) => (e.promptNumber ?? i + 1) === options.beforePrompt);
  if (!start)
    throw new ForkError(
      `Session ${options.sessionId} has prompts 1..${starts.length}; prompt ${options.beforePrompt} is not one of them.`,
    );
  const message = loaded.events.find((e) => e.type === 'user_message' && e.seq > start.seq);
  if (message?.type !== 'user_message') throw new ForkError(`Prompt ${options.beforePrompt} has no message.`);

  // The copy is record for record, in order, up to the prompt's agent_start; only the session id
  // changes (the copied events now belong to the fork, and a transcript view keys on it).
  // Forking a log Keel did not create would make it Keel's own (and resumable) under a new id.
  if (!isKeelSessionLog(logPath))
    throw new ForkError(
      `Session ${options.sessionId} was not created by Keel on this machine; it is not forked.`,
    );
  const id = newSessionId(options.now);
  const lines = fs.readFileSync(logPath, 'utf8').split('\n');
  const kept: string[] = [];
  for (const line of lines.slice(1)) {
    if (!line.trim()) continue;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // a torn line is not part of either branch
    }
    if (typeof record['seq'] === 'number' && record['seq'] >= start.seq) break;
    if (record['sessionId'] === options.sessionId) record['sessionId'] = id;
    kept.push(JSON.stringify(record));
  }
  const header: SessionHeader = {
    type: 'session',
    version: 1,
    id,
    createdAt: options.now,
    model: loaded.header.model,
    workspace: loaded.header.workspace,
    forkOf: options.sessionId,
    forkBeforePrompt: options.beforePrompt,
  };
  recordSessionLog(sessionLogPath(options.stateDir, id));
  options.storage.writeText(
    sessionLogPath(options.stateDir, id),
    `${[JSON.stringify(header), ...kept].join('\n')}\n`,
  );
  writeForkOrigin(options.stateDir, id, { parent: options.sessionId, beforePrompt: options.beforePrompt });
  return { id, text: message.message.text, mentions: message.message.mentions ?? [] };
}
