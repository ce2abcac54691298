import { fail, type SubagentRequest, type ToolContext, type ToolResult } from '../tools/protocol.ts';

// The session's small task graph (issue 23): a Task call may carry an `id` and `after: [ids]`. Calls
// without `after` start at once (several in one reply run in parallel); a call with `after` waits
// until every task it names has finished and merged, so a writer's tree starts from their merged
// result. A dependency that failed, was not applied or conflicted refuses the dependent instead of
// letting it run on a wrong base. Ids live as long as the session's sub-agent runner.

/** How a finished task ended, for the tasks that wait on it. */
export interface TaskOutcome {
  readonly ok: boolean;
  /** Why it is not a base to build on (absent when ok). */
  readonly why?: string;
}

interface Node {
  readonly after: readonly string[];
  readonly done: Promise<TaskOutcome>;
}

/** Calls of one reply start within moments of each other: an id not known yet is waited for this long. */
export const UNKNOWN_ID_GRACE_MS = 2000;

export type WaitResult =
  | { ok: true }
  | { ok: false; code: 'INVALID_PARAM' | 'CONFLICT' | 'ABORTED'; why: string };

export interface TaskGraph {
  /**
   * Registers a call (its `id`, if any) and waits for its `after` tasks. `finish` must be called with
   * the call's outcome once it ends (also when the wait refused it), or tasks after it never start.
   */
  enter(
    id: string | undefined,
    after: readonly string[],
    signal: AbortSignal,
  ): { wait: Promise<WaitResult>; finish: (outcome: TaskOutcome) => void } | { refused: string };
}

export function createTaskGraph(graceMs = UNKNOWN_ID_GRACE_MS): TaskGraph {
  const nodes = new Map<string, Node>();
  const listeners = new Set<() => void>();

  /** A path from `from` back to `to` through the known `after` edges, if any. */
  function cycle(from: string, to: string, seen = new Set<string>()): string[] | undefined {
    if (seen.has(from)) return undefined;
    seen.add(from);
    for (const next of nodes.get(from)?.after ?? []) {
      if (next === to) return [from, next];
      const rest = cycle(next, to, seen);
      if (rest) return [from, ...rest];
    }
    return undefined;
  }

  /** Resolves once every id is known, or after the grace period (then the unknown ones are returned). */
  function known(ids: readonly string[], signal: AbortSignal): Promise<string[]> {
    const missing = () => ids.filter((i) => !nodes.has(i));
    if (missing().length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
        signal.removeEventListener('abort', done);
        resolve(missing());
      };
      const check = () => {
        if (missing().length === 0) done();
      };
      const timer = setTimeout(done, graceMs);
      listeners.add(check);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  return {
    enter(id, afterIds, signal) {
      const after = [...new Set(afterIds)];
      if (id !== undefined && nodes.has(id))
        return { refused: `The task id "${id}" is already used in this session; give this task another id.` };
      let finish!: (outcome: TaskOutcome) => void;
      const done = new Promise<TaskOutcome>((resolve) => {
        finish = resolve;
      });
      if (id !== undefined) {
        nodes.set(id, { after, done });
        for (const l of [...listeners]) l();
      }
      const wait = (async (): Promise<WaitResult> => {
        if (after.length === 0) return { ok: true };
        const unknown = await known(after, signal);
        if (signal.aborted)
          return { ok: false, code: 'ABORTED', why: 'The run was aborted while it waited.' };
        if (unknown.length > 0)
          return {
            ok: false,
            code: 'INVALID_PARAM',
            why: `"after" names unknown task id(s): ${unknown.map((u) => `"${u}"`).join(', ')} (no Task call of this session has that id).`,
          };
        if (id !== undefined) {
          const loop = cycle(id, id);
          if (loop)
            return {
              ok: false,
              code: 'INVALID_PARAM',
              why: `"after" makes a cycle: ${[id, ...loop.slice(1)].map((n) => `"${n}"`).join(' → ')} — none of them could ever start.`,
            };
        }
        const aborted = new Promise<'aborted'>((resolve) => {
          if (signal.aborted) resolve('aborted');
          signal.addEventListener('abort', () => resolve('aborted'), { once: true });
        });
        for (const dep of after) {
          const outcome = await Promise.race([nodes.get(dep)!.done, aborted]);
          if (outcome === 'aborted')
            return { ok: false, code: 'ABORTED', why: 'The run was aborted while it waited.' };
          if (!outcome.ok)
            return {
              ok: false,
              code: 'CONFLICT',
              why: `It waits for task "${dep}", which did not give a base to build on: ${outcome.why ?? 'it failed'}. It did not run (it would have started from the wrong state).`,
            };
        }
        return { ok: true };
      })();
      return { wait, finish };
    },
  };
}

/** Whether a finished Task's result is a base its dependents may build on. */
export function outcomeOf(result: ToolResult): TaskOutcome {
  if (result.status !== 'success')
    return { ok: false, why: result.error?.message ?? `it ended ${result.status}` };
  const merge = (
    result.data as { merge?: { applied?: boolean; conflicts?: unknown[]; merge_error?: string } } | null
  )?.merge;
  if (!merge || merge.applied) return { ok: true };
  if (merge.merge_error) return { ok: false, why: `merging its changes failed (${merge.merge_error})` };
  if (merge.conflicts && merge.conflicts.length > 0)
    return { ok: false, why: 'its changes conflict with the workspace and were not applied' };
  const changed = (result.data as { merge: { worktree_files_changed?: unknown[] } }).merge
    .worktree_files_changed;
  if (changed && changed.length > 0)
    return { ok: false, why: 'its changes were not applied to the workspace' };
  return { ok: true };
}

/** Runs a Task call inside the graph: waits for its `after` tasks, then records how it ended. */
export async function runInGraph(
  graph: TaskGraph,
  request: SubagentRequest,
  parent: ToolContext,
  run: (request: SubagentRequest, parent: ToolContext) => Promise<ToolResult>,
): Promise<ToolResult> {
  if (request.id === undefined && !request.after?.length) return run(request, parent);
  const entry = graph.enter(request.id, request.after ?? [], parent.signal);
  if ('refused' in entry)
    return fail('INVALID_PARAM', entry.refused, 'Use an id not used before in this session.');
  let outcome: TaskOutcome = { ok: false, why: 'it failed' };
  try {
    const waited = await entry.wait;
    if (!waited.ok) {
      outcome = { ok: false, why: `it did not run: ${waited.why}` };
      return fail(
        waited.code,
        `Sub-agent "${request.description}" did not start. ${waited.why}`,
        waited.code === 'INVALID_PARAM'
          ? 'Fix "id"/"after": name only ids of this session\'s Task calls, with no cycle.'
          : waited.code === 'ABORTED'
            ? 'Wait for the user.'
            : 'Resolve the failed task first (or run this one without "after"), and tell the user.',
      );
    }
    const result = await run(request, parent);
    outcome = outcomeOf(result);
    return result;
  } finally {
    entry.finish(outcome);
  }
}
