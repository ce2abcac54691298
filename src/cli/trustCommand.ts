import * as readline from 'node:readline';
import { createTrustRoom, type SteeringItem } from '../agent/trust/room.ts';
import type { TrustArgs } from './args.ts';

// `keel trust`: what this workspace supplies that would steer Keel (programs it would run, network it
// would open, text that would speak with the user's voice), what each would grant, and whether the
// user approved that exact content. `--yes` approves exactly the current set, `--revoke` forgets.

export interface TrustIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** A terminal to ask on (stdin and stderr are TTYs). */
  readonly interactive: boolean;
}

function render(item: SteeringItem, state: string): string {
  return [`${state}  ${item.title}  (${item.file})`, ...item.grants.map((g) => `      grants: ${g}`)].join(
    '\n',
  );
}

async function confirm(question: string): Promise<boolean> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve) => rl.question(question, resolve));
    return /^(y|yes)$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

export async function trustCommand(args: TrustArgs, workspace: string, io: TrustIo): Promise<number> {
  const room = createTrustRoom({ root: workspace });
  if (args.revoke) {
    room.store.revoke();
    io.out(
      `Forgot every approval for ${workspace}: what it supplies is not used until you approve it again.\n`,
    );
    return 0;
  }
  const items = room.items();
  const pending = room.pending();
  if (args.json && !args.yes) {
    io.out(
      `${JSON.stringify({ workspace, items: items.map((i) => ({ ...i, approved: room.isApproved(i) })) })}\n`,
    );
    return 0;
  }
  if (items.length === 0) {
    io.out(
      `${workspace} supplies nothing that would steer Keel (no workspace MCP servers, network allowances, memory or long task to approve).\n`,
    );
    return 0;
  }
  io.out(
    `${workspace} supplies ${items.length} thing${items.length === 1 ? '' : 's'} that would steer Keel:\n\n`,
  );
  for (const item of items)
    io.out(`${render(item, room.isApproved(item) ? '[approved]' : '[not approved]')}\n\n`);
  if (pending.length === 0) {
    io.out('All of it is approved as it is now; a change to any of it asks again.\n');
    return 0;
  }
  let approve = args.yes;
  if (!approve && io.interactive)
    approve = await confirm(
      `Approve ${pending.length === 1 ? 'it' : `these ${pending.length}`} exactly as shown? [y/N] `,
    );
  if (!approve) {
    io.out(
      io.interactive
        ? 'Not approved: Keel keeps not using it.\n'
        : 'Not approved (no terminal to ask on): run `keel trust --yes` to approve exactly this set.\n',
    );
    return 0;
  }
  room.approve(pending, Date.now());
  if (args.json) io.out(`${JSON.stringify({ workspace, approved: pending.map((i) => i.id) })}\n`);
  else
    io.out(
      `Approved ${pending.length}: ${pending.map((i) => i.title).join('; ')}. A later change to any of it asks again; \`keel trust --revoke\` forgets.\n`,
    );
  return 0;
}
