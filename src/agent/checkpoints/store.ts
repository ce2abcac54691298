import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { recordedPathProblem } from '../safety/paths/containedPath.ts';

// `.keel/checkpoints/<session>/`: what Keel changed, and the bytes it changed from.
//   blobs/<aa>/<sha256>   content-addressed pre-images (and post-images, for the next change's base)
//   changes.jsonl         one line per file change, append-only, in the order they happened
//   prompts.jsonl         one line per user prompt (its number and first words), for listings
//   jobs.jsonl            background jobs' starts and ends (not checkpointed; restore names them)
// Nothing here runs git or touches the user's repository metadata.

/** What a path held: absent, exact bytes (by hash), or only a stat signature (no copy was kept). */
export const fileStateSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('absent') }),
  z.object({
    kind: z.literal('bytes'),
    hash: z.string().regex(/^[0-9a-f]{64}$/),
    mode: z.number().optional(),
  }),
  z.object({ kind: z.literal('untracked'), size: z.number(), mtimeMs: z.number(), reason: z.string() }),
]);
export type FileState = z.infer<typeof fileStateSchema>;

/**
 * A path as the recorder writes it: workspace-relative, "/"-separated, no `..`, no NUL, bounded, and
 * never under `.git` (the recorder skips it). A line that names anything else was not written by Keel.
 */
export const recordedPathSchema = z.string().superRefine((p, ctx) => {
  const problem = recordedPathProblem(p);
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message });
  else if (p.split('/').some((s) => s.toLowerCase() === '.git'))
    ctx.addIssue({ code: 'custom', message: 'the recorded path is inside .git, which Keel never records' });
});

/**
 * A file in a later workspace folder is recorded by its absolute path. Such a record is read only
 * when the reader names that folder (`--add-dir`, the editor's other folders): with no folder given,
 * an absolute path is skipped as before, and a path outside every folder given is skipped too.
 */
function realOrSelf(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

export function recordedPathSchemaFor(extraRoots: readonly string[]) {
  if (extraRoots.length === 0) return recordedPathSchema;
  const inExtra = (p: string) =>
    path.isAbsolute(p) &&
    path.normalize(p) === p &&
    extraRoots.some((r) =>
      // The folder as named and as it really is (the recorder writes the real spelling).
      [path.resolve(r), realOrSelf(r)].some((base) => {
        const rel = path.relative(base, p);
        return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
      }),
    );
  return z.string().superRefine((p, ctx) => {
    const problem = recordedPathProblem(p, { allowAbsolute: true });
    if (problem) ctx.addIssue({ code: 'custom', message: problem.message });
    else if (path.isAbsolute(p) && !inExtra(p))
      ctx.addIssue({
        code: 'custom',
        message: 'the recorded path is absolute and outside every workspace folder given',
      });
    else if (p.split('/').some((s) => s.toLowerCase() === '.git'))
      ctx.addIssue({ code: 'custom', message: 'the recorded path is inside .git, which Keel never records' });
  });
}

const changeRecordShape = {
  seq: z.number().int(),
  /** 1-based number of the user prompt whose run made the change; 0 for a restore. */
  prompt: z.number().int().nonnegative(),
  /** Workspace-relative, "/"-separated; absolute for a later workspace folder's file. */
  path: recordedPathSchema,
  by: z.string(),
  before: fileStateSchema,
  after: fileStateSchema,
  ts: z.number(),
  command: z.string().optional(),
  /** Restores and undos: the id shared by every file one operation wrote. */
  batch: z.string().optional(),
};
export const changeRecordSchema = z.object(changeRecordShape);
export type ChangeRecord = z.infer<typeof changeRecordSchema>;
const changeRecordSchemaFor = (extraRoots: readonly string[]) =>
  extraRoots.length === 0
    ? changeRecordSchema
    : z.object({ ...changeRecordShape, path: recordedPathSchemaFor(extraRoots) });
/** Only for numbering: every record counts, wherever it points. */
const anyChangeSeqSchema = z.object({ seq: z.number().int() });

export const promptRecordSchema = z.object({
  prompt: z.number().int().positive(),
  ts: z.number(),
  text: z.string(),
});
export type PromptRecord = z.infer<typeof promptRecordSchema>;

/** A background job's start or end: its writes are not checkpointed, so restore names the job instead. */
export const jobRecordSchema = z.object({
  prompt: z.number().int().nonnegative(),
  event: z.enum(['start', 'end']),
  command: z.string(),
  ts: z.number(),
});
export type JobRecord = z.infer<typeof jobRecordSchema>;

export function checkpointsRoot(stateDir: string): string {
  return path.join(stateDir, 'checkpoints');
}

export function sessionCheckpointDir(stateDir: string, sessionId: string): string {
  return path.join(checkpointsRoot(stateDir), sessionId);
}

/** A forked session's checkpoints start at the fork: earlier prompts' files are the parent's. */
export const forkOriginSchema = z.object({ parent: z.string(), beforePrompt: z.number().int().positive() });
export type ForkOrigin = z.infer<typeof forkOriginSchema>;

export function writeForkOrigin(stateDir: string, sessionId: string, origin: ForkOrigin): void {
  const dir = sessionCheckpointDir(stateDir, sessionId);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'fork.json'), `${JSON.stringify(origin)}\n`);
}

export function readForkOrigin(stateDir: string, sessionId: string): ForkOrigin | undefined {
  try {
    const text = fs.readFileSync(path.join(sessionCheckpointDir(stateDir, sessionId), 'fork.json'), 'utf8');
    const parsed = forkOriginSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function sameState(a: FileState, b: FileState): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'bytes' && b.kind === 'bytes') return a.hash === b.hash;
  if (a.kind === 'untracked' && b.kind === 'untracked') return a.size === b.size && a.mtimeMs === b.mtimeMs;
  return true;
}

/** A line of a record file that is not a valid record: left out of every plan, and said so. */
export interface SkippedRecord {
  /** 1-based line in the file. */
  readonly line: number;
  /** The path the line names, when it names one (for the message). */
  readonly path?: string;
  readonly reason: string;
}

function readJsonl<T>(file: string, schema: z.ZodType<T>): { records: T[]; skipped: SkippedRecord[] } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], skipped: [] };
    throw error;
  }
  const records: T[] = [];
  const skipped: SkippedRecord[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (!line.trim()) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      continue; // a torn last line after a crash: not a record, and the lines before it still count
    }
    const parsed = schema.safeParse(raw);
    if (parsed.success) {
      records.push(parsed.data);
      continue;
    }
    const named = (raw as { path?: unknown } | null)?.path;
    const issue = parsed.error.issues[0];
    skipped.push({
      line: i + 1,
      ...(typeof named === 'string' ? { path: named.slice(0, 200) } : {}),
      reason: issue ? `${issue.path.join('.') || 'record'}: ${issue.message}` : 'not a valid record',
    });
  }
  return { records, skipped };
}

export interface CheckpointStore {
  readonly dir: string;
  /** Stores the bytes (once per content) and returns their hash. */
  putBlob(bytes: Uint8Array): string;
  hasBlob(hash: string): boolean;
  getBlob(hash: string): Buffer | undefined;
  appendChange(record: Omit<ChangeRecord, 'seq'>): ChangeRecord;
  changes(): ChangeRecord[];
  /** The valid change records, and the lines that are not (never planned, always reported). */
  readChanges(extraRoots?: readonly string[]): { records: ChangeRecord[]; skipped: SkippedRecord[] };
  appendPrompt(record: PromptRecord): void;
  prompts(): PromptRecord[];
  appendJob(record: JobRecord): void;
  jobs(): JobRecord[];
}

export function openCheckpointStore(stateDir: string, sessionId: string): CheckpointStore {
  const dir = sessionCheckpointDir(stateDir, sessionId);
  const blobPath = (hash: string) => path.join(dir, 'blobs', hash.slice(0, 2), hash);
  const changesFile = path.join(dir, 'changes.jsonl');
  const promptsFile = path.join(dir, 'prompts.jsonl');
  const jobsFile = path.join(dir, 'jobs.jsonl');
  let seq: number | undefined;
  const append = (file: string, value: unknown) => {
    fs.mkdirSync(dir, { recursive: true });
    fs.appendFileSync(file, `${JSON.stringify(value)}\n`);
  };
  const store: CheckpointStore = {
    dir,
    putBlob(bytes) {
      const hash = sha256(bytes);
      const file = blobPath(hash);
      if (!fs.existsSync(file)) {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const tmp = `${file}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, bytes);
        fs.renameSync(tmp, file);
      }
      return hash;
    },
    hasBlob: (hash) => fs.existsSync(blobPath(hash)),
    getBlob(hash) {
      try {
        const bytes = fs.readFileSync(blobPath(hash));
        // A blob that no longer hashes to its name is not a pre-image to restore from.
        return sha256(bytes) === hash ? bytes : undefined;
      } catch {
        return undefined;
      }
    },
    appendChange(record) {
      seq ??= readJsonl(changesFile, anyChangeSeqSchema).records.reduce((max, r) => Math.max(max, r.seq), 0);
      const full: ChangeRecord = { seq: ++seq, ...record };
      append(changesFile, full);
      return full;
    },
    changes: () => readJsonl(changesFile, changeRecordSchema).records,
    readChanges: (extraRoots = []) => readJsonl(changesFile, changeRecordSchemaFor(extraRoots)),
    appendPrompt: (record) => append(promptsFile, record),
    prompts: () => readJsonl(promptsFile, promptRecordSchema).records,
    appendJob: (record) => append(jobsFile, record),
    jobs: () => readJsonl(jobsFile, jobRecordSchema).records,
  };
  return store;
}
