import type { TodoItem } from '../events.ts';
import type { AgentDefinition } from './discover.ts';

// Plan mode: a built-in agent that may only read and search (the session is read-only, as in an
// untrusted workspace: no edit, no command, sub-agents explore only) and ends with a numbered plan.
// The plan is written to `.keel/plans/<session>.md`; the user edits it if they like and starts it,
// which hands the steps to the default agent as its first todo list.

const PLAN_PROMPT = `You are in plan mode: you may only read and search. You cannot edit files or run commands, and you must not try.
Investigate what the task needs (read the relevant code, find the tests), then stop and answer with the plan, in this form:
## Plan
1. One concrete step per line: which file or function changes, and how.
2. …
N. How the change is verified (which tests or commands).
Then, if needed, a short "## Notes" section (risks, open questions). Do not start the work: the user reviews the plan first.`;

export const PLAN_AGENT: AgentDefinition = {
  name: 'plan',
  description: 'Read-only planning: investigates, then answers with a numbered plan; makes no change',
  prompt: PLAN_PROMPT,
  source: 'builtin',
  shown: 'built-in',
  readOnly: true,
};

/** The numbered (or bulleted) steps of the `## Plan` section (the whole text when it has none). */
export function planSteps(text: string): string[] {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const start = lines.findIndex((l) => /^#{1,4}\s*plan\b/i.test(l.trim()));
  const steps: string[] = [];
  for (const line of start >= 0 ? lines.slice(start + 1) : lines) {
    if (start >= 0 && /^#{1,4}\s/.test(line.trim())) break;
    // Top-level items only: indented sub-points belong to their step.
    const m = /^ ?(?:\d+[.)]|[-*+])\s+(?:\[[ xX]\]\s+)?(.+)$/.exec(line);
    if (m) steps.push(m[1]!.trim());
  }
  return steps.filter((s) => s.length > 0).slice(0, 50);
}

/** The plan file: the task, what the agent found, then its plan (edit it freely before starting). */
export function planFileText(task: string, planText: string, sessionId: string): string {
  const text = planText.replace(/\r\n/g, '\n').trim();
  const at = text.search(/^#{1,4}\s*plan\b/im);
  const findings = at > 0 ? text.slice(0, at).trim() : '';
  const plan = at >= 0 ? text.slice(at).replace(/^#{1,4}\s*plan\b[^\n]*/i, '## Plan') : `## Plan\n${text}`;
  return `# Keel plan (session ${sessionId})
<!-- Edit the steps if you like, then start it: keel run --from-plan <this file> -->

## Task
${task.trim()}
${findings ? `\n## Findings\n${findings}\n` : ''}
${plan}
`;
}

/** A plan file read back: its task (when the file has one) and its steps. */
export function readPlanFile(text: string): { task: string; steps: string[] } {
  const normalized = text.replace(/\r\n/g, '\n');
  const task = /^##\s*Task\s*\n([\s\S]*?)(?=^##\s|(?![\s\S]))/m.exec(normalized)?.[1]?.trim() ?? '';
  return { task, steps: planSteps(normalized) };
}

/** The first todo list of the run that carries out a plan: one pending item per step. */
export function planTodos(steps: readonly string[]): TodoItem[] {
  return steps.map((content, i) => ({ id: String(i + 1), content, status: 'pending' }));
}

/** The user message that starts a plan: the user chose the file on their command line / in the panel. */
export function startPlanPrompt(shown: string, task: string, steps: readonly string[]): string {
  const list = steps.map((s, i) => `${i + 1}. ${s}`).join('\n');
  return `Carry out this plan (${shown}), which the user reviewed and started.${task ? `\n\nTask: ${task}` : ''}

Plan:
${list}

Its steps are already your todo list: mark each in_progress, then completed, with TodoWrite as you go, and verify at the end.`;
}
