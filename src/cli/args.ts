import { parseArgs } from 'node:util';
import type { z } from 'zod';
import {
  doctorSchema,
  evalSchema,
  listingSchema,
  memorySchema,
  trustSchema,
  restoreSchema,
  runSchema,
  sessionsSchema,
  taskSchema,
  toolSchema,
  traceSchema,
  type CliArgs,
  type EvalArgs,
} from './argSchemas.ts';
import { evalSubcommand } from './evalSubcommands.ts';

export type {
  CliArgs,
  DoctorArgs,
  EvalArgs,
  ListingArgs,
  MemoryArgs,
  RestoreArgs,
  RunArgs,
  SessionsArgs,
  TaskArgs,
  ToolArgs,
  TraceArgs,
  TrustArgs,
} from './argSchemas.ts';
export { USAGE } from './usage.ts';

export class UsageError extends Error {}

type FlagOptions = NonNullable<Parameters<typeof parseArgs>[0]>['options'];

/** Node's strict flag parser; an unknown or malformed flag is a usage error (exit 2), not a crash. */
function parseFlags(rest: readonly string[], options: FlagOptions): ReturnType<typeof parseArgs> {
  try {
    return parseArgs({ args: [...rest], allowPositionals: true, strict: true, options });
  } catch (error) {
    throw new UsageError(flagError(error as NodeJS.ErrnoException));
  }
}

/** Node's wording for an unknown flag ends in an unclosed quote and speaks of "positional arguments". */
function flagError(error: NodeJS.ErrnoException): string {
  const unknown = /^Unknown option '([^']+)'/.exec(error.message);
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown)
    return `unknown option ${unknown[1]} (the usage below lists the options; a PROMPT that starts with "-" goes after --, as in: keel run -- "${unknown[1]} …")`;
  return error.message;
}

function parseEval(rest: readonly string[]): EvalArgs {
  const parsed = parseFlags(rest, {
    trials: { type: 'string' },
    concurrency: { type: 'string' },
    model: { type: 'string' },
    json: { type: 'string' },
    html: { type: 'string' },
    filter: { type: 'string' },
    'retry-infra': { type: 'string' },
    out: { type: 'string' },
    emulator: { type: 'boolean' },
    'from-session': { type: 'string' },
    workspace: { type: 'string' },
    effort: { type: 'string' },
    'no-thinking': { type: 'boolean' },
    shard: { type: 'string' },
    'from-feedback': { type: 'boolean' },
  });
  const v = parsed.values as Record<string, string | boolean | undefined>;
  const sub = evalSubcommand(parsed.positionals, v);
  if (sub && 'usage' in sub) throw new UsageError(sub.usage);
  // merge / calibrate make no agent runs: thinking flags do not apply to them.
  if (sub) return check(evalSchema(), { noThinking: false, ...sub.fields });
  if (v['from-session'] !== undefined && parsed.positionals.length !== 1)
    throw new UsageError(
      'keel eval --from-session SESSION-ID takes one OUT-DIR (the suite to write the task into)',
    );
  if (parsed.positionals.length !== 1) throw new UsageError('keel eval takes one SUITE directory');
  return check(evalSchema(), {
    command: 'eval',
    suite: parsed.positionals[0],
    trials: v.trials,
    concurrency: v.concurrency,
    model: v.model,
    json: v.json,
    html: v.html,
    filter: v.filter,
    retryInfra: v['retry-infra'],
    out: v.out,
    emulator: v.emulator === true,
    fromSession: v['from-session'],
    workspace: v.workspace,
    ...thinkingFlags(v),
    shard: v.shard,
    fromFeedback: v['from-feedback'] === true ? true : undefined,
  });
}

/** The thinking flags as given (both at once is a usage error: they contradict). */
function thinkingFlags(v: Record<string, unknown>): { effort: unknown; noThinking: boolean } {
  if (v.effort !== undefined && v['no-thinking'] === true)
    throw new UsageError('--effort and --no-thinking contradict each other: give one');
  return { effort: v.effort, noThinking: v['no-thinking'] === true };
}

function check<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => i.message).join('; '));
  return parsed.data;
}

/**
 * `--classifier-model MODEL`: the auto approval mode's classifier, so only with `--approve auto` —
 * anywhere else nothing would consult it, and a flag silently ignored reads as a safety net that is
 * not there (a usage error, exit 2).
 */
function classifierFlag(v: Record<string, unknown>): string | undefined {
  const flag = v['classifier-model'];
  if (flag === undefined) return undefined;
  if (v.approve !== 'auto')
    throw new UsageError(
      "--classifier-model is the auto approval mode's classifier: it needs --approve auto (nothing else consults it)",
    );
  return typeof flag === 'string' ? flag : undefined;
}

export function parseCli(argv: readonly string[]): CliArgs {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') return { command: 'help' };
  if (command === '--version' || command === '-V' || command === 'version') {
    if (rest.length > 0) throw new UsageError(`keel ${command} takes no arguments`);
    return { command: 'version' };
  }
  if (command === 'eval') return parseEval(rest);
  const parsed = parseFlags(rest, {
    workspace: { type: 'string' },
    model: { type: 'string' },
    'fallback-model': { type: 'string', multiple: true },
    api: { type: 'string' },
    'subagent-model': { type: 'string', multiple: true },
    'classifier-model': { type: 'string' },
    'max-turns': { type: 'string' },
    approve: { type: 'string' },
    json: { type: 'boolean' },
    resume: { type: 'string' },
    'context-window': { type: 'string' },
    demo: { type: 'boolean' },
    html: { type: 'string' },
    sandbox: { type: 'string' },
    'allow-domain': { type: 'string', multiple: true },
    'mcp-config': { type: 'string', multiple: true },
    'job-wait': { type: 'string' },
    'before-prompt': { type: 'string' },
    undo: { type: 'boolean' },
    stats: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    force: { type: 'boolean' },
    fork: { type: 'boolean' },
    yes: { type: 'boolean' },
    revoke: { type: 'boolean' },
    sessions: { type: 'string' },
    effort: { type: 'string' },
    'no-thinking': { type: 'boolean' },
    agent: { type: 'string' },
    plan: { type: 'boolean' },
    'from-plan': { type: 'string' },
    'add-dir': { type: 'string', multiple: true },
    image: { type: 'string', multiple: true },
  });
  const v = parsed.values as Record<string, string | boolean | string[] | undefined>;
  const pos = parsed.positionals;
  const allowedFor = (allowed: string[]) => {
    const extra = Object.keys(v).filter((k) => v[k] !== undefined && !allowed.includes(k));
    if (extra.length > 0) throw new UsageError(`keel ${command} does not take --${extra.join(', --')}`);
  };
  switch (command) {
    case 'run': {
      allowedFor([
        'workspace',
        'model',
        'fallback-model',
        'api',
        'subagent-model',
        'classifier-model',
        'max-turns',
        'approve',
        'json',
        'resume',
        'context-window',
        'demo',
        'mcp-config',
        'job-wait',
        'sandbox',
        'allow-domain',
        'effort',
        'no-thinking',
        'agent',
        'plan',
        'from-plan',
        'add-dir',
        'image',
      ]);
      if (v.plan === true && v.agent !== undefined && v.agent !== 'plan')
        throw new UsageError('keel run takes --plan or --agent NAME, not both (--plan is --agent plan)');
      if (pos.length !== 1 && !(pos.length === 0 && (v.resume || v.demo || v['from-plan']))) {
        throw new UsageError(
          pos.length === 0 ? 'keel run needs a PROMPT' : 'keel run takes one PROMPT (quote it)',
        );
      }
      // The API rejects a whitespace-only text block; say so here instead of after a network round trip.
      if (pos.length === 1 && pos[0]!.trim() === '') throw new UsageError('keel run: the PROMPT is empty');
      return check(runSchema(), {
        command,
        workspace: v.workspace,
        model: v.model,
        fallbackModels: v['fallback-model'] ?? [],
        maxTurns: v['max-turns'],
        approve: v.approve,
        json: v.json === true,
        resume: v.resume,
        contextWindow: v['context-window'],
        demo: v.demo === true,
        mcpConfig: v['mcp-config'] ?? [],
        jobWait: v['job-wait'],
        prompt: pos[0] ?? '',
        sandbox: v.sandbox,
        allowDomain: v['allow-domain'] ?? [],
        ...thinkingFlags(v),
        api: v.api,
        subagentModels: v['subagent-model'] ?? [],
        classifierModel: classifierFlag(v),
        agent: v.plan === true ? 'plan' : v.agent,
        fromPlan: v['from-plan'],
        addDirs: v['add-dir'] ?? [],
        images: v.image ?? [],
      });
    }
    case 'commands':
    case 'agents':
      allowedFor(['workspace', 'json']);
      if (pos.length !== 0) throw new UsageError(`keel ${command} takes no arguments`);
      return check(listingSchema(), { command, workspace: v.workspace, json: v.json === true });
    case 'tool':
      allowedFor(['workspace', 'approve', 'sandbox', 'allow-domain', 'add-dir']);
      if (pos.length === 0)
        return check(toolSchema(), {
          command,
          name: '',
          input: '',
          workspace: v.workspace,
          approve: v.approve,
          sandbox: v.sandbox,
          allowDomain: v['allow-domain'] ?? [],
          addDirs: v['add-dir'] ?? [],
        });
      if (pos.length !== 2)
        throw new UsageError("keel tool takes NAME and 'JSON-INPUT' (`keel tool` alone lists the tools)");
      return check(toolSchema(), {
        command,
        name: pos[0],
        input: pos[1],
        workspace: v.workspace,
        approve: v.approve,
        sandbox: v.sandbox,
        allowDomain: v['allow-domain'] ?? [],
        addDirs: v['add-dir'] ?? [],
      });
    case 'doctor':
      allowedFor(['sandbox']);
      if (pos.length !== 0) throw new UsageError('keel doctor takes no arguments');
      return check(doctorSchema(), { command, sandbox: v.sandbox });
    case 'trace':
      allowedFor(['workspace', 'html']);
      if (pos.length !== 1) throw new UsageError('keel trace takes one SESSION-ID or FILE');
      return check(traceSchema(), { command, target: pos[0], workspace: v.workspace, html: v.html });
    case 'memory': {
      const [action, ...more] = pos;
      if (action === 'search') {
        allowedFor(['workspace', 'json']);
        if (more.length !== 1) throw new UsageError('keel memory search takes one QUERY (quote it)');
        return check(memorySchema(), {
          command,
          action,
          query: more[0],
          workspace: v.workspace,
          json: v.json === true,
        });
      }
      if (action === 'rollback') {
        allowedFor(['workspace']);
        if (more.length !== 0) throw new UsageError('keel memory rollback takes no arguments');
        return check(memorySchema(), { command, action, workspace: v.workspace });
      }
      throw new UsageError('keel memory takes "search QUERY" or "rollback"');
    }
    case 'trust':
      allowedFor(['workspace', 'yes', 'revoke', 'json']);
      if (pos.length !== 0)
        throw new UsageError('keel trust takes no arguments (--yes approves, --revoke forgets)');
      return check(trustSchema(), {
        command,
        workspace: v.workspace,
        yes: v.yes === true,
        revoke: v.revoke === true,
        json: v.json === true,
      });
    case 'sessions':
      allowedFor(['workspace', 'json']);
      if (pos.length !== 0) throw new UsageError('keel sessions takes no arguments');
      return check(sessionsSchema(), { command, workspace: v.workspace, json: v.json === true });
    case 'restore': {
      allowedFor([
        'workspace',
        'before-prompt',
        'undo',
        'stats',
        'dry-run',
        'force',
        'fork',
        'json',
        'add-dir',
      ]);
      if (v.fork === true && v['before-prompt'] === undefined)
        throw new UsageError('keel restore --fork goes with --before-prompt N');
      const modes = [v['before-prompt'] !== undefined, v.undo === true, v.stats === true].filter(
        Boolean,
      ).length;
      if (modes !== 1)
        throw new UsageError('keel restore takes exactly one of --before-prompt N, --undo, --stats');
      if (v.stats !== true && pos.length !== 1) throw new UsageError('keel restore takes one SESSION-ID');
      if (v.stats === true && pos.length > 0)
        throw new UsageError('keel restore --stats takes no SESSION-ID');
      return check(restoreSchema(), {
        command,
        sessionId: pos[0],
        beforePrompt: v['before-prompt'],
        undo: v.undo === true,
        stats: v.stats === true,
        dryRun: v['dry-run'] === true,
        force: v.force === true,
        fork: v.fork === true,
        json: v.json === true,
        workspace: v.workspace,
        addDirs: v['add-dir'] ?? [],
      });
    }
    case 'task': {
      const action = pos[0];
      if (action !== 'init' && action !== 'run' && action !== 'status')
        throw new UsageError('keel task takes init "SPEC", run or status');
      const common = ['workspace', 'json'];
      const session = [
        'model',
        'fallback-model',
        'api',
        'subagent-model',
        'classifier-model',
        'approve',
        'max-turns',
        'effort',
        'no-thinking',
      ];
      allowedFor(
        action === 'status'
          ? common
          : action === 'init'
            ? [...common, ...session]
            : [...common, ...session, 'sessions'],
      );
      if (action === 'init' && (pos.length !== 2 || pos[1]!.trim() === ''))
        throw new UsageError('keel task init takes one non-empty "SPEC" (quote it)');
      if (action !== 'init' && pos.length !== 1)
        throw new UsageError(`keel task ${action} takes no other arguments`);
      return check(taskSchema(), {
        command,
        action,
        spec: pos[1],
        sessions: v.sessions,
        maxTurns: v['max-turns'],
        model: v.model,
        fallbackModels: v['fallback-model'] ?? [],
        approve: v.approve,
        json: v.json === true,
        workspace: v.workspace,
        ...thinkingFlags(v),
        api: v.api,
        subagentModels: v['subagent-model'] ?? [],
        classifierModel: classifierFlag(v),
      });
    }
    default:
      throw new UsageError(`Unknown command: ${command}`);
  }
}
