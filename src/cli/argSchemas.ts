import { z } from 'zod';
import { parseShard } from '../agent/eval/shard.ts';
import { lazy } from '../agent/lazy.ts';
import { EFFORTS } from '../agent/model/models.ts';
import { MIN_CONTEXT_WINDOW } from '../agent/model/pricing.ts';

// What each `keel` command accepts, validated after Node's flag parser (args.ts) has split argv.
// Each command's schema is built when that command is parsed (lazy): `keel tool LS` builds one.
const approve = () =>
  z.enum(['never', 'safe', 'auto', 'all'], { message: '--approve takes never, safe, auto or all' });
const allowDomain = () =>
  z.array(
    z
      .string()
      .regex(
        /^(\*\.|\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i,
        '--allow-domain takes a domain name such as example.com or *.example.com (no scheme, port or path)',
      ),
  );
const sandbox = () => z.enum(['on', 'off', 'required'], { message: '--sandbox takes on, off or required' });
/** `--effort LEVEL` and `--no-thinking` (run, task, eval); resolved to one value by thinkingChoice(). */
const thinking = () => ({
  effort: z.enum(EFFORTS, { message: `--effort takes ${EFFORTS.join(', ')}` }).optional(),
  noThinking: z.boolean(),
});
/** `--api chat|responses` and `--subagent-model KIND=MODEL` (run, task): checked further in modelChoice.ts. */
const models = () => ({
  api: z.enum(['chat', 'responses'], { message: '--api takes chat or responses' }).optional(),
  subagentModels: z.array(z.string().min(1)),
  /** `--classifier-model MODEL` (with --approve auto; checked further in modelChoice.ts). */
  classifierModel: z.string().trim().min(1, '--classifier-model takes a model id').optional(),
});
const positiveInt = (name: string) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a positive whole number`)
    .transform(Number)
    // "0" passes the regex: the flag is named here too, not zod's bare "Too small: expected number to be >0".
    .pipe(z.number().int().positive(`${name} must be a positive whole number (1 or more)`));

export const runSchema = lazy(() =>
  z.object({
    command: z.literal('run'),
    workspace: z.string().optional(),
    /** --add-dir: more workspace folders (Claude Code's flag), checked in cliHost.ts. */
    addDirs: z.array(z.string().min(1, '--add-dir takes a folder')),
    model: z.string().min(1).optional(),
    fallbackModels: z.array(z.string().min(1)),
    maxTurns: positiveInt('--max-turns').optional(),
    approve: approve().optional(),
    json: z.boolean(),
    resume: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,80}$/, '--resume takes a session id (letters, digits, - and _)')
      .optional(),
    // A usage error (exit 2, as documented) before anything starts, not a failed run (exit 1).
    contextWindow: positiveInt('--context-window')
      .pipe(
        z
          .number()
          .min(
            MIN_CONTEXT_WINDOW,
            `--context-window must be at least ${MIN_CONTEXT_WINDOW} tokens: Keel refuses to run with less room`,
          ),
      )
      .optional(),
    demo: z.boolean(),
    mcpConfig: z.array(z.string().min(1)),
    jobWait: z
      .string()
      .regex(/^\d+$/, '--job-wait must be a whole number of seconds')
      .transform(Number)
      .optional(),
    prompt: z.string(),
    sandbox: sandbox().optional(),
    allowDomain: allowDomain(),
    ...thinking(),
    ...models(),
    /** `--agent NAME` (a custom agent as the main agent); `--plan` is `--agent plan`. */
    agent: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/i, '--agent takes an agent name (`keel agents` lists them)')
      .optional(),
    /** `--from-plan FILE`: carry out a plan file (plan mode writes them to .keel/plans/). */
    fromPlan: z.string().min(1).optional(),
    /** `--image FILE`: attached to the prompt as `@FILE` would be (checked in mentions.ts). */
    images: z.array(z.string().min(1, '--image takes an image file')),
  }),
);
/** `keel commands` / `keel agents`: what was found, and where. */
export const listingSchema = lazy(() =>
  z.object({
    command: z.enum(['commands', 'agents']),
    workspace: z.string().optional(),
    json: z.boolean(),
  }),
);
export type ListingArgs = z.infer<ReturnType<typeof listingSchema>>;
export const toolSchema = lazy(() =>
  z.object({
    command: z.literal('tool'),
    /** Empty: `keel tool` without arguments lists the tools. */
    name: z.string(),
    input: z.string(),
    workspace: z.string().optional(),
    /** --add-dir: more workspace folders (Claude Code's flag), checked in cliHost.ts. */
    addDirs: z.array(z.string().min(1, '--add-dir takes a folder')),
    approve: approve().optional(),
    sandbox: sandbox().optional(),
    allowDomain: allowDomain(),
  }),
);
export const doctorSchema = lazy(() =>
  z.object({ command: z.literal('doctor'), sandbox: sandbox().optional() }),
);
export const traceSchema = lazy(() =>
  z.object({
    command: z.literal('trace'),
    target: z.string().min(1),
    workspace: z.string().optional(),
    html: z.string().min(1).optional(),
  }),
);

export const memorySchema = lazy(() =>
  z.discriminatedUnion('action', [
    z.object({
      command: z.literal('memory'),
      action: z.literal('search'),
      query: z.string().trim().min(2, 'keel memory search: the QUERY needs at least 2 characters'),
      workspace: z.string().optional(),
      json: z.boolean(),
    }),
    z.object({
      command: z.literal('memory'),
      action: z.literal('rollback'),
      workspace: z.string().optional(),
    }),
  ]),
);

export const trustSchema = lazy(() =>
  z
    .object({
      command: z.literal('trust'),
      workspace: z.string().optional(),
      yes: z.boolean(),
      revoke: z.boolean(),
      json: z.boolean(),
    })
    .refine((v) => !(v.yes && v.revoke), 'keel trust takes --yes or --revoke, not both'),
);
export type TrustArgs = z.infer<ReturnType<typeof trustSchema>>;

export const sessionsSchema = lazy(() =>
  z.object({
    command: z.literal('sessions'),
    workspace: z.string().optional(),
    json: z.boolean(),
  }),
);
export type SessionsArgs = z.infer<ReturnType<typeof sessionsSchema>>;

export const restoreSchema = lazy(() =>
  z.object({
    command: z.literal('restore'),
    sessionId: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,80}$/, 'keel restore takes a session id (letters, digits, - and _)')
      .optional(),
    beforePrompt: positiveInt('--before-prompt').optional(),
    undo: z.boolean(),
    stats: z.boolean(),
    dryRun: z.boolean(),
    force: z.boolean(),
    /** Also start a new session from before that prompt ("Restore and edit this message"). */
    fork: z.boolean(),
    json: z.boolean(),
    workspace: z.string().optional(),
    /** --add-dir: more workspace folders (Claude Code's flag), checked in cliHost.ts. */
    addDirs: z.array(z.string().min(1, '--add-dir takes a folder')),
  }),
);

export type RestoreArgs = z.infer<ReturnType<typeof restoreSchema>>;

export const taskSchema = lazy(() =>
  z.object({
    command: z.literal('task'),
    action: z.enum(['init', 'run', 'status']),
    spec: z.string().optional(),
    sessions: positiveInt('--sessions').optional(),
    maxTurns: positiveInt('--max-turns').optional(),
    model: z.string().min(1).optional(),
    fallbackModels: z.array(z.string().min(1)),
    approve: approve().optional(),
    json: z.boolean(),
    workspace: z.string().optional(),
    ...thinking(),
    ...models(),
  }),
);
export type TaskArgs = z.infer<ReturnType<typeof taskSchema>>;
export type MemoryArgs = z.infer<ReturnType<typeof memorySchema>>;
export type RunArgs = z.infer<ReturnType<typeof runSchema>>;
export type ToolArgs = z.infer<ReturnType<typeof toolSchema>>;
export type TraceArgs = z.infer<ReturnType<typeof traceSchema>>;
export const evalSchema = lazy(() =>
  z.object({
    command: z.literal('eval'),
    suite: z.string().min(1),
    trials: positiveInt('--trials').optional(),
    concurrency: positiveInt('--concurrency').optional(),
    model: z.string().min(1).optional(),
    json: z.string().min(1).optional(),
    html: z.string().min(1).optional(),
    filter: z.string().min(1).optional(),
    retryInfra: z
      .string()
      .regex(/^\d+$/, '--retry-infra must be a whole number')
      .transform(Number)
      .optional(),
    out: z.string().min(1).optional(),
    emulator: z.boolean(),
    /** `--from-session ID`: `suite` is then the OUT-DIR to write the task into. */
    fromSession: z.string().min(1).optional(),
    workspace: z.string().min(1).optional(),
    ...thinking(),
    /** `--shard I/N`: this machine runs its share of the trials (eval/shard.ts). */
    shard: z
      .string()
      .transform((text, ctx) => {
        const shard = parseShard(text);
        if (typeof shard !== 'string') return shard;
        ctx.addIssue({ code: 'custom', message: shard });
        return z.NEVER;
      })
      .optional(),
    /** `keel eval merge REPORT…`: the shard reports to merge (`suite` is then "merge"). */
    merge: z.array(z.string().min(1)).min(1).optional(),
    /** `--from-feedback`: `suite` is the OUT-DIR for draft tasks from thumbs-down sessions. */
    fromFeedback: z.literal(true).optional(),
    /** `keel eval calibrate SET.json`: the labelled set to run the judge over (`suite` is "calibrate"). */
    calibrate: z.string().min(1).optional(),
  }),
);
export type EvalArgs = z.infer<ReturnType<typeof evalSchema>>;

export type DoctorArgs = z.infer<ReturnType<typeof doctorSchema>>;
export type CliArgs =
  | RunArgs
  | ToolArgs
  | TraceArgs
  | DoctorArgs
  | MemoryArgs
  | SessionsArgs
  | TrustArgs
  | RestoreArgs
  | TaskArgs
  | EvalArgs
  | ListingArgs
  | { command: 'help' }
  | { command: 'version' };
