import * as os from 'node:os';

/** 128 + the signal's number, as shells report a process a signal ended (Ctrl-C 130, SIGTERM 143). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (os.constants.signals[signal] ?? 15);
}
