// A counting semaphore: at most `limit` model calls run at once (sub-agents share one).
export interface Limiter {
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  readonly active: number;
}

export function createLimiter(limit: number): Limiter {
  let active = 0;
  const waiting: (() => void)[] = [];
  const acquire = (signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (active < limit) {
        active++;
        return resolve();
      }
      const grant = () => {
        signal?.removeEventListener('abort', onAbort);
        active++;
        resolve();
      };
      const onAbort = () => {
        const i = waiting.indexOf(grant);
        if (i >= 0) waiting.splice(i, 1);
        reject(new Error('Aborted while waiting for a model slot.'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      waiting.push(grant);
    });
  return {
    get active() {
      return active;
    },
    async run(task, signal) {
      await acquire(signal);
      try {
        return await task();
      } finally {
        active--;
        waiting.shift()?.();
      }
    },
  };
}
