import type { TodoItem } from '../events.ts';
import type { AgentMessage, SummaryMessage, UserMessage } from '../messages.ts';
import { extractFacts, extractRedLines, renderHistory } from '../context/compaction.ts';
import { nextSummaryNumber } from '../context/compactor.ts';
import { buildView, toolUseIndex } from '../context/view.ts';

// The handoff a reset session starts from (seed 002 P4, "Reset"): what a fresh session needs to go on
// with the work, built by code from the old transcript — no model call, nothing the model could drop.
// The goal and the latest request verbatim, the red lines verbatim, the open todos, the files changed,
// the old session's summaries as they stand, and what happened since the newest one (the history
// rendering compaction uses). It enters the new transcript as its one summary, after the frozen
// prefix: the new session's first call reads tools + system from the old session's cache (P1).

export const HANDOFF_TAG = 'session-handoff';

/** Compactions a session goes through; the next one resets it instead of piling summaries on (P4). */
export const MAX_COMPACTIONS = 3;

/** How many compactions the transcript went through (a merged summary "3-7" counts 7). */
export function compactionsIn(transcript: readonly AgentMessage[]): number {
  return nextSummaryNumber(transcript) - 1;
}

export interface HandoffInput {
  readonly transcript: readonly AgentMessage[];
  readonly todos: readonly TodoItem[];
  readonly oldSessionId: string;
  readonly oldLogPath: string;
  readonly reason: string;
  /** Characters the handoff may use at most (a share of the window). */
  readonly maxChars: number;
  readonly id: string;
  readonly now: number;
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.3);
  return `${text.slice(0, head)}\n[… ${text.length - max} chars omitted: see the old session's log …]\n${text.slice(text.length - (max - head))}`;
}

const MARK: Record<TodoItem['status'], string> = { completed: '[x]', in_progress: '[>]', pending: '[ ]' };

function bullets(items: readonly string[], empty: string): string {
  return items.length > 0 ? items.map((i) => `- ${i}`).join('\n') : empty;
}

export function buildHandoff(input: HandoffInput): SummaryMessage {
  const users = input.transcript.filter((m): m is UserMessage => m.role === 'user');
  const goal = users.find((u) => !u.steering) ?? users[0];
  const latest = users.at(-1);
  const facts = extractFacts(input.transcript);
  const view = buildView(input.transcript);
  const budget = Math.max(4_000, input.maxChars);
  const fixed = [
    `<${HANDOFF_TAG} from="${input.oldSessionId}">`,
    `This session continues session ${input.oldSessionId}, which was reset: ${input.reason}. Nothing was lost: its log is kept at ${input.oldLogPath} and its compaction archives hold every detail (MemorySearch finds them). Go on with the work from this handoff; the user's latest request is what you are doing now.`,
    `## Goal (the user's first request, verbatim)\n${goal ? clip(goal.text, 3000) : '(none)'}`,
    `## The user's latest request (verbatim)\n${latest && latest !== goal ? clip(latest.text, 3000) : '(the goal above)'}`,
    `## User red lines and "don't" instructions (verbatim)\n${bullets(extractRedLines(users), '(none given)')}`,
    `## Open TODOs\n${bullets(
      input.todos.filter((t) => t.status !== 'completed').map((t) => `${MARK[t.status]} ${t.content}`),
      '(none recorded)',
    )}`,
    `## Files changed in the old session\n${bullets(facts.modifiedFiles, '(none)')}`,
  ].join('\n\n');
  // The rest of the room: the summaries as they stand (newest last), then what came after them.
  const room = Math.max(2_000, budget - fixed.length);
  const summaries = view.summaries.map((s) => s.text).join('\n\n');
  const summaryText = clip(
    summaries || '(no summary: the session was reset before its first compaction)',
    Math.floor(room * 0.5),
  );
  const since = renderHistory(view.messages, toolUseIndex(input.transcript), room - summaryText.length);
  const text = [
    fixed,
    `## The old session's summary\n${summaryText}`,
    `## Since that summary\n${since.trim() || '(nothing)'}`,
    `</${HANDOFF_TAG}>`,
  ].join('\n\n');
  return {
    id: input.id,
    ts: input.now,
    role: 'summary',
    text,
    replaces: [],
    archivePath: input.oldLogPath,
  };
}
