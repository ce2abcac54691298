import type { AgentMessage, ToolResultMessage } from '../messages.ts';
import type { SkillEntry } from '../skills/discover.ts';
import { readSkillNow, skillErrorCodes } from '../skills/discover.ts';
import { recoveryGuide } from './guides.ts';

// P6: two errors of the same class in a row re-inject the relevant guide, without waiting for the
// model to think of re-reading it. Fires once per streak (at its second error).

export const GUIDE_SOURCE = 'skill_guide';

export function errorClass(message: ToolResultMessage): string | undefined {
  if (!message.isError && message.result?.status !== 'error') return undefined;
  return message.result?.error?.code ?? 'ERROR';
}

export function errorStreakGuide(
  transcript: readonly AgentMessage[],
  skills: readonly SkillEntry[],
): { text: string; source: string; code: string } | undefined {
  const results: ToolResultMessage[] = [];
  let lastAssistant = -1;
  for (let i = transcript.length - 1; i >= 0 && results.length < 3; i--) {
    const message = transcript[i]!;
    if (message.role === 'assistant' && lastAssistant < 0) lastAssistant = i;
    if (message.role === 'tool_result') results.unshift(message);
  }
  const [third, second, last] = results.length === 3 ? results : [undefined, ...results];
  if (!last || !second) return undefined;
  // The newest error must come from the latest batch, or an old streak would fire again.
  if (transcript.indexOf(last) < lastAssistant) return undefined;
  const code = errorClass(last);
  if (!code || errorClass(second) !== code) return undefined;
  if (third && errorClass(third) === code) return undefined;
  const parts = [`Two ${code} errors in a row. ${recoveryGuide(code)}`];
  for (const skill of skills) {
    if (!skillErrorCodes(skill).includes(code)) continue;
    const { entry } = readSkillNow(skill);
    parts.push(`Guide from skill "${entry.name}":\n${entry.body}`);
  }
  return { text: parts.join('\n\n'), source: GUIDE_SOURCE, code };
}
