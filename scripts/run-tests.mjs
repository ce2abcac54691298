#!/usr/bin/env node
// Finds *.test.ts under the given folders and runs them with node's test runner (Node 20 has no
// glob support in `node --test`). Exits with the runner's code; output ends in its summary.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dirs = process.argv.slice(2);
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) walk(full);
    else if (name.endsWith('.test.ts')) files.push(full);
  }
};
for (const dir of dirs.length ? dirs : ['test/unit']) walk(dir);
if (files.length === 0) {
  console.error('run-tests: no test files found');
  process.exit(1);
}
// The tests' scratch folders (os.tmpdir() honours TMPDIR) all land in one folder removed afterwards.
const scratch = mkdtempSync(join(tmpdir(), 'keel-unit-'));
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
  // Keel's user-level folder (trust approvals, the state ledger) too: a test never writes to ~/.keel.
  { stdio: 'inherit', env: { ...process.env, TMPDIR: scratch, KEEL_HOME: join(scratch, 'keel-home') } },
);
rmSync(scratch, { recursive: true, force: true });
process.exit(result.status ?? 1);
