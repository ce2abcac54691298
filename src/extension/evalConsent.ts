import * as fs from 'node:fs';
import * as path from 'node:path';
import { type EvalSuite, loadSuite } from '../agent/eval/schema.ts';

// What "Run Eval Suite…" must show before it runs a suite from the workspace: a suite is repository
// content and names commands (its graders) and how freely the trial's agent may act, so the user
// approves exactly that in a modal before Keel starts anything or reads the API key. No 'vscode'
// import: the decision and its text are plain functions (unit-tested).

function inside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function real(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

export interface SuiteConsent {
  readonly suite: EvalSuite;
  /** The suite sits in a workspace folder (repository content): the user must approve it first. */
  readonly fromWorkspace: boolean;
  readonly suiteFile: string;
  /** The modal's detail: the commands the graders will run, and what else the suite asks for. */
  readonly detail: string;
}

const MAX_LISTED = 25;

/** Loads the suite (SuiteError when it is bad) and says what running it would do. */
export function evalSuiteConsent(suiteDir: string, workspaceFolders: readonly string[]): SuiteConsent {
  const suite = loadSuite(suiteDir);
  const fromWorkspace = workspaceFolders.some((folder) => inside(real(folder), suite.dir));
  const suiteFile = path.join(suite.dir, 'suite.json');
  const commands: string[] = [];
  const freer: string[] = [];
  const declared = new Set<string>();
  for (const task of suite.tasks) {
    for (const g of task.graders)
      if (g.type === 'command')
        commands.push(`• ${task.id}: ${g.run}${g.network ? '   (with network)' : ''}`);
    if (task.approve !== 'never') freer.push(`${task.id} (approve: ${task.approve})`);
    for (const name of Object.keys(task.env)) declared.add(name);
  }
  const listed = commands.slice(0, MAX_LISTED);
  if (commands.length > MAX_LISTED)
    listed.push(`… and ${commands.length - MAX_LISTED} more (see ${suite.dir}/tasks)`);
  const lines = [
    `Suite: ${suiteFile} (${suite.tasks.length} task(s))`,
    '',
    commands.length > 0
      ? `Its graders will run these commands in each trial's copy (in the OS sandbox where available, without your API key or other secrets):`
      : 'Its graders run no commands.',
    ...listed,
  ];
  if (freer.length > 0)
    lines.push('', `The trial's agent may run commands without asking in: ${freer.join(', ')}.`);
  if (declared.size > 0)
    lines.push('', `Variables the suite sets for its graders: ${[...declared].join(', ')}.`);
  lines.push('', 'Run it only if you trust where this suite came from.');
  return { suite, fromWorkspace, suiteFile, detail: lines.join('\n') };
}
