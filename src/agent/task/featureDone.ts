import { z } from 'zod';
import { type BashData, createBashTool } from '../tools/bash.ts';
import { fail, ok, type ToolDefinition, type ToolResult } from '../tools/protocol.ts';
import type { FeatureList } from './featureList.ts';

// FeatureDone: the only way a feature's `passes` flips. The tool runs the feature's own verify
// command through the Bash tool's path (same command policy, approvals, shell port and sandbox) and
// flips the flag only when it exits 0. Offered only in long-task sessions.

export const featureDoneInputSchema = z.object({
  id: z.string().min(1).describe('The id of the feature in keel-task/feature_list.json.'),
});
export type FeatureDoneInput = z.infer<typeof featureDoneInputSchema>;

const DESCRIPTION = `Mark a long-task feature as passing. Runs the feature's "verify" command from keel-task/feature_list.json; only if it exits 0 is "passes" set to true. On failure you get the command's output: fix the code and call again.
Call it once the feature works end to end, for the feature this session was given only (others are refused); never edit feature_list.json yourself (refused).
Example: {"id":"F2"}`;

export interface FeatureDoneOptions {
  /** The list as the harness holds it (committed list + this session's flips). */
  readonly current: () => FeatureList;
  /** The one feature this session was given: FeatureDone refuses any other (one feature per session). */
  readonly assigned: string | undefined;
  /** Records a flip; the harness writes the file. */
  readonly flip: (id: string) => void;
}

export function createFeatureDoneTool(
  options: FeatureDoneOptions,
): ToolDefinition<FeatureDoneInput, unknown> {
  const bash = createBashTool();
  return {
    name: 'FeatureDone',
    description: DESCRIPTION,
    inputSchema: featureDoneInputSchema,
    readOnly: false,
    async execute(input, ctx): Promise<ToolResult> {
      const list = options.current();
      const feature = list.features.find((f) => f.id === input.id);
      if (!feature) {
        return fail(
          'NOT_FOUND',
          `No feature with id ${JSON.stringify(input.id)}.`,
          `Use one of: ${list.features.map((f) => f.id).join(', ')}.`,
        );
      }
      // Seed 003's "one feature per session", by code: a session that wanders off to flip others
      // (or all of them) gets a refusal naming the feature it was given.
      if (feature.id !== options.assigned) {
        return fail(
          'BLOCKED_BY_POLICY',
          `This session was given ${options.assigned ?? 'no feature'}; FeatureDone accepts only that one, not ${feature.id}.`,
          options.assigned
            ? `Finish ${options.assigned} and call FeatureDone {"id":"${options.assigned}"}. Leave ${feature.id} to a later session (say so in your final message).`
            : 'Every feature passes; there is nothing to mark.',
        );
      }
      if (feature.passes) return ok({ id: feature.id, passes: true }, `${feature.id} already passes.`);
      const run = (await bash.execute({ command: feature.verify }, ctx)) as ToolResult<BashData | null>;
      if (run.status === 'error') {
        return fail(
          run.error?.code ?? 'INTERNAL',
          `The verify command of ${feature.id} could not run: ${run.error?.message ?? run.text}`,
          run.error?.suggestion ?? 'Tell the user.',
        );
      }
      const exit = run.data?.exit_code;
      if (exit !== 0 || run.status === 'partial') {
        return fail(
          'INVALID_PARAM',
          `${feature.id} does not pass yet: \`${feature.verify}\` ${run.data?.timed_out ? 'timed out' : `exited ${exit}`}.\n${run.text}`,
          'Fix the implementation until the verify command exits 0, then call FeatureDone again. Do not change the verify command.',
        );
      }
      options.flip(feature.id);
      return ok(
        { id: feature.id, passes: true },
        `${feature.id} passes: \`${feature.verify}\` exited 0. It is marked as passing; the harness commits it at the end of this session. Stop here and summarise what is left.`,
      );
    },
  };
}
