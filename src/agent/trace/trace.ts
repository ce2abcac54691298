import * as fs from 'node:fs';
import type { AgentEvent, ModelCallRecord } from '../events.ts';
import { computeMetrics } from '../context/metrics.ts';
import { isValidSessionId, loadSession, sessionLogPath } from '../session/log.ts';

// `keel trace`: metrics for one session, derived from its log (the log is the source of truth).

export function resolveSessionLog(target: string, stateDir: string): string {
  if (fs.existsSync(target) && fs.statSync(target).isFile()) return target;
  if (isValidSessionId(target)) {
    const p = sessionLogPath(stateDir, target);
    if (fs.existsSync(p)) return p;
  }
  throw new Error(
    `No session log for ${JSON.stringify(target)} (looked for a file, and for ${sessionLogPath(stateDir, '<id>')})`,
  );
}

export function traceMetrics(target: string, stateDir: string) {
  const loaded = loadSession(resolveSessionLog(target, stateDir));
  const events: AgentEvent[] = loaded.events;
  const records: ModelCallRecord[] = events.flatMap((e) => (e.type === 'model_call' ? [e.record] : []));
  const toolCalls: Record<string, Record<string, number>> = {};
  let loopBlocks = 0;
  for (const e of events) {
    if (e.type !== 'tool_end') continue;
    const byStatus = toolCalls[e.name] ?? {};
    toolCalls[e.name] = byStatus;
    byStatus[e.result.status] = (byStatus[e.result.status] ?? 0) + 1;
    if (e.result.error?.code === 'LOOP_DETECTED') loopBlocks++;
  }
  const turns = events.filter((e) => e.type === 'turn_end').length;
  const runs = events
    .filter((e) => e.type === 'agent_end')
    .map((e) => (e.type === 'agent_end' ? e.status : ''));
  return {
    session: loaded.header.id,
    model: loaded.header.model,
    turns,
    runs,
    retries: events.filter((e) => e.type === 'retry').length,
    subagents: events.filter((e) => e.type === 'subagent_start').length,
    background_jobs: new Set(events.flatMap((e) => (e.type === 'job' ? [e.job.id] : []))).size,
    discarded_partials: events.filter((e) => e.type === 'discarded').length,
    tool_calls: toolCalls,
    torn_lines: loaded.tornLines,
    ...computeMetrics(records, { loopBlocks }),
  };
}
