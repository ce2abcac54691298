import * as readline from 'node:readline';
import type { ApprovalDecision, ApprovalsPort } from '../agent/host.ts';

/** Asks on the terminal. Anything but an explicit yes is a deny. */
export function createTtyApprovals(): ApprovalsPort {
  return {
    ask(request, signal) {
      return new Promise<ApprovalDecision>((resolve) => {
        const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
        const done = (decision: ApprovalDecision) => {
          rl.close();
          resolve(decision);
        };
        signal?.addEventListener('abort', () => done('deny'), { once: true });
        process.stderr.write(
          `\n⚠ Keel asks: ${request.title} [${request.risk} risk]\n  ${request.detail.replace(/\n/g, '\n  ')}\n`,
        );
        rl.question('Allow? [o]nce / [s]ession / [N]o: ', (answer) => {
          const a = answer.trim().toLowerCase();
          done(
            a === 'o' || a === 'once' || a === 'y' || a === 'yes'
              ? 'allow_once'
              : a === 's' || a === 'session'
                ? 'allow_session'
                : 'deny',
          );
        });
      });
    },
  };
}
