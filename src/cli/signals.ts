import * as os from 'node:os';

/** What ends a keel command from outside: Ctrl-C, a supervisor's SIGTERM, a closed terminal's SIGHUP. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** 128 + the signal's number, as shells report a process a signal ended (Ctrl-C 130, SIGTERM 143). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (os.constants.signals[signal] ?? 15);
}

/** Calls `handler` on each of `signals` (instead of the default: dying) until the returned function is called. */
export function onSignals(
  signals: readonly NodeJS.Signals[],
  handler: (signal: NodeJS.Signals) => void,
): () => void {
  for (const signal of signals) process.on(signal, handler);
  return () => {
    for (const signal of signals) process.off(signal, handler);
  };
}
