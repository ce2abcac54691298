#!/usr/bin/env node
// `npm run eval:regression`: runs eval/regression (≥ 30 tasks) with `keel eval --emulator` (each
// task's scripted model policy, one emulator and one keel process per trial) and checks every task's
// passed / failed / infra_errors against eval/regression/expected.json. Needs `npm run build` first.
// Against the real API instead: ANTHROPIC_API_KEY=… node bin/keel.mjs eval eval/regression --trials 3
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const suite = 'eval/regression';
const expected = JSON.parse(readFileSync(join(suite, 'expected.json'), 'utf8'));
const out = mkdtempSync(join(tmpdir(), 'keel-eval-regression-'));
const concurrency = process.env.KEEL_EVAL_CONCURRENCY ?? '3';
const run = spawnSync(
  process.execPath,
  ['bin/keel.mjs', 'eval', suite, '--emulator', '--concurrency', concurrency, '--out', out],
  { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' },
);
if (run.status !== 0) {
  process.stderr.write(run.stderr);
  console.error(`eval:regression: keel eval exited ${run.status}`);
  process.exit(1);
}
const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
let passed = 0;
let failed = 0;
const seen = new Set();
for (const task of report.tasks) {
  seen.add(task.id);
  const want = expected[task.id];
  const got = { passed: task.passed, failed: task.failed, infra_errors: task.infra_errors };
  if (want && JSON.stringify(want) === JSON.stringify(got)) {
    passed++;
    continue;
  }
  failed++;
  console.error(`✖ ${task.id}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
  for (const r of task.results)
    console.error(`    trial ${r.trial}: ${r.status} — ${r.reason} (${r.log ?? 'no log'})`);
}
for (const id of Object.keys(expected)) {
  if (!seen.has(id)) {
    failed++;
    console.error(`✖ ${id}: in expected.json but not in the suite`);
  }
}
if (report.tasks.length < 30) {
  failed++;
  console.error(`✖ the regression suite has ${report.tasks.length} tasks (at least 30 wanted)`);
}
if (failed === 0) rmSync(out, { recursive: true, force: true });
else console.error(`trial logs kept in ${out}`);
console.log(`eval: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
