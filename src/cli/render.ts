import type { AgentEvent } from '../agent/events.ts';

/** Human-readable progress on stderr (stdout stays clean for the final answer). */
export function progressLine(event: AgentEvent): string | undefined {
  switch (event.type) {
    case 'tool_start': {
      const input = JSON.stringify(event.input);
      return `▸ ${event.name} ${input.length > 120 ? `${input.slice(0, 117)}...` : input}`;
    }
    case 'tool_end': {
      const r = event.result;
      const code = r.error ? ` ${r.error.code}` : '';
      return `  ${r.status}${code} (${event.durationMs} ms)`;
    }
    case 'retry':
      return `↻ retry ${event.attempt} in ${event.delayMs} ms on ${event.model}: ${event.reason}`;
    case 'notice':
      return `${event.level === 'info' ? 'ℹ' : '⚠'} ${event.text}`;
    case 'error':
      return `✖ ${event.code}: ${event.message}`;
    default:
      return undefined;
  }
}
