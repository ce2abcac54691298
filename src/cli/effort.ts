import { type Effort, isEffort } from '../agent/model/models.ts';

/**
 * The session's thinking level from the flags, then KEEL_EFFORT (the CLI's counterpart of the
 * `keel.effort` setting); nothing given = the core's default (medium where the model thinks).
 */
export function effortOption(
  args: { readonly effort?: Effort | undefined; readonly noThinking: boolean },
  env: NodeJS.ProcessEnv = process.env,
): { effort?: Effort | 'off' } {
  if (args.noThinking) return { effort: 'off' };
  if (args.effort) return { effort: args.effort };
  const fromEnv = env.KEEL_EFFORT?.trim().toLowerCase();
  if (fromEnv === 'off' || isEffort(fromEnv)) return { effort: fromEnv };
  return {};
}
