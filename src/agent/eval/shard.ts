import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EvalSuite, EvalTask } from './schema.ts';

// `keel eval --shard I/N`: one machine of N runs its share of a suite's trials. The share is a pure
// function of the plan — every (task id, trial index) pair in a canonical order (task ids by code
// unit, then trial index), dealt round-robin — so every machine computes the same split without
// talking to the others, and a task's trials spread over the shards instead of piling on one.
// The suite hash (its files and its fixtures' bytes) lets `keel eval merge` refuse to mix shards of
// different suites.

export interface Shard {
  /** 1-based. */
  readonly index: number;
  readonly count: number;
}

export const MAX_SHARDS = 1000;

/** "I/N" with 1 ≤ I ≤ N ≤ 1000; otherwise an error message. */
export function parseShard(text: string): Shard | string {
  const m = /^(\d{1,4})\/(\d{1,4})$/.exec(text.trim());
  if (!m) return `--shard takes I/N (e.g. 2/4: the second of four shards), not "${text}"`;
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 1 || count > MAX_SHARDS) return `--shard ${text}: N must be 1…${MAX_SHARDS}`;
  if (index < 1 || index > count) return `--shard ${text}: I must be 1…${count}`;
  return { index, count };
}

export interface PlannedTrial {
  readonly task: EvalTask;
  readonly trial: number;
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Every trial of the run, in the canonical order the shards are dealt from. */
export function planTrials(tasks: readonly EvalTask[], trialsOf: (task: EvalTask) => number): PlannedTrial[] {
  return [...tasks]
    .sort((a, b) => byCodeUnit(a.id, b.id))
    .flatMap((task) => Array.from({ length: trialsOf(task) }, (_, trial) => ({ task, trial })));
}

/** The trials of shard I/N: positions I−1, I−1+N, I−1+2N, … of the canonical plan. */
export function shardOf<T>(plan: readonly T[], shard: Shard): T[] {
  return plan.filter((_, i) => i % shard.count === shard.index - 1);
}

function fileHashes(root: string, rel: string, out: string[]): void {
  const dir = path.join(root, rel);
  const names = fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => byCodeUnit(a.name, b.name));
  for (const d of names) {
    // A fixture that is a repository: its .git holds per-clone state (index stamps), not the task.
    if (rel === '' && d.name === '.git') continue;
    const r = rel ? `${rel}/${d.name}` : d.name;
    const abs = path.join(root, r);
    if (d.isSymbolicLink()) out.push(`link ${r} ${fs.readlinkSync(abs)}`);
    else if (d.isDirectory()) fileHashes(root, r, out);
    else if (d.isFile())
      out.push(`file ${r} ${crypto.createHash('sha256').update(fs.readFileSync(abs)).digest('hex')}`);
  }
}

/**
 * sha256 over what decides a trial: the suite's name and defaults, every task as loaded (paths made
 * relative to the suite) and every byte of its fixtures. The same checkout gives the same hash on
 * any machine; a changed task, grader, rubric or fixture gives another.
 */
export function suiteHash(suite: EvalSuite): string {
  const tasks = [...suite.tasks]
    .sort((a, b) => byCodeUnit(a.id, b.id))
    .map(({ fixtureDir: _abs, ...task }) => task);
  const fixtures = [...new Set(suite.tasks.map((t) => t.fixture))].sort(byCodeUnit).map((rel) => {
    const lines: string[] = [];
    const task = suite.tasks.find((t) => t.fixture === rel)!;
    fileHashes(task.fixtureDir, '', lines);
    return { fixture: rel, files: lines };
  });
  const canonical = JSON.stringify(sortKeys({ name: suite.name, defaults: suite.defaults, tasks, fixtures }));
  return `sha256:${crypto.createHash('sha256').update(canonical).digest('hex')}`;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .sort(([a], [b]) => byCodeUnit(a, b))
        .map(([k, v]) => [k, sortKeys(v)]),
    );
  return value;
}
