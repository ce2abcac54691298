import * as vscode from 'vscode';
import type { RestoreReport, ReviewManager } from './reviewManager.ts';

/** After a reload: the edits the user had not reviewed yet are pending again (or dropped, said so). */
export async function restoreReviews(
  review: ReviewManager,
  display: (p: string) => string,
  write: (level: 'info' | 'warn', message: string) => void,
): Promise<void> {
  let report: RestoreReport;
  try {
    report = await review.restore();
  } catch (error) {
    write('warn', `could not restore pending reviews: ${(error as Error).message}`);
    return;
  }
  if (report.restored.length > 0)
    write('info', `restored the pending review of ${report.restored.length} file(s)`);
  for (const d of report.dropped) {
    const message = d.refused
      ? `Keel: a stored pending review was dropped and nothing was written: ${d.reason}.`
      : `Keel: the pending review of ${display(d.path)} was dropped because ${d.reason} since the window was closed; the file was left as it is.`;
    write('warn', message);
    void vscode.window.showWarningMessage(message);
  }
}
