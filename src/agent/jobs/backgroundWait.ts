import type { AgentEventBody } from '../events.ts';
import type { ReminderMessage } from '../messages.ts';
import type { JobManager } from './manager.ts';

// How background jobs reach the model between turns: their notices become reminders, each appended
// once, before the next model call; and a run about to end while jobs still run waits (up to the
// session's jobWaitMs) for one of them to say something, so its outcome is not lost with the run.

export function jobReminders(jobs: JobManager, newId: () => string, now: number): ReminderMessage[] {
  return jobs
    .takeNotices()
    .map((n) => ({ role: 'reminder', id: newId(), ts: now, text: n.text, source: 'job' }));
}

/** For one run: true when a job notice is waiting (or arrives in time), false to end the run. */
export function backgroundWait(
  jobs: JobManager,
  options: {
    readonly waitMs: number;
    readonly now: () => number;
    readonly emit: (body: AgentEventBody) => void;
    readonly signal: AbortSignal;
  },
): () => Promise<boolean> {
  let deadline: number | undefined;
  return async () => {
    if (jobs.hasNotices()) return true;
    if (options.waitMs <= 0 || jobs.running().length === 0 || options.signal.aborted) return false;
    deadline ??= options.now() + options.waitMs;
    const left = deadline - options.now();
    if (left <= 0) return false;
    options.emit({
      type: 'notice',
      level: 'info',
      text: `Waiting up to ${Math.ceil(left / 1000)} s for ${jobs.running().length} background job(s).`,
    });
    return jobs.waitForNotice(left, options.signal);
  };
}
