import * as fs from 'node:fs';
import * as path from 'node:path';
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

const SKIP = new Set(['node_modules', '.git', '.keel', 'dist', 'build']);

/** Eval suites in the workspace (a folder with suite.json, at most three levels down). */
function evalSuites(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    if (entries.some((e) => e.isFile() && e.name === 'suite.json')) found.push(dir);
    if (depth >= 3) return;
    for (const e of entries)
      if (e.isDirectory() && !SKIP.has(e.name)) walk(path.join(dir, e.name), depth + 1);
  };
  walk(root, 0);
  return found.sort();
}

/**
 * Eval suites steer Keel only when the user runs one by name (`keel eval DIR`; VS Code asks each
 * time, naming its commands): listed so the user sees what they would run, not approved here.
 */
async function describeSuites(root: string): Promise<string[]> {
  const suites = evalSuites(root);
  if (suites.length === 0) return [];
  const { loadSuite } = await import('../agent/eval/schema.ts');
  return suites.map((dir) => {
    const rel = path.relative(root, dir) || '.';
    try {
      const suite = loadSuite(dir);
      const commands = suite.tasks.flatMap((t) => t.graders.filter((g) => g.type === 'command'));
      return `[runs when you name it]  Eval suite ${rel}\n      grants: keel eval ${rel} runs ${commands.length} grader command${commands.length === 1 ? '' : 's'} (sandboxed, with no secrets) in ${suite.tasks.length} task${suite.tasks.length === 1 ? '' : 's'}`;
    } catch (error) {
      return `[invalid]  Eval suite ${rel}: ${(error as Error).message.split('\n')[0]}`;
    }
  });
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
  const suites = await describeSuites(workspace);
  if (suites.length > 0) io.out(`${suites.join('\n\n')}\n\n`);
  if (items.length === 0) {
    io.out(
      `${workspace} supplies nothing${suites.length ? ' else' : ''} that would steer Keel (no workspace MCP servers, network allowances, memory, long task or hooks to approve).\n`,
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
