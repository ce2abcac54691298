// Where a command's output goes once its reader may have gone.
//
// `keel … | head -n 1`: once the reader has gone, stdout's EPIPE ends the run quietly (exit 0, as
// other Unix tools do) — the session is aborted so its processes stop and its log is closed.
// stderr (progress, notices) may go first (`keel run 2>&1 | head`): its EPIPE must not crash keel
// before its clean-up runs (jobs, the demo's scratch repo); the run goes on, stdout decides.
let stdoutGone = false;
let onStdoutGone: (() => void) | undefined;
let watchingOutput = false;
const readerGone = (error: NodeJS.ErrnoException) =>
  error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED';
export function watchOutput(): void {
  if (watchingOutput) return;
  watchingOutput = true;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (!readerGone(error)) throw error;
    stdoutGone = true;
    onStdoutGone?.();
  });
  process.stderr.on('error', (error: NodeJS.ErrnoException) => {
    if (!readerGone(error)) throw error;
  });
}
export function out(text: string): void {
  if (!stdoutGone) process.stdout.write(text);
}
/** True once stdout's reader has gone (the run then ends with exit 0). */
export function isStdoutGone(): boolean {
  return stdoutGone;
}
/** What to do the moment stdout's reader goes (undefined: nothing). */
export function setOnStdoutGone(handler: (() => void) | undefined): void {
  onStdoutGone = handler;
}
