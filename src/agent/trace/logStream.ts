import * as fs from 'node:fs';
import * as readline from 'node:readline';
import type { AgentEvent } from '../events.ts';
import type { PrefixRecord, SessionHeader } from '../session/log.ts';

// Reads a session log line by line (a 50 MB log is never held as one string): the header, prefix
// records and events, in file order. Lines that do not parse (a torn last line) are counted, not fatal.

export type LogRecord =
  | { readonly kind: 'header'; readonly header: SessionHeader }
  | { readonly kind: 'prefix'; readonly prefix: PrefixRecord }
  | { readonly kind: 'event'; readonly event: AgentEvent }
  | { readonly kind: 'torn'; readonly line: number };

export async function* streamSessionLog(logPath: string): AsyncGenerator<LogRecord> {
  const input = fs.createReadStream(logPath, { encoding: 'utf8' });
  const lines = readline.createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  let n = 0;
  let sawHeader = false;
  try {
    for await (const line of lines) {
      n++;
      if (line.trim() === '') continue;
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line) as Record<string, unknown>;
      } catch {
        yield { kind: 'torn', line: n };
        continue;
      }
      if (!sawHeader) {
        if (parsed.type !== 'session' || typeof parsed.id !== 'string')
          throw new Error(`${logPath} is not a Keel session log (line 1 is not a session header)`);
        sawHeader = true;
        yield { kind: 'header', header: parsed as unknown as SessionHeader };
        continue;
      }
      if (typeof parsed.type !== 'string' || typeof parsed.seq !== 'number') {
        yield { kind: 'torn', line: n };
        continue;
      }
      if (parsed.type === 'prefix') yield { kind: 'prefix', prefix: parsed as unknown as PrefixRecord };
      else yield { kind: 'event', event: parsed as unknown as AgentEvent };
    }
  } finally {
    lines.close();
    input.destroy();
  }
  if (!sawHeader) throw new Error(`Session log ${logPath} is empty`);
}
