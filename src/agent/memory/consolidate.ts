import type { AgentMessage } from '../messages.ts';
import { addEntry, cleanEntryText, dateOf, hasEntry } from './document.ts';
import { copiedFromToolResult } from './provenance.ts';
import { type MemoryChange, type MemoryPaths, readMemoryFile, writeMemory } from './store.ts';

// Consolidation with a fallback (seed 000 §5): after a run that did real work (or compacted), ask the
// model for the durable facts of the conversation and append them to the workspace MEMORY.md. The
// model sees only what the user and the agent said — never tool results — and a fact that repeats tool
// output is dropped, so untrusted content cannot become memory this way. Failure changes nothing: the
// conversation stays in the session log, where MemorySearch finds it.

export const MAX_CONSOLIDATED_FACTS = 8;
const MAX_PROMPT_CHARS = 24_000;

/** A user message that states something worth keeping: a preference, a rule, a decision. */
const DURABLE_CUE =
  /\b(remember|always|never|don'?t|do not|prefer|from now on|convention|we use|must|decided|because)\b/i;

export const CONSOLIDATION_SYSTEM =
  'You extract durable facts from coding sessions for a project memory file.';

export function hasDurableCue(messages: readonly AgentMessage[]): boolean {
  return messages.some((m) => m.role === 'user' && DURABLE_CUE.test(m.text));
}

export function buildConsolidationPrompt(
  messages: readonly AgentMessage[],
  existing: string | undefined,
): string {
  const lines: string[] = [];
  for (const m of messages) {
    if (m.role === 'user') lines.push(`USER: ${m.text}`);
    else if (m.role === 'assistant') {
      const text = m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');
      if (text.trim()) lines.push(`AGENT: ${text}`);
    }
  }
  let convo = lines.join('\n');
  if (convo.length > MAX_PROMPT_CHARS) convo = `…${convo.slice(-MAX_PROMPT_CHARS)}`;
  return `Below is a conversation between a user and a coding agent (tool outputs omitted), and the project's current memory file.
List the facts worth remembering in FUTURE sessions: user preferences, project conventions, decisions and their reasons, red lines the user stated. Only what the user said or agreed to; nothing already in memory; nothing about the current task's progress.
Answer with at most ${MAX_CONSOLIDATED_FACTS} lines of the form "- [Heading] fact" (one short line each), or the single word NONE.

<memory>
${existing?.trim() || '(empty)'}
</memory>

<conversation>
${convo}
</conversation>`;
}

export function parseFacts(reply: string): Array<{ heading: string; text: string }> {
  const out: Array<{ heading: string; text: string }> = [];
  for (const line of reply.split('\n')) {
    const m = /^\s*[-*]\s*\[([^\]\n]{1,60})\]\s*(.+)$/.exec(line);
    if (!m) continue;
    try {
      out.push({ heading: m[1]!.trim(), text: cleanEntryText(m[2]!) });
    } catch {
      // an empty or overlong line is skipped
    }
    if (out.length >= MAX_CONSOLIDATED_FACTS) break;
  }
  return out;
}

export interface ConsolidateArgs {
  readonly messages: readonly AgentMessage[];
  readonly paths: MemoryPaths;
  readonly ask: (prompt: string) => Promise<string>;
  readonly now: number;
}

/** Returns the change (one history entry for all facts), or undefined when nothing new was worth keeping. */
export async function consolidate(args: ConsolidateArgs): Promise<MemoryChange | undefined> {
  const before = readMemoryFile(args.paths.workspace);
  const reply = await args.ask(buildConsolidationPrompt(args.messages, before));
  let next = before;
  const kept: string[] = [];
  for (const fact of parseFacts(reply)) {
    if (copiedFromToolResult(fact.text, args.messages)) continue;
    if (next && hasEntry(next, fact.text)) continue;
    next = addEntry(next, fact.heading, `${dateOf(args.now)}: ${fact.text}`);
    kept.push(fact.text);
  }
  if (kept.length === 0 || next === undefined) return undefined;
  return writeMemory(args.paths, 'workspace', next, {
    origin: 'consolidation',
    summary: `consolidation: ${kept.join('; ')}`,
    now: args.now,
  });
}
