import type { AgentEvent } from '../agent/events.ts';

// Read-only calls of one reply run together: their start lines come first, so an end line that does
// not follow its own start names the call it belongs to.
let lastStarted: string | undefined;
// Retries for the same reason are one line each, but the reason (an address, why) is said once.
let lastRetryReason: string | undefined;

// Thinking is shown, but as an aside: dimmed on a terminal, and only its first lines (the log has all).
const THINKING_LINES = 12;

function thinkingLines(
  event: Extract<AgentEvent, { type: 'message_end' }>,
  color: boolean,
): string | undefined {
  const text = event.message.content
    .map((b) =>
      b.type === 'thinking' ? b.thinking.trim() : b.type === 'redacted_thinking' ? '(redacted thinking)' : '',
    )
    .filter(Boolean)
    .join('\n');
  if (!text) return undefined;
  const lines = text.split('\n');
  const shown = lines.slice(0, THINKING_LINES).map((l) => `  ${l}`);
  if (lines.length > THINKING_LINES)
    shown.push(`  … (${lines.length - THINKING_LINES} more lines in the session log)`);
  const body = `✻ thinking\n${shown.join('\n')}`;
  return color ? `\x1b[2m${body}\x1b[22m` : body;
}

/** Human-readable progress on stderr (stdout stays clean for the final answer). */
export function progressLine(event: AgentEvent, options: { color?: boolean } = {}): string | undefined {
  switch (event.type) {
    case 'message_end':
      return thinkingLines(event, options.color === true);
    case 'tool_start': {
      lastStarted = event.toolUseId;
      const input = JSON.stringify(event.input);
      return `▸ ${event.name} ${input.length > 120 ? `${input.slice(0, 117)}...` : input}`;
    }
    case 'tool_end': {
      const r = event.result;
      const code = r.error ? ` ${r.error.code}` : '';
      const which = event.toolUseId === lastStarted ? '' : ` ◂ ${event.name}`;
      // A refusal says who refused (the user, or a policy because nobody could be asked) and how to allow.
      const why = r.error?.code === 'DENIED_BY_USER' ? `\n    ${r.error.message}` : '';
      return `  ${r.status}${code} (${event.durationMs} ms)${which}${why}`;
    }
    case 'subagent_start':
      return `  ↳ sub-agent ${event.agentId} (${event.mode}${event.model ? ` on ${event.model}` : ''}): ${event.description}`;
    case 'subagent_tool': {
      // Parallel sub-agents interleave: each line names its sub-agent.
      const tag = `[${event.agentId.slice(event.agentId.lastIndexOf('sub-'))}]`;
      if (event.phase === 'end')
        return `      ${event.status}${event.errorCode ? ` ${event.errorCode}` : ''} ${tag}`;
      const input = JSON.stringify(event.input);
      return `    ▸ ${event.name} ${input.length > 100 ? `${input.slice(0, 97)}...` : input} ${tag}`;
    }
    case 'subagent_end':
      return `  ↳ sub-agent ${event.agentId} ${event.status} after ${event.turns} turn(s), $${event.costUsd.toFixed(4)}`;
    case 'job':
      return event.job.status === 'running'
        ? `⚙ job ${event.job.id} started: ${event.job.command.slice(0, 100)}`
        : `⚙ job ${event.job.id} ${event.job.status}${event.job.exitCode !== null ? ` (exit ${event.job.exitCode})` : ''}`;
    case 'retry': {
      const same = event.reason === lastRetryReason;
      lastRetryReason = event.reason;
      return `↻ retry ${event.attempt} in ${event.delayMs} ms on ${event.model}: ${same ? '(same error)' : event.reason}`;
    }
    case 'memory_changed': {
      // Every memory change is visible where the user looks: it shapes later sessions' prompts.
      const c = event.change;
      const where = c.scope === 'user' ? '~/.keel/MEMORY.md (all projects)' : '.keel/memory/MEMORY.md';
      return `✎ memory ${c.origin === 'agent' ? 'changed' : `changed (${c.origin})`} in ${where}: ${c.summary.slice(0, 160)} — undo: keel memory rollback`;
    }
    case 'plan':
      return event.file
        ? `✔ plan (${event.steps.length} steps) written to ${event.file}; edit it if you like, then: keel run --from-plan ${event.file}`
        : `✔ plan (${event.steps.length} steps)`;
    case 'model_switch':
      return `⇄ model: ${event.model} from now on in this session`;
    case 'effort_change':
      return `⇄ thinking: ${event.effort} from now on in this session`;
    case 'session_reset':
      return `↳ session reset (${event.reason}): ${event.oldSessionId} → ${event.newSessionId}; resume with: keel run --resume ${event.newSessionId}`;
    case 'notice':
      return `${event.level === 'info' ? 'ℹ' : '⚠'} ${event.text}`;
    case 'auto_classifier':
      return `⚖ auto: ${event.decision === 'allow' ? 'allowed' : 'escalated'} by the classifier (${event.model || 'no model'}): ${event.reason.slice(0, 200)}`;
    case 'error':
      return `✖ ${event.code}: ${event.message}`;
    default:
      return undefined;
  }
}
