import type { AgentEvent } from '../events.ts';
import type { AgentMessage } from '../messages.ts';
import type { PrefixRecord, SessionHeader } from '../session/log.ts';
import type { LogRecord } from './logStream.ts';

// What the HTML trace shows, built in one pass over the log records (constant work per record, no
// second read). Long texts are clipped head + tail here, so the page stays small for a 50 MB log;
// every row carries its `seq`, which finds the full text in the log.

export const CLIP_CHARS = 4_000;

export interface AddedItem {
  readonly role: string;
  readonly label: string;
  readonly chars: number;
  readonly text: string;
}

export type TraceRow =
  | {
      readonly k: 'call';
      readonly seq: number;
      readonly ts: number;
      readonly n: number;
      readonly stage: number;
      readonly model: string;
      readonly input: number;
      readonly cacheRead: number;
      readonly cacheWrite: number;
      readonly output: number;
      readonly latencyMs: number;
      readonly ttftMs: number;
      readonly costUsd: number;
      readonly prefixHash: string;
      readonly prefixChanged: boolean;
      readonly messageCount: number;
      readonly estTokens: number;
      readonly added: AddedItem[];
      reply?: { text: string; toolUses: string[]; stopReason: string | null };
    }
  | {
      readonly k: 'tool';
      readonly seq: number;
      readonly ts: number;
      readonly name: string;
      readonly id: string;
      readonly input: string;
      status: string;
      code?: string;
      text: string;
      durationMs?: number;
      childSession?: string;
      /** The sub-agent's own log (a Task call), relative to the workspace, and how it ended. */
      childLog?: string;
      childEnd?: string;
    }
  | {
      readonly k: 'run';
      readonly seq: number;
      readonly ts: number;
      readonly phase: 'start' | 'end';
      readonly text: string;
    }
  | {
      readonly k: 'note';
      readonly seq: number;
      readonly ts: number;
      readonly level: string;
      readonly text: string;
    }
  | {
      readonly k: 'compaction';
      readonly seq: number;
      readonly ts: number;
      readonly what: 'summary' | 'pruning';
      readonly text: string;
    }
  | {
      readonly k: 'prefix';
      readonly seq: number;
      readonly ts: number;
      readonly hash: string;
      readonly previous?: string;
      readonly index: number;
    };

export interface TracePrefix {
  readonly seq: number;
  readonly hash: string;
  readonly system: string;
  readonly tools: { readonly name: string; readonly text: string }[];
}

export interface TraceData {
  session: { id: string; model: string; workspace: string; createdAt: number };
  prefixes: TracePrefix[];
  rows: TraceRow[];
  totals: {
    calls: number;
    input: number;
    cacheRead: number;
    cacheWrite: number;
    output: number;
    costUsd: number;
    latencyMs: number;
    toolCalls: number;
    prefixChanges: number;
  };
  tornLines: number;
  /** Workspace-relative files the tool inputs name that exist (linked on the page; traceLinks.ts). */
  files: string[];
}

export function clip(text: string, max = CLIP_CHARS): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n… [${text.length - max} characters cut here; the session log holds the full text] …\n${text.slice(-half)}`;
}

function describe(message: AgentMessage): AddedItem {
  const item = (label: string, text: string): AddedItem => ({
    role: message.role,
    label,
    chars: text.length,
    text: clip(text),
  });
  switch (message.role) {
    case 'user':
      return item(message.steering ? 'user (steering)' : 'user', message.text);
    case 'assistant': {
      const text = message.content
        .map((b) =>
          b.type === 'text'
            ? b.text
            : b.type === 'tool_use'
              ? `[tool_use ${b.name}] ${JSON.stringify(b.input)}`
              : b.type === 'thinking'
                ? `[thinking] ${b.thinking}`
                : '[redacted thinking]',
        )
        .join('\n');
      return item('assistant reply', text);
    }
    case 'tool_result': {
      // An image's bytes stay in the log; the trace names it.
      const images = (message.images ?? []).map((i) =>
        `[image ${i.mediaType} ${i.name ?? ''}]`.replace(' ]', ']'),
      );
      const text = images.length ? `${message.content}\n${images.join('\n')}` : message.content;
      return item(`tool_result ${message.toolName}${message.isError ? ' (error)' : ''}`, text);
    }
    case 'reminder':
      return item(`reminder (${message.source})`, message.text);
    case 'summary':
      return item('compaction summary', message.text);
    case 'context_edit':
      return item(
        `pruning stage ${message.stage}: ${message.edits.length} older result(s) shortened`,
        message.edits.map((e) => `${e.messageId}: ${e.content}`).join('\n'),
      );
    case 'notice':
      return item(`notice (${message.level}, not sent to the model)`, message.text);
  }
}

export function createTraceBuilder() {
  const data: TraceData = {
    session: { id: '', model: '', workspace: '', createdAt: 0 },
    prefixes: [],
    rows: [],
    totals: {
      calls: 0,
      input: 0,
      cacheRead: 0,
      cacheWrite: 0,
      output: 0,
      costUsd: 0,
      latencyMs: 0,
      toolCalls: 0,
      prefixChanges: 0,
    },
    tornLines: 0,
    files: [],
  };
  let added: AddedItem[] = [];
  let lastCall: Extract<TraceRow, { k: 'call' }> | undefined;
  const tools = new Map<string, Extract<TraceRow, { k: 'tool' }>>();

  const header = (h: SessionHeader) => {
    data.session = { id: h.id, model: h.model, workspace: h.workspace, createdAt: h.createdAt };
  };
  const prefix = (p: PrefixRecord) => {
    const previous = data.prefixes.at(-1)?.hash;
    const system = p.system
      .map((b) => (typeof b === 'object' && b && 'text' in b ? String((b as { text: unknown }).text) : ''))
      .join('\n\n');
    const toolList = p.tools.map((t) => {
      const tool = t as { name?: unknown };
      return { name: String(tool.name ?? '?'), text: JSON.stringify(t, null, 2) };
    });
    data.prefixes.push({ seq: p.seq, hash: p.hash, system, tools: toolList });
    data.rows.push({
      k: 'prefix',
      seq: p.seq,
      ts: p.ts,
      hash: p.hash,
      index: data.prefixes.length - 1,
      ...(previous ? { previous } : {}),
    });
  };
  const event = (e: AgentEvent) => {
    const base = { seq: e.seq, ts: e.ts };
    switch (e.type) {
      case 'message_appended':
        added.push(describe(e.message));
        if (e.message.role === 'summary' || e.message.role === 'context_edit') {
          const d = describe(e.message);
          data.rows.push({
            k: 'compaction',
            ...base,
            what: e.message.role === 'summary' ? 'summary' : 'pruning',
            text: `${d.label}\n${d.text}`,
          });
        }
        break;
      case 'model_call': {
        const r = e.record;
        const previous = lastCall?.prefixHash;
        const row: Extract<TraceRow, { k: 'call' }> = {
          k: 'call',
          ...base,
          n: data.totals.calls + 1,
          stage: r.stage,
          model: r.model,
          input: r.input,
          cacheRead: r.cache_read,
          cacheWrite: r.cache_write,
          output: r.output,
          latencyMs: r.latency_ms,
          ttftMs: r.ttft_ms,
          costUsd: r.cost_usd,
          prefixHash: r.prefix_hash,
          prefixChanged: previous !== undefined && previous !== r.prefix_hash,
          messageCount: r.message_count,
          estTokens: r.est_tokens,
          added,
        };
        added = [];
        lastCall = row;
        data.rows.push(row);
        const t = data.totals;
        t.calls++;
        t.input += r.input;
        t.cacheRead += r.cache_read;
        t.cacheWrite += r.cache_write;
        t.output += r.output;
        t.costUsd += r.cost_usd;
        t.latencyMs += r.latency_ms;
        if (row.prefixChanged) t.prefixChanges++;
        break;
      }
      case 'message_end':
        if (lastCall && !lastCall.reply) {
          const m = e.message;
          lastCall.reply = {
            text: clip(m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n')),
            toolUses: m.content.flatMap((b) => (b.type === 'tool_use' ? [b.name] : [])),
            stopReason: m.stopReason,
          };
        }
        break;
      case 'tool_start': {
        const row: Extract<TraceRow, { k: 'tool' }> = {
          k: 'tool',
          ...base,
          name: e.name,
          id: e.toolUseId,
          input: clip(JSON.stringify(e.input, null, 2)),
          status: 'running',
          text: '',
        };
        tools.set(e.toolUseId, row);
        data.rows.push(row);
        data.totals.toolCalls++;
        break;
      }
      case 'tool_end': {
        const row = tools.get(e.toolUseId);
        if (!row) break;
        tools.delete(e.toolUseId);
        row.status = e.result.status;
        row.text = clip(e.result.text);
        row.durationMs = e.durationMs;
        if (e.result.error) row.code = e.result.error.code;
        break;
      }
      case 'subagent_start': {
        const row = tools.get(e.toolUseId);
        if (row) {
          row.childSession = `${e.agentId} (${e.mode}: ${e.description})`;
          row.childLog = e.logPath;
        }
        break;
      }
      case 'subagent_end': {
        const row = data.rows.findLast((r) => r.k === 'tool' && r.id === e.toolUseId);
        if (row?.k === 'tool') row.childEnd = `${e.status}, ${e.turns} turn(s), $${e.costUsd}`;
        break;
      }
      case 'agent_start':
        data.rows.push({ k: 'run', ...base, phase: 'start', text: clip(e.prompt, 500) });
        break;
      case 'agent_end':
        data.rows.push({
          k: 'run',
          ...base,
          phase: 'end',
          text: `${e.status}${e.error ? `: ${e.error}` : ''}`,
        });
        break;
      case 'retry':
        data.rows.push({
          k: 'note',
          ...base,
          level: 'warn',
          text: `retry ${e.attempt} on ${e.model} in ${e.delayMs} ms: ${e.reason}`,
        });
        break;
      case 'discarded':
        data.rows.push({ k: 'note', ...base, level: 'warn', text: `partial reply discarded: ${e.reason}` });
        break;
      case 'notice':
        data.rows.push({ k: 'note', ...base, level: e.level, text: clip(e.text, 1000) });
        break;
      case 'auto_classifier':
        data.rows.push({
          k: 'note',
          ...base,
          level: e.decision === 'allow' ? 'info' : 'warn',
          text: `auto approval classifier (${e.model || 'no model'}, ${e.latencyMs} ms): ${e.decision}${e.failure ? ` [${e.failure}]` : ''} — ${clip(e.reason, 500)} · ${clip(e.command, 300)}`,
        });
        break;
      case 'error':
        data.rows.push({ k: 'note', ...base, level: 'error', text: `${e.code}: ${clip(e.message, 1000)}` });
        break;
      default:
        break;
    }
  };
  return {
    add(record: LogRecord) {
      if (record.kind === 'header') header(record.header);
      else if (record.kind === 'prefix') prefix(record.prefix);
      else if (record.kind === 'event') event(record.event);
      else data.tornLines++;
    },
    result(): TraceData {
      data.totals.costUsd = Math.round(data.totals.costUsd * 1e6) / 1e6;
      return data;
    },
  };
}
