import type { TodoItem } from '../events.ts';
import type { AgentMessage, AssistantMessage, ToolResultMessage, UserMessage } from '../messages.ts';
import { describeToolCall } from './pruning.ts';
import { estimateAgentMessageTokens } from './tokens.ts';
import type { ToolUseBlock } from './view.ts';

// Stage 3 (P4): a summary with a fixed template. What must survive exactly is copied BY CODE (user red
// lines and "don't" instructions, the user's requests, modified files, test runs, the todo list,
// identifiers); the model writes only the parts that need judgment (decisions, verification status,
// open work and rollback notes, progress). The summary is final once written.

export interface CompactionFacts {
  readonly redLines: readonly string[];
  readonly requests: readonly string[];
  readonly modifiedFiles: readonly string[];
  readonly verification: readonly string[];
  readonly identifiers: readonly string[];
  readonly decisionHints: readonly string[];
}

const RED_LINE = new RegExp(
  [
    "\\b(?:don'?t|do not|does not|never|must not|mustn'?t|should not|shouldn'?t|may not|cannot|can'?t|not allowed|forbidden|prohibited|avoid|refrain)\\b",
    '\\bwithout (?:asking|approval|permission|confirm\\w*|my ok)\\b',
    '\\bask (?:me )?(?:first|before)\\b',
    '\\b(?:only|always|keep|leave) .{0,60}\\b(?:unchanged|untouched|as is|alone|intact)\\b',
    '\\b(?:only|always|must)\\b',
    '不要|不得|禁止|不能|不可|不许|不准|别|必须|务必|只能',
  ].join('|'),
  'i',
);

function sentences(text: string): string[] {
  return text
    .split('\n')
    .flatMap((line) => line.split(/(?<=[.!?;。！？；])\s+/))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** Constraint-like sentences from the user's own messages, verbatim, in order, without duplicates. */
export function extractRedLines(users: readonly UserMessage[]): string[] {
  const out: string[] = [];
  for (const message of users) {
    for (const sentence of sentences(message.text)) {
      if (RED_LINE.test(sentence) && !out.includes(sentence)) out.push(sentence);
    }
  }
  return out;
}

const IDENTIFIER_PATTERNS: readonly RegExp[] = [
  /https?:\/\/[^\s)>\]"'`]+/g,
  /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
  /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,64}\b/g,
  /(?:\.{0,2}\/)?(?:[\w@.-]+\/)+[\w@.-]+/g,
  /\b[\w-]+\.(?:ts|tsx|js|jsx|mjs|cjs|json|md|py|rs|go|java|kt|c|h|cc|cpp|hpp|cs|rb|php|ya?ml|toml|sh|css|scss|html|sql|lock|txt|env|cfg|ini)\b/g,
  /\b[A-Z][A-Z0-9]+-\d+\b/g,
  /(?<![\w/])#\d{1,7}\b/g,
  /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?\b/g,
  /\blocalhost:\d{2,5}\b/g,
  /`([^`\n]{2,80})`/g,
];

export const MAX_IDENTIFIERS = 120;

export interface IdentifierUse {
  readonly value: string;
  /** How many times it was mentioned. */
  readonly count: number;
  /** Order of its first and of its latest mention (higher = more recent). */
  readonly first: number;
  readonly last: number;
}

/**
 * At most `cap` identifiers: half the room goes to the most recently mentioned (what the work is on
 * now), the rest to the most referenced of the others (what the work keeps coming back to). The
 * kept ones are listed in order of first mention.
 */
export function rankIdentifiers(uses: readonly IdentifierUse[], cap = MAX_IDENTIFIERS): string[] {
  if (uses.length <= cap) return [...uses].sort((a, b) => a.first - b.first).map((u) => u.value);
  const byRecency = [...uses].sort((a, b) => b.last - a.last);
  const kept = new Set(byRecency.slice(0, Math.ceil(cap / 2)));
  const byCount = byRecency.slice(kept.size).sort((a, b) => b.count - a.count || b.last - a.last);
  for (const use of byCount) {
    if (kept.size >= cap) break;
    kept.add(use);
  }
  return [...kept].sort((a, b) => a.first - b.first).map((u) => u.value);
}

/** Every mention of paths, hashes, ids, URLs, ports and quoted names, exactly as written, in order. */
export function identifierMentions(texts: readonly string[]): string[] {
  const out: string[] = [];
  for (const text of texts) {
    const hits: [number, number, string][] = [];
    for (const pattern of IDENTIFIER_PATTERNS) {
      for (const match of text.matchAll(pattern)) {
        const value = (match[1] ?? match[0]).replace(/[.,:;]+$/, '');
        const start = (match.index ?? 0) + match[0].indexOf(value);
        if (value.length >= 2 && value.length <= 200) hits.push([start, start + value.length, value]);
      }
    }
    // Longest first at each position; a hit inside an earlier one (the path part of a URL) is noise.
    hits.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    let coveredTo = -1;
    for (const [, end, value] of hits) {
      if (end <= coveredTo) continue;
      coveredTo = Math.max(coveredTo, end);
      out.push(value);
    }
  }
  return out;
}

/** Counts mentions (in order) into IdentifierUse records. */
export function identifierUses(mentions: readonly string[]): IdentifierUse[] {
  const uses = new Map<string, { value: string; count: number; first: number; last: number }>();
  mentions.forEach((value, i) => {
    const use = uses.get(value);
    if (use) {
      use.count++;
      use.last = i;
    } else uses.set(value, { value, count: 1, first: i, last: i });
  });
  return [...uses.values()];
}

/** The identifiers a summary keeps: exact, at most MAX_IDENTIFIERS, recent and much-referenced first. */
export function extractIdentifiers(texts: readonly string[], cap = MAX_IDENTIFIERS): string[] {
  return rankIdentifiers(identifierUses(identifierMentions(texts)), cap);
}

const EDIT_TOOLS = /^(?:Write|Edit|MultiEdit|NotebookEdit|Delete|Move|Rename)$/;
const VERIFY_COMMAND =
  /\b(?:test|tests|jest|vitest|mocha|pytest|tox|cargo (?:test|check|build|clippy)|go (?:test|vet|build)|tsc|lint|eslint|biome|ruff|mypy|build|check|make|gradle|mvn)\b/i;

function stringInputs(use: ToolUseBlock): string[] {
  return Object.values(use.input).flatMap((v) => (typeof v === 'string' ? [v] : []));
}

function pathOf(use: ToolUseBlock): string | undefined {
  for (const key of ['file_path', 'path', 'notebook_path', 'from', 'to']) {
    const value = use.input[key];
    if (typeof value === 'string' && value) return value;
  }
  return undefined;
}

function assistantTexts(message: AssistantMessage): string {
  return message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');
}

export function extractFacts(messages: readonly AgentMessage[]): CompactionFacts {
  const users = messages.filter((m): m is UserMessage => m.role === 'user');
  const results = new Map<string, ToolResultMessage>();
  for (const m of messages) if (m.role === 'tool_result') results.set(m.toolUseId, m);

  const edits = new Map<string, string[]>();
  const verification = new Map<string, string>();
  const texts: string[] = [];
  const decisionHints: string[] = [];
  for (const message of messages) {
    if (message.role === 'user') texts.push(message.text, ...(message.mentions ?? []));
    if (message.role !== 'assistant') continue;
    const text = assistantTexts(message);
    texts.push(text);
    for (const s of sentences(text)) {
      if (/\b(?:decid\w*|chose|choose|going with|will use|instead of|rather than|because)\b/i.test(s)) {
        if (!decisionHints.includes(s)) decisionHints.push(s);
      }
    }
    for (const block of message.content) {
      if (block.type !== 'tool_use') continue;
      texts.push(...stringInputs(block));
      const result = results.get(block.id);
      const failed = result?.isError ?? false;
      const file = pathOf(block);
      if (EDIT_TOOLS.test(block.name) && file && result && !failed) {
        edits.set(file, [...(edits.get(file) ?? []), block.name]);
      }
      const command = block.input['command'];
      if (block.name === 'Bash' && typeof command === 'string' && VERIFY_COMMAND.test(command) && result) {
        const exit = /exit(?:ed with)? code:? (\d+)/i.exec(result.content)?.[1];
        const outcome = result.isError || (exit !== undefined && exit !== '0') ? 'FAILED' : 'passed';
        verification.delete(command);
        verification.set(
          command,
          `\`${command.slice(0, 160)}\` → ${outcome}${exit !== undefined ? ` (exit ${exit})` : ''}`,
        );
      }
    }
  }
  const modifiedFiles = [...edits.entries()].map(([file, ops]) => {
    const counts = new Map<string, number>();
    for (const op of ops) counts.set(op, (counts.get(op) ?? 0) + 1);
    const summary = [...counts.entries()].map(([op, n]) => (n > 1 ? `${op} ×${n}` : op)).join(', ');
    return `${file} (${summary})`;
  });
  return {
    redLines: extractRedLines(users),
    requests: users.map((u) => u.text),
    modifiedFiles,
    verification: [...verification.values()].slice(-8),
    identifiers: extractIdentifiers(texts),
    decisionHints: decisionHints.slice(0, 20),
  };
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… [${text.length - max} more chars]` : text;
}

/** The history by event type: requests and reasoning in detail, calls one line, outputs mostly dropped. */
export function renderHistory(
  messages: readonly AgentMessage[],
  uses: ReadonlyMap<string, ToolUseBlock>,
  maxChars: number,
): string {
  const lines: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case 'user':
        lines.push(`[user${message.steering ? ', while tools ran' : ''}] ${clip(message.text, 4000)}`);
        break;
      case 'assistant': {
        const text = assistantTexts(message).trim();
        if (text) lines.push(`[assistant] ${clip(text, 1500)}`);
        for (const block of message.content) {
          if (block.type === 'tool_use') lines.push(`[call] ${describeToolCall(block, block.name)}`);
        }
        break;
      }
      case 'tool_result': {
        const call = describeToolCall(uses.get(message.toolUseId), message.toolName);
        if (message.isError) lines.push(`[error] ${call}: ${clip(message.content, 500)}`);
        else if (message.toolName === 'Bash') lines.push(`[output] ${call}: …${message.content.slice(-400)}`);
        else if (/^(?:Read|Glob|Grep|LS|MemorySearch|Skill)$/.test(message.toolName)) {
          lines.push(`[ok] ${call} (${message.content.length} chars, dropped)`);
        } else lines.push(`[ok] ${call}: ${clip(message.content, 200)}`);
        break;
      }
      case 'summary':
        lines.push(`[earlier summary]\n${message.text}`);
        break;
      default:
        break;
    }
  }
  const full = lines.join('\n');
  if (full.length <= maxChars) return full;
  // Keep the start (the goal) and the end (the current state); the middle is in the archive.
  const head = full.slice(0, Math.floor(maxChars * 0.25));
  const tail = full.slice(full.length - Math.floor(maxChars * 0.75));
  return `${head}\n[… ${full.length - head.length - tail.length} chars of history omitted …]\n${tail}`;
}

/** The sections the model writes, and the rules; shared by both ways of asking for a summary. */
export const SUMMARY_TEMPLATE = `Write exactly these Markdown sections, in this order, and nothing else:
## Decisions
Every decision taken and its reason, one bullet each. Never drop a decision.
## Verification status
What was tested, built or checked and the real result (pass/fail, counts); what is still unverified.
## Open TODOs and rollback notes
Work that is left; how to undo risky changes (original values, backups, commits).
## Progress
Facts learned and work done, most important first; approaches that failed and why.
Rules: copy identifiers (paths, hashes, ids, URLs, numbers, error messages) exactly; give conclusions of file contents and command output, not the output; at most about 600 words.`;

export function buildSummarizePrompt(history: string): string {
  return `Summarise the coding-agent session history below for the agent itself: it will continue the work with only your summary and the most recent messages. ${SUMMARY_TEMPLATE}

<history>
${history}
</history>`;
}

export type SectionKey = 'decisions' | 'verification' | 'todos' | 'progress';

/** Splits the model's answer into the template's sections (unknown headings go to progress). */
export function parseSections(text: string): Record<SectionKey, string> {
  const out: Record<SectionKey, string[]> = { decisions: [], verification: [], todos: [], progress: [] };
  let current: SectionKey = 'progress';
  for (const line of text.replace(/\r\n/g, '\n').split('\n')) {
    const heading = /^#{1,4}\s+(.+?)\s*$/.exec(line);
    if (heading) {
      const h = heading[1]!.toLowerCase();
      if (h.includes('decision')) current = 'decisions';
      else if (h.includes('verif') || h.includes('test')) current = 'verification';
      else if (h.includes('todo') || h.includes('rollback') || h.includes('open')) current = 'todos';
      else {
        current = 'progress';
        if (!h.includes('progress')) out.progress.push(`${heading[1]}:`);
      }
      continue;
    }
    out[current].push(line);
  }
  const join = (k: SectionKey) => out[k].join('\n').trim();
  return {
    decisions: join('decisions'),
    verification: join('verification'),
    todos: join('todos'),
    progress: join('progress'),
  };
}

const MARK: Record<TodoItem['status'], string> = { completed: '[x]', in_progress: '[>]', pending: '[ ]' };

export interface SummaryInput {
  readonly n: number;
  readonly archivePath: string;
  readonly facts: CompactionFacts;
  readonly todos?: readonly TodoItem[];
  /** The model's sections; absent when the summarizer was unavailable. */
  readonly model?: Record<SectionKey, string>;
  readonly note?: string;
  /** Whether an earlier summary (holding the original goal) is still in front. */
  readonly continues: boolean;
}

function bullets(items: readonly string[], empty: string): string {
  return items.length > 0 ? items.map((i) => `- ${i}`).join('\n') : empty;
}

export function renderSummary(input: SummaryInput): string {
  const { facts } = input;
  const requests = input.facts.requests.map((r, i) => {
    const label = i === 0 && !input.continues ? 'Goal' : 'Request';
    return `${label}: ${clip(r, 3000)}`;
  });
  const decisions =
    input.model?.decisions ||
    (facts.decisionHints.length > 0
      ? `(from the agent's own words)\n${bullets(facts.decisionHints, '')}`
      : '(none recorded)');
  const verification = [bullets(facts.verification, ''), input.model?.verification ?? '']
    .filter((s) => s.trim())
    .join('\n');
  const todoList = input.todos?.length
    ? input.todos.map((t) => `- ${MARK[t.status]} ${t.content}`).join('\n')
    : '';
  const todos = [todoList, input.model?.todos ?? ''].filter((s) => s.trim()).join('\n');
  const identifiers =
    facts.identifiers.length > 0 ? facts.identifiers.map((i) => `\`${i}\``).join(', ') : '(none)';
  const sections = [
    `<session-summary n="${input.n}">`,
    `This replaces the conversation before it (compaction ${input.n}); it is final and will not be rewritten. The full history is archived in ${input.archivePath}: use MemorySearch to recover any detail.${input.note ? `\n${input.note}` : ''}`,
    `## User red lines and "don't" instructions (verbatim)\n${bullets(facts.redLines, '(none given)')}`,
    `## User requests (verbatim)\n${bullets(requests, '(none in this part)')}`,
    `## Decisions\n${decisions}`,
    `## Modified files\n${bullets(facts.modifiedFiles, '(none)')}`,
    `## Verification status\n${verification || '(nothing verified yet)'}`,
    `## Open TODOs and rollback notes\n${todos || '(none recorded)'}`,
    `## Exact identifiers\n${identifiers}`,
    `## Progress\n${input.model?.progress || '(see the archive)'}`,
    '</session-summary>',
  ];
  return sections.join('\n\n');
}

/**
 * Index in `messages` where the kept tail starts, or -1 when nothing can be cut. The tail always
 * keeps the newest assistant turn and what followed it: the model must see the results of its own
 * latest calls (a reminder after them is no place to cut).
 */
export function chooseCut(messages: readonly AgentMessage[], budgetTokens: number): number {
  const openResults = new Set<string>();
  let tokens = 0;
  let best = -1;
  let seenAssistant = !messages.some((m, i) => i >= 1 && m.role === 'assistant');
  for (let i = messages.length - 1; i >= 1; i--) {
    const message = messages[i]!;
    tokens += estimateAgentMessageTokens(message) + 4;
    if (message.role === 'tool_result') openResults.add(message.toolUseId);
    if (message.role === 'assistant') {
      seenAssistant = true;
      for (const block of message.content) if (block.type === 'tool_use') openResults.delete(block.id);
    }
    const valid = seenAssistant && message.role !== 'tool_result' && openResults.size === 0;
    if (valid && (best < 0 || tokens <= budgetTokens)) best = i;
    if (tokens > budgetTokens && best >= 0) break;
  }
  return best;
}
