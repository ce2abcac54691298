import { z } from 'zod';
import { lazy } from '../lazy.ts';
import type { HookEvent } from './config.ts';

// Claude Code's hook output contract. Exit 0: success; stdout, when it is a JSON object, may carry
// `decision` ("block"/"approve"), `reason`, `continue:false` + `stopReason`, `systemMessage`, and
// `hookSpecificOutput` ({permissionDecision allow|deny|ask, permissionDecisionReason,
// additionalContext, updatedInput}); for UserPromptSubmit and SessionStart plain stdout is context.
// Exit 2: block — stderr goes to the model (PreToolUse refuses the call, PostToolUse/Stop/SubagentStop
// feed it back) or to the user (UserPromptSubmit drops the prompt). Any other exit, a timeout, a
// sandbox refusal: a non-blocking problem shown to the user. What reaches the model or the user is
// capped, so a hook that prints megabytes cannot flood the context.

/** What a hook's output may put in front of the model or the user, at most (head and tail kept). */
export const HOOK_TEXT_MAX_CHARS = 10_000;

export function capText(text: string, max = HOOK_TEXT_MAX_CHARS): string {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n[… ${text.length - 2 * half} characters of hook output dropped …]\n${text.slice(-half)}`;
}

const outputSchema = lazy(() =>
  z
    .object({
      continue: z.boolean().optional(),
      stopReason: z.string().optional(),
      systemMessage: z.string().optional(),
      decision: z.enum(['block', 'approve']).optional(),
      reason: z.string().optional(),
      updatedInput: z.record(z.string(), z.unknown()).optional(),
      hookSpecificOutput: z
        .object({
          permissionDecision: z.enum(['allow', 'deny', 'ask']).optional(),
          permissionDecisionReason: z.string().optional(),
          additionalContext: z.string().optional(),
          updatedInput: z.record(z.string(), z.unknown()).optional(),
        })
        .passthrough()
        .optional(),
    })
    .passthrough(),
);

/** One hook command's run, as the shell reported it. */
export interface HookRunResult {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly aborted: boolean;
  readonly timeoutMs: number;
  /** What the OS sandbox refused, in words. */
  readonly denied?: string;
}

/** What one hook (or all hooks of an event, combined) decided. */
export interface HookVerdict {
  /** Refuse / feed back: the reason (for the model, or the user for UserPromptSubmit). */
  readonly block?: string;
  /** Text added to the model's context, after the last cache breakpoint. */
  readonly context?: string;
  /** PreToolUse: the tool input to run instead (validated and judged like the original). */
  readonly updatedInput?: Record<string, unknown>;
  readonly permission?: 'allow' | 'deny' | 'ask';
  /** `continue: false`: end the run; the reason is for the user. */
  readonly stop?: string;
  /** Non-blocking problems and systemMessages, for the user. */
  readonly notices?: readonly string[];
}

/** The audit log's one word for a verdict. */
export function verdictWord(v: HookVerdict): string {
  if (v.stop !== undefined) return 'stop';
  if (v.block !== undefined) return 'block';
  if (v.permission) return v.permission;
  if (v.updatedInput) return 'update_input';
  if (v.notices?.length) return 'error';
  return 'ok';
}

const PLAIN_STDOUT_IS_CONTEXT: ReadonlySet<HookEvent> = new Set(['UserPromptSubmit', 'SessionStart']);

const parseJsonObject = (text: string): unknown => {
  const t = text.trim();
  if (!t.startsWith('{')) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
};

/** How one hook command's run reads under the contract. `who` names the hook in user notices. */
export function interpretRun(event: HookEvent, run: HookRunResult, who: string): HookVerdict {
  if (run.aborted) return {};
  const stderr = capText(run.stderr.trim());
  const notices: string[] = [];
  if (run.denied) notices.push(`${who}: the sandbox refused ${run.denied}`);
  if (run.timedOut)
    return {
      notices: [...notices, `${who} timed out after ${Math.round(run.timeoutMs / 1000)} s and was stopped`],
    };
  if (run.exitCode === 2)
    return {
      block: stderr || `${event} hook ${who} exited with code 2`,
      ...(notices.length ? { notices } : {}),
    };
  if (run.exitCode !== 0)
    return {
      notices: [
        ...notices,
        `${who} failed (exit ${run.exitCode ?? 'signal'})${stderr ? `: ${capText(stderr, 500)}` : ''}`,
      ],
    };
  const json = parseJsonObject(run.stdout);
  if (json === undefined) {
    const text = capText(run.stdout.trim());
    return {
      ...(PLAIN_STDOUT_IS_CONTEXT.has(event) && text ? { context: text } : {}),
      ...(notices.length ? { notices } : {}),
    };
  }
  const parsed = outputSchema().safeParse(json);
  if (!parsed.success)
    return {
      notices: [
        ...notices,
        `${who} printed JSON Keel does not understand (${parsed.error.issues[0]?.path.join('.') || 'output'}: ${parsed.error.issues[0]?.message}); ignored`,
      ],
    };
  const out = parsed.data;
  const specific = out.hookSpecificOutput;
  if (out.systemMessage) notices.push(`${who}: ${capText(out.systemMessage, 500)}`);
  const verdict: {
    -readonly [K in keyof HookVerdict]: HookVerdict[K];
  } = {};
  if (out.continue === false) verdict.stop = capText(out.stopReason ?? `${who} asked Keel to stop`);
  const denyReason = specific?.permissionDecisionReason ?? out.reason;
  if (specific?.permissionDecision === 'deny' || out.decision === 'block')
    verdict.block = capText(denyReason ?? `${event} hook ${who} blocked this`);
  else if (specific?.permissionDecision) verdict.permission = specific.permissionDecision;
  else if (out.decision === 'approve') verdict.permission = 'allow';
  if (specific?.additionalContext?.trim()) verdict.context = capText(specific.additionalContext.trim());
  const updated = specific?.updatedInput ?? out.updatedInput;
  if (updated && event === 'PreToolUse') verdict.updatedInput = updated;
  if (notices.length) verdict.notices = notices;
  return verdict;
}

const PERMISSION_RANK = { allow: 0, ask: 1, deny: 2 } as const;

/** Hooks of one event run together; their verdicts combine, the strictest winning. */
export function combineVerdicts(verdicts: readonly HookVerdict[]): HookVerdict {
  const blocks = verdicts.flatMap((v) => (v.block !== undefined ? [v.block] : []));
  const contexts = verdicts.flatMap((v) => (v.context ? [v.context] : []));
  const notices = verdicts.flatMap((v) => v.notices ?? []);
  const stop = verdicts.find((v) => v.stop !== undefined)?.stop;
  // The last hook (in settings order) that rewrote the input wins, as it would run last in a chain.
  const updatedInput = [...verdicts].reverse().find((v) => v.updatedInput)?.updatedInput;
  let permission: HookVerdict['permission'];
  for (const v of verdicts)
    if (v.permission && (!permission || PERMISSION_RANK[v.permission] > PERMISSION_RANK[permission]))
      permission = v.permission;
  return {
    ...(blocks.length ? { block: capText(blocks.join('\n')) } : {}),
    ...(contexts.length ? { context: capText(contexts.join('\n\n')) } : {}),
    ...(updatedInput ? { updatedInput } : {}),
    ...(permission ? { permission } : {}),
    ...(stop !== undefined ? { stop } : {}),
    ...(notices.length ? { notices } : {}),
  };
}
