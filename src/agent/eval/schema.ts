import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { declaredEnvProblems } from './graderEnv.ts';
import { containedInSuite, linksOutOfSuite, suiteRoot } from './suitePaths.ts';

// An eval suite is a directory: `suite.json` (name, defaults) and `tasks/*.json`. Everything is
// validated up front; a bad suite gets one error per problem naming the file and the field, and no
// trial starts.

const approve = z.enum(['never', 'safe', 'auto', 'all']);

const commandGrader = z.strictObject({
  type: z.literal('command'),
  run: z.string().min(1),
  expect_exit: z.number().int().min(0).max(255).default(0),
  timeout_s: z.number().positive().max(3600).default(120),
  /** The grader needs the network: it then gets it only through Keel's domain proxy, as Bash does. */
  network: z.boolean().optional(),
});
const fileGrader = z
  .strictObject({
    type: z.literal('file'),
    path: z.string().min(1),
    contains: z.string().optional(),
    equals: z.string().optional(),
    absent: z.literal(true).optional(),
  })
  .refine((g) => [g.contains, g.equals, g.absent].filter((x) => x !== undefined).length === 1, {
    message: 'a file grader needs exactly one of "contains", "equals" or "absent": true',
  })
  .refine((g) => !path.isAbsolute(g.path) && !g.path.split(/[\\/]/).includes('..'), {
    message: 'path must stay inside the trial workspace (relative, no "..")',
    path: ['path'],
  });
const transcriptGrader = z
  .strictObject({
    type: z.literal('transcript'),
    max_tool_calls: z.number().int().nonnegative().optional(),
    forbid_tools: z.array(z.string().min(1)).optional(),
    must_call: z.array(z.string().min(1)).optional(),
    max_cost_usd: z.number().nonnegative().optional(),
  })
  .refine(
    (g) =>
      g.max_tool_calls !== undefined ||
      g.forbid_tools !== undefined ||
      g.must_call !== undefined ||
      g.max_cost_usd !== undefined,
    {
      message:
        'a transcript grader needs at least one of max_tool_calls, forbid_tools, must_call, max_cost_usd',
    },
  );
/** An LLM judge reads the rubric, the task, the transcript and the diff (judge.ts). */
const judgeGrader = z.strictObject({
  type: z.literal('judge'),
  rubric: z.string().trim().min(1),
  /** The grader passes when the judge's score is at least this. */
  threshold: z.number().min(0).max(1),
  /** The judge's model; default: the run's model. */
  model: z.string().min(1).optional(),
});
export const graderSchema = z.discriminatedUnion('type', [
  commandGrader,
  fileGrader,
  transcriptGrader,
  judgeGrader,
]);
export type Grader = z.infer<typeof graderSchema>;

/**
 * How the bundled emulator plays the model for this task when the suite runs with `--emulator`
 * (ignored against a real API). Free-form beyond `policy`: the policy validates its own fields.
 */
const emulatorPlan = z.looseObject({ policy: z.string().min(1) });

/** What a task may set and the suite's `defaults` may set for every task. */
const runLimits = {
  trials: z.number().int().positive().max(1000).optional(),
  max_turns: z.number().int().positive().max(500).optional(),
  timeout_s: z
    .number()
    .positive()
    .max(24 * 3600)
    .optional(),
  approve: approve.optional(),
  /** Non-secret variables the command graders see (over the task's own `env`, the defaults'). */
  env: z.record(z.string(), z.string()).optional(),
};

const defaults = z.strictObject({ ...runLimits, model: z.string().min(1).optional() });

export const suiteFileSchema = z.strictObject({
  name: z.string().min(1),
  description: z.string().optional(),
  defaults: defaults.optional(),
});

export const taskFileSchema = z.strictObject({
  id: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'id: letters, digits, ".", "_" and "-" (max 100)'),
  description: z.string().optional(),
  prompt: z.string().trim().min(1),
  fixture: z.string().min(1),
  ...runLimits,
  graders: z.array(graderSchema).min(1, 'a task needs at least one grader'),
  emulator: emulatorPlan.optional(),
});
export type TaskFile = z.infer<typeof taskFileSchema>;

/** In the placeholder grader `--from-session` writes: a task whose grader still has it is refused. */
export const PLACEHOLDER_MARKER = 'TODO(keel-from-session)';

export interface EvalTask extends TaskFile {
  /** Absolute fixture directory. */
  readonly fixtureDir: string;
  /** The task file, for messages. */
  readonly file: string;
  readonly max_turns: number;
  readonly timeout_s: number;
  readonly approve: 'never' | 'safe' | 'auto' | 'all';
  readonly trials: number | undefined;
  /** The suite's declared grader variables: the defaults' with the task's over them. */
  readonly env: Readonly<Record<string, string>>;
}

export interface EvalSuite {
  readonly dir: string;
  readonly name: string;
  readonly defaults: z.infer<typeof defaults>;
  readonly tasks: readonly EvalTask[];
}

export class SuiteError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`The eval suite has ${problems.length} problem(s):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'SuiteError';
  }
}

function fieldPath(p: readonly PropertyKey[]): string {
  let out = '';
  for (const part of p)
    out += typeof part === 'number' ? `[${part}]` : out ? `.${String(part)}` : String(part);
  return out || '(top level)';
}

function parseJsonFile(file: string, rel: string, problems: string[]): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    problems.push(`${rel}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    problems.push(`${rel}: not valid JSON (${(error as Error).message})`);
    return undefined;
  }
}

function check<T>(schema: z.ZodType<T>, value: unknown, rel: string, problems: string[]): T | undefined {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues)
    problems.push(`${rel}: ${fieldPath(issue.path)}: ${issue.message}`);
  return undefined;
}

/** Loads and validates a suite directory; throws SuiteError listing every problem found. */
export function loadSuite(dir: string): EvalSuite {
  const problems: string[] = [];
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory())
    throw new SuiteError([
      `${dir}: not a directory (a suite is a directory with suite.json and tasks/*.json)`,
    ]);
  // Canonical: every path the suite names is contained in this folder, symlinks followed.
  const suiteDir = suiteRoot(dir);
  const within = (name: string, where: string): string | undefined => {
    const r = containedInSuite(suiteDir, name);
    if (r.problem !== undefined) problems.push(`${where}: refused: ${r.problem}`);
    return r.path;
  };
  const suitePath = within('suite.json', 'suite.json');
  const suiteJson = suitePath ? parseJsonFile(suitePath, 'suite.json', problems) : undefined;
  const suite =
    suiteJson === undefined ? undefined : check(suiteFileSchema, suiteJson, 'suite.json', problems);
  for (const p of declaredEnvProblems(suite?.defaults?.env)) problems.push(`suite.json: defaults.${p}`);
  const tasksDir = within('tasks', 'tasks/');
  let names: string[] = [];
  try {
    if (tasksDir)
      names = fs
        .readdirSync(tasksDir)
        .filter((n) => n.endsWith('.json'))
        .sort();
  } catch {
    problems.push('tasks/: missing (put one JSON file per task in tasks/)');
  }
  if (names.length === 0 && tasksDir && fs.existsSync(tasksDir))
    problems.push('tasks/: holds no *.json task');
  const d = suite?.defaults ?? {};
  const tasks: EvalTask[] = [];
  const seen = new Map<string, string>();
  for (const name of names) {
    const rel = `tasks/${name}`;
    const taskPath = within(rel, rel);
    if (!taskPath) continue;
    const raw = parseJsonFile(taskPath, rel, problems);
    if (raw === undefined) continue;
    const task = check(taskFileSchema, raw, rel, problems);
    if (!task) continue;
    const where = `${rel} (task "${task.id}")`;
    task.graders.forEach((g, i) => {
      if (g.type === 'command' && g.run.includes(PLACEHOLDER_MARKER))
        problems.push(
          `${rel}: graders[${i}].run: still the placeholder written by --from-session; replace it with the command that checks the task (e.g. "npm test") before running the suite`,
        );
    });
    for (const p of declaredEnvProblems(task.env)) problems.push(`${where}: ${p}`);
    const fixtureDir = within(task.fixture, `${where}: fixture`);
    if (fixtureDir) {
      if (!fs.existsSync(fixtureDir) || !fs.statSync(fixtureDir).isDirectory())
        problems.push(`${rel}: fixture: ${task.fixture} is not a directory (relative to the suite)`);
      else
        for (const link of linksOutOfSuite(suiteDir, fixtureDir))
          problems.push(`${where}: fixture: refused: ${link}`);
    }
    const other = seen.get(task.id);
    if (other) problems.push(`${rel}: id: "${task.id}" is also the id of ${other}`);
    seen.set(task.id, rel);
    tasks.push({
      ...task,
      fixtureDir: fixtureDir ?? '',
      file: rel,
      max_turns: task.max_turns ?? d.max_turns ?? 30,
      timeout_s: task.timeout_s ?? d.timeout_s ?? 600,
      approve: task.approve ?? d.approve ?? 'never',
      trials: task.trials ?? d.trials,
      env: { ...d.env, ...task.env },
    });
  }
  if (problems.length > 0 || !suite) throw new SuiteError(problems);
  return { dir: suiteDir, name: suite.name, defaults: d, tasks };
}

/** `--filter` on task ids: `*` any run of characters, `?` one character. */
export function matchesFilter(id: string, glob: string): boolean {
  const re = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(id);
}
