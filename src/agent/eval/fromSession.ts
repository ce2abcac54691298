import * as fs from 'node:fs';
import * as path from 'node:path';
import { planRestore, RestoreError } from '../checkpoints/restore.ts';
import {
  ContainedPathError,
  containRecordedPath,
  removeContainedFile,
  writeContainedFile,
} from '../safety/paths/containedPath.ts';
import { openCheckpointStore, sessionCheckpointDir } from '../checkpoints/store.ts';
import { loadSession } from '../session/log.ts';
import { resolveSessionLog } from '../trace/trace.ts';
import { PLACEHOLDER_MARKER, type TaskFile } from './schema.ts';

// `keel eval --from-session SESSION-ID OUT-DIR`: a real session becomes an eval task, so what just
// worked can be re-run against a changed AGENTS.md, skill or model. The prompt is the session's first
// user prompt; the fixture is the workspace as it was before the session — today's files, with every
// file the session changed put back to the bytes Keel's checkpoints kept from before its first change
// (and files it created left out); the grader is a placeholder command the user must replace —
// `keel eval` refuses a task that still has it.

export const PLACEHOLDER_RUN = `echo '${PLACEHOLDER_MARKER}: replace this grader with the command that checks the task, e.g. npm test' >&2; exit 1`;

/** Never copied into a fixture: Keel's state, the repository, installed dependencies. */
const SKIPPED = new Set(['.keel', '.git', 'node_modules']);

export interface FromSessionOptions {
  /** The workspace the session ran in. */
  readonly root: string;
  readonly stateDir: string;
  readonly session: string;
  /** The suite directory to write (created, or a suite to add the task to). */
  readonly outDir: string;
}

export interface FromSessionResult {
  readonly suiteDir: string;
  readonly taskFile: string;
  readonly fixtureDir: string;
  readonly restored: number;
  readonly removed: number;
  /** Files whose pre-session bytes Keel does not have (kept as they are now), and other caveats. */
  readonly warnings: readonly string[];
}

export class FromSessionError extends Error {}

function taskIdFor(sessionId: string): string {
  return `session-${sessionId.replace(/[^A-Za-z0-9._-]/g, '-')}`.slice(0, 100);
}

export function createTaskFromSession(options: FromSessionOptions): FromSessionResult {
  let logPath: string;
  try {
    logPath = resolveSessionLog(options.session, options.stateDir);
  } catch (error) {
    throw new FromSessionError((error as Error).message);
  }
  const loaded = loadSession(logPath);
  const sessionId = loaded.header.id;
  const firstMessage = loaded.messages.find((m) => m.role === 'user' && !m.steering);
  const first = firstMessage?.role === 'user' ? firstMessage : undefined;
  if (!first?.text.trim())
    throw new FromSessionError(`Session ${sessionId} has no user prompt to turn into a task.`);

  const suiteDir = path.resolve(options.outDir);
  const id = taskIdFor(sessionId);
  const taskFile = path.join(suiteDir, 'tasks', `${id}.json`);
  const fixtureRel = path.posix.join('fixtures', id);
  const fixtureDir = path.join(suiteDir, 'fixtures', id);
  if (fs.existsSync(taskFile) || fs.existsSync(fixtureDir))
    throw new FromSessionError(
      `${path.relative(process.cwd(), taskFile) || taskFile} (or its fixture) already exists; remove it or choose another OUT-DIR.`,
    );
  const root = path.resolve(options.root);
  if (suiteDir === root || suiteDir.startsWith(`${root}${path.sep}`)) {
    const top = path.relative(root, suiteDir).split(path.sep)[0] ?? '';
    if (!SKIPPED.has(top))
      throw new FromSessionError(
        'OUT-DIR is inside the workspace: the fixture would copy itself. Choose a folder outside it (or under .keel/).',
      );
  }

  // 1. Today's files.
  fs.mkdirSync(fixtureDir, { recursive: true });
  fs.cpSync(root, fixtureDir, {
    recursive: true,
    filter: (src) => {
      const rel = path.relative(root, src);
      return rel === '' || !SKIPPED.has(rel.split(path.sep)[0] ?? '');
    },
  });

  // 2. What the session changed, back to how it was before.
  const warnings: string[] = [];
  let restored = 0;
  let removed = 0;
  if (!fs.existsSync(sessionCheckpointDir(options.stateDir, sessionId))) {
    warnings.push(
      `no checkpoints for session ${sessionId}: the fixture is the workspace as it is now, not as it was before the session`,
    );
  } else {
    const store = openCheckpointStore(options.stateDir, sessionId);
    let items: ReturnType<typeof planRestore>['items'] = [];
    try {
      items = planRestore({ stateDir: options.stateDir, root, sessionId, beforePrompt: 1 }).items;
    } catch (error) {
      if (!(error instanceof RestoreError)) throw error;
      warnings.push(error.message);
    }
    for (const item of items) {
      // The records are data (a repo can ship forged ones) and the fixture is a copy that keeps the
      // workspace's symlinks: each path is contained in the fixture like any restore.
      const contained = containRecordedPath(fixtureDir, item.path);
      if (item.status === 'refused' || !contained.ok) {
        warnings.push(
          `${item.path}: refused (${contained.ok ? item.reason : contained.error.message}); left as it is now`,
        );
        continue;
      }
      const target = contained.target;
      try {
        if (item.target.kind === 'absent') {
          if (!fs.existsSync(target.abs)) continue;
          removeContainedFile(target);
          removed++;
          continue;
        }
        if (item.target.kind === 'untracked') {
          warnings.push(
            `${item.path}: its content before the session was not kept (${item.target.reason}); left as it is now`,
          );
          continue;
        }
        const bytes = store.getBlob(item.target.hash);
        if (!bytes) {
          warnings.push(`${item.path}: its saved pre-session copy is missing; left as it is now`);
          continue;
        }
        const mode = item.target.mode;
        writeContainedFile(target, bytes, mode !== undefined ? { mode: mode & 0o777 } : {});
        restored++;
      } catch (error) {
        if (!(error instanceof ContainedPathError)) throw error;
        warnings.push(`${item.path}: refused (${error.message}); left as it is now`);
      }
    }
  }

  // 3. The suite and the task, with the grader the user must fill in.
  const suiteJson = path.join(suiteDir, 'suite.json');
  if (!fs.existsSync(suiteJson))
    fs.writeFileSync(
      suiteJson,
      `${JSON.stringify({ name: path.basename(suiteDir), description: 'Tasks made from real Keel sessions (keel eval --from-session).' }, null, 2)}\n`,
    );
  const task: TaskFile = {
    id,
    description: `From session ${sessionId} (${new Date(loaded.header.createdAt).toISOString()}). ${PLACEHOLDER_MARKER}: replace the placeholder command grader with the command that checks the result (e.g. "npm test"; node_modules, .git and .keel were not copied into the fixture), and review approve/max_turns.`,
    prompt: first.text,
    fixture: fixtureRel,
    max_turns: 30,
    timeout_s: 600,
    approve: 'never',
    graders: [{ type: 'command', run: PLACEHOLDER_RUN, expect_exit: 0, timeout_s: 120 }],
  };
  fs.mkdirSync(path.dirname(taskFile), { recursive: true });
  fs.writeFileSync(taskFile, `${JSON.stringify(task, null, 2)}\n`);
  return { suiteDir, taskFile, fixtureDir, restored, removed, warnings };
}
