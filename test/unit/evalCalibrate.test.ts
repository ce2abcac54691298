import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import {
  type Calibration,
  loadCalibrationSet,
  summarizeCalibration,
} from '../../src/agent/eval/calibrate.ts';
import { startEmulator } from '../emulator/server.ts';
import type { MessagesRequest } from '../emulator/types.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// Judge calibration: `keel eval calibrate eval/judge-calibration.json` runs the judge over ten trials
// a person labelled and prints its agreement. Honest caveat: here the judge is the emulator playing
// the scores written below, so the figure measures the plumbing (request → verdict → pass/fail →
// agreement, kappa), not any model. The scripted judge is fooled by one case on purpose (the
// hard-coded special case, which ran and printed 5), so the figure is not a trivial 100%. With a real
// key the same command measures a real judge.

const SET = path.resolve('eval/judge-calibration.json');

/** What the scripted judge scores each labelled case, found by its transcript in the request. */
const SCRIPTED: Record<string, number> = {
  'fix-and-verify': 0.95,
  'fix-unverified': 0.8,
  'wrong-operator': 0.1,
  'gave-up': 0,
  'deleted-tests': 0.3,
  'injection-in-diff': 0.05,
  'fix-plus-readme-typo': 0.75,
  'claims-without-change': 0,
  // Fooled: it ran and printed 5.
  'special-cased': 0.8,
  'fix-and-test': 0.9,
};

function userText(req: MessagesRequest): string {
  const c = req.messages[0]?.content;
  return typeof c === 'string'
    ? c
    : (c ?? []).map((b) => (typeof b.text === 'string' ? b.text : '')).join('');
}

test('Cohen kappa and agreement by hand; a case without a verdict is a disagreement', () => {
  const row = (label: 'pass' | 'fail', predicted: 'pass' | 'fail' | 'error') => ({
    id: `${label}-${predicted}`,
    label,
    predicted,
    score: predicted === 'error' ? null : predicted === 'pass' ? 1 : 0,
    agree: label === predicted,
    detail: '',
  });
  // 4 labelled pass (all judged pass), 6 fail (5 judged fail, 1 pass): po 0.9, pe 0.4·0.5 + 0.6·0.5 = 0.5.
  const rows = [
    ...Array.from({ length: 4 }, () => row('pass', 'pass')),
    ...Array.from({ length: 5 }, () => row('fail', 'fail')),
    row('fail', 'pass'),
  ];
  const c = summarizeCalibration(rows, 0.7);
  assert.equal(c.agreement, 0.9);
  assert.equal(c.kappa, 0.8);
  const withError = summarizeCalibration([...rows.slice(0, 9), row('fail', 'error')], 0.7);
  assert.equal(withError.agreed, 9);
  assert.equal(withError.errors, 1);
  assert.equal(withError.kappa, 1, 'kappa over the scored cases');
});

test('keel eval calibrate: the labelled set through the real judge path prints its agreement', async () => {
  const set = loadCalibrationSet(SET);
  assert.ok(set.cases.length >= 6 && set.cases.length <= 12);
  assert.deepEqual(Object.keys(SCRIPTED).sort(), set.cases.map((c) => c.id).sort());
  const emulator = await startEmulator({
    scenario: {
      respond: (req) => {
        const text = userText(req);
        const hit = set.cases.find((c) => text.includes(c.transcript));
        const score = hit ? SCRIPTED[hit.id] : undefined;
        return {
          content: [
            {
              type: 'text',
              text:
                score === undefined
                  ? 'no idea'
                  : JSON.stringify({ score, reasons: `scripted for ${hit!.id}` }),
            },
          ],
        };
      },
    },
  });
  try {
    const out = path.join(tempWorkspace(), 'calibration.json');
    const run = await runKeel(
      ['eval', 'calibrate', SET, '--model', 'claude-judge-test', '--json', out],
      cliEnv(emulator.url),
    );
    assert.equal(run.code, 0, run.stderr);
    // The figure, for the record (see the caveat above).
    console.log(run.stdout);
    assert.match(run.stdout, /agreement: 9\/10 = 90\.0%, Cohen's kappa 0\.8/);
    assert.match(run.stdout, /DISAGREE special-cased +label fail judge pass +\(score 0\.8\)/);
    const saved = JSON.parse(fs.readFileSync(out, 'utf8')) as Calibration & { model: string };
    assert.equal(saved.model, 'claude-judge-test');
    assert.deepEqual(saved.confusion, { pass: { pass: 4, fail: 0 }, fail: { pass: 1, fail: 5 } });
    assert.equal(emulator.requests.length, 10);
    // Every judge call carried the case's transcript and diff as untrusted data.
    for (const r of emulator.requests) assert.match(userText(r.request!), /<untrusted-data source="diff">/);
  } finally {
    await emulator.close();
  }
});
