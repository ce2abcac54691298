import {
  countPassing,
  FEATURE_LIST,
  type Feature,
  type FeatureList,
  FeatureListError,
  nextFailing,
  parseFeatureList,
  SESSIONS_LOG,
} from './featureList.ts';
import { read, TaskError } from './files.ts';
import { readSessionsLog, type SessionLine } from './sessionsLog.ts';

// `keel task status` and the VS Code feature tree: counts, the next feature, who passed what.

export interface TaskStatus {
  readonly total: number;
  readonly passing: number;
  readonly next: Pick<Feature, 'id' | 'category' | 'description'> | null;
  readonly lastSession: { session: string; feature?: string; outcome: string; ts: number } | null;
  readonly features: Array<
    Pick<Feature, 'id' | 'category' | 'description' | 'passes'> & { passedBy?: string }
  >;
}

export function taskStatus(workspace: string): TaskStatus {
  let list: FeatureList;
  try {
    list = parseFeatureList(read(workspace, FEATURE_LIST) ?? '');
  } catch (error) {
    if (read(workspace, FEATURE_LIST) === undefined)
      throw new TaskError(`No ${FEATURE_LIST} in ${workspace}. Start the task with: keel task init "SPEC"`);
    throw error instanceof FeatureListError ? new TaskError(error.message) : error;
  }
  const lines = readSessionsLog(read(workspace, SESSIONS_LOG));
  const passedBy = new Map<string, string>();
  for (const l of lines) if (l.type === 'flip') passedBy.set(l.id, l.session);
  const last = [...lines]
    .reverse()
    .find(
      (l): l is Extract<SessionLine, { type: 'end' | 'start' }> => l.type === 'end' || l.type === 'start',
    );
  const next = nextFailing(list);
  return {
    total: list.features.length,
    passing: countPassing(list),
    next: next ? { id: next.id, category: next.category, description: next.description } : null,
    lastSession: last
      ? {
          session: last.session,
          ...(last.feature ? { feature: last.feature } : {}),
          outcome: last.type === 'end' ? last.outcome : 'running or crashed',
          ts: last.ts,
        }
      : null,
    features: list.features.map((f) => ({
      id: f.id,
      category: f.category,
      description: f.description,
      passes: f.passes,
      // A feature that failed its re-verification passed once; "passed by" names who made it pass now.
      ...(f.passes && passedBy.has(f.id) ? { passedBy: passedBy.get(f.id) } : {}),
    })),
  };
}
