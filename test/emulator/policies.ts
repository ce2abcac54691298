import { z } from 'zod';
import { JUDGE_MARKER } from '../../src/agent/eval/judge.ts';
import { CLASSIFIER_MARKER } from '../../src/agent/safety/autoClassifier.ts';
import type { Scenario, ScriptedBlock, ScriptedReply } from './types.ts';

// Scripted model behaviours for eval suites (`keel eval --emulator`): each policy plays one kind of
// model — one that succeeds, one that succeeds only on some trials, one that gives up, loops, edits
// without reading, asks for a forbidden command, or whose API keeps failing. Deterministic: the only
// input besides the plan is the trial index, so "flaky on trials 1 and 3" is exactly that.

const step = z.union([
  z.strictObject({ read: z.string().min(1) }),
  z.strictObject({
    edit: z.strictObject({ path: z.string().min(1), old: z.string().min(1), new: z.string() }),
  }),
  z.strictObject({ write: z.strictObject({ path: z.string().min(1), content: z.string() }) }),
  z.strictObject({ bash: z.string().min(1) }),
  z.strictObject({ tool: z.string().min(1), input: z.record(z.string(), z.unknown()) }),
]);
export type PolicyStep = z.infer<typeof step>;

const say = z.string().min(1).optional();
/**
 * What the scripted judge answers a judge grader's call (eval/judge.ts), verbatim: one reply for
 * every trial, or one per trial index (the last repeats). Absent: a judge call gets the echo reply,
 * which is no verdict.
 */
const judge = z.union([z.string(), z.array(z.string()).min(1)]).optional();
export const policyPlanSchema = z.discriminatedUnion('policy', [
  z.strictObject({ policy: z.literal('succeeds'), steps: z.array(step), say, judge }),
  z.strictObject({
    policy: z.literal('flaky'),
    steps: z.array(step),
    /** 0-based trial indexes on which the model gives up instead. */
    fail_trials: z.array(z.number().int().nonnegative()),
    say,
    judge,
  }),
  z.strictObject({ policy: z.literal('gives_up'), say, judge }),
  z.strictObject({
    policy: z.literal('loops'),
    tool: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
  }),
  z.strictObject({ policy: z.literal('edits_without_reading'), steps: z.array(step), say, judge }),
  z.strictObject({ policy: z.literal('forbidden_command'), command: z.string().min(1), say, judge }),
  z.strictObject({
    policy: z.literal('api_fault'),
    fault: z.enum(['overloaded', 'rate_limit', 'server_error']).default('overloaded'),
  }),
]);
export type PolicyPlan = z.infer<typeof policyPlanSchema>;

/** Validates a task's `emulator` block; the error names the field. */
export function parsePolicyPlan(plan: unknown): PolicyPlan {
  const parsed = policyPlanSchema.safeParse(plan);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`emulator.${issue?.path.join('.') || 'policy'}: ${issue?.message}`);
  }
  return parsed.data;
}

const withTrial = (s: string, trial: number) => s.replaceAll('{trial}', String(trial));

function toolUse(s: PolicyStep, trial: number): ScriptedBlock {
  if ('read' in s) return { type: 'tool_use', name: 'Read', input: { path: withTrial(s.read, trial) } };
  if ('edit' in s)
    return {
      type: 'tool_use',
      name: 'Edit',
      input: { path: withTrial(s.edit.path, trial), old_string: s.edit.old, new_string: s.edit.new },
    };
  if ('write' in s)
    return {
      type: 'tool_use',
      name: 'Write',
      input: { path: withTrial(s.write.path, trial), content: withTrial(s.write.content, trial) },
    };
  if ('bash' in s) return { type: 'tool_use', name: 'Bash', input: { command: withTrial(s.bash, trial) } };
  return { type: 'tool_use', name: s.tool, input: s.input };
}

function scripted(
  steps: readonly PolicyStep[],
  trial: number,
  text: string,
  judgeReply?: string | readonly string[],
): Scenario {
  const replies: ScriptedReply[] = steps.map((s) => ({ content: [toolUse(s, trial)] }));
  replies.push({ content: [{ type: 'text', text }] });
  // `--approve auto`'s classifier is a conversation of its own too; the scripted one escalates every
  // command it is asked about (one answer per step), so a trial's own replies are never consumed by it.
  const classifier = {
    firstUserContains: CLASSIFIER_MARKER,
    replies: steps.map(() => ({
      content: [
        { type: 'text' as const, text: '{"decision":"escalate","reason":"scripted: a person decides"}' },
      ],
    })),
  };
  const threads = classifier.replies.length > 0 ? [classifier] : [];
  if (judgeReply === undefined) return { name: 'policy', replies, onExhausted: 'echo', threads };
  const verdict = typeof judgeReply === 'string' ? judgeReply : (judgeReply[trial] ?? judgeReply.at(-1)!);
  // The judge's call is a conversation of its own, told apart by the marker its request opens with.
  return {
    name: 'policy',
    replies,
    onExhausted: 'echo',
    threads: [
      ...threads,
      { firstUserContains: JUDGE_MARKER, replies: [{ content: [{ type: 'text', text: verdict }] }] },
    ],
  };
}

const GIVE_UP = "I couldn't complete this task.";

/** The scenario the emulator plays for trial `trial` (0-based) of a task with this plan. */
export function policyScenario(plan: PolicyPlan, trial: number): Scenario {
  switch (plan.policy) {
    case 'succeeds':
      return scripted(plan.steps, trial, plan.say ?? 'Done.', plan.judge);
    case 'flaky':
      return plan.fail_trials.includes(trial)
        ? scripted([], trial, GIVE_UP, plan.judge)
        : scripted(plan.steps, trial, plan.say ?? 'Done.', plan.judge);
    case 'gives_up':
      return scripted([], trial, plan.say ?? GIVE_UP, plan.judge);
    case 'loops':
      return {
        name: 'policy:loops',
        respond: () => ({ content: [{ type: 'tool_use', name: plan.tool, input: plan.input }] }),
      };
    case 'edits_without_reading':
      return scripted(
        plan.steps.filter((s) => !('read' in s)),
        trial,
        plan.say ?? 'Done.',
        plan.judge,
      );
    case 'forbidden_command':
      return scripted([{ bash: plan.command }], trial, plan.say ?? 'Done.', plan.judge);
    case 'api_fault':
      return { name: 'policy:api_fault', respond: () => ({ fault: { type: plan.fault } }) };
  }
}
