import * as fs from 'node:fs';
import { z } from 'zod';
import type { ModelClient } from '../model/client.ts';
import { judge } from './judge.ts';

// A judge is only as good as its agreement with people. A calibration set is a file of trials a
// person has labelled pass or fail (task, condensed transcript, diff, the label and why); running
// the judge over it prints how often the judge's pass/fail (score ≥ threshold) matches the label,
// and Cohen's kappa (agreement beyond what chance gives with the same base rates). A case the judge
// could not score (no verdict) counts as a disagreement: a judge that fails to answer is no judge.

const caseSchema = z.strictObject({
  id: z.string().min(1),
  label: z.enum(['pass', 'fail']),
  /** The labeller's reason: kept with the label so a later reader can challenge it. */
  why: z.string().min(1),
  rubric: z.string().min(1).optional(),
  prompt: z.string().min(1),
  transcript: z.string(),
  diff: z.string(),
});
export const calibrationSetSchema = z
  .strictObject({
    description: z.string().optional(),
    /** The rubric of every case that names none. */
    rubric: z.string().min(1).optional(),
    threshold: z.number().min(0).max(1).default(0.5),
    cases: z.array(caseSchema).min(1),
  })
  .refine((s) => s.rubric !== undefined || s.cases.every((c) => c.rubric !== undefined), {
    message: 'every case needs a rubric (or give the set one)',
  })
  .refine((s) => new Set(s.cases.map((c) => c.id)).size === s.cases.length, {
    message: 'case ids must be unique',
  });
export type CalibrationSet = z.infer<typeof calibrationSetSchema>;

export function loadCalibrationSet(file: string): CalibrationSet {
  let value: unknown;
  try {
    value = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const parsed = calibrationSetSchema.safeParse(value);
  if (!parsed.success)
    throw new Error(
      `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

export interface CalibrationRow {
  readonly id: string;
  readonly label: 'pass' | 'fail';
  readonly score: number | null;
  readonly predicted: 'pass' | 'fail' | 'error';
  readonly agree: boolean;
  readonly detail: string;
}

export interface Calibration {
  readonly n: number;
  readonly agreed: number;
  readonly agreement: number;
  /** Cohen's kappa over the cases the judge scored; null when it is undefined (one class only). */
  readonly kappa: number | null;
  readonly errors: number;
  /** [label][predicted] counts over the scored cases. */
  readonly confusion: { pass: { pass: number; fail: number }; fail: { pass: number; fail: number } };
  readonly threshold: number;
  readonly rows: readonly CalibrationRow[];
}

export async function runCalibration(
  set: CalibrationSet,
  client: ModelClient,
  signal?: AbortSignal,
): Promise<Calibration> {
  const rows: CalibrationRow[] = [];
  for (const c of set.cases) {
    const outcome = await judge(
      client,
      { rubric: c.rubric ?? set.rubric!, prompt: c.prompt, transcript: c.transcript, diff: c.diff },
      signal,
    );
    if (!outcome.ok) {
      rows.push({
        id: c.id,
        label: c.label,
        score: null,
        predicted: 'error',
        agree: false,
        detail: outcome.error,
      });
      continue;
    }
    const predicted = outcome.verdict.score >= set.threshold ? 'pass' : 'fail';
    rows.push({
      id: c.id,
      label: c.label,
      score: outcome.verdict.score,
      predicted,
      agree: predicted === c.label,
      detail: outcome.verdict.reasons,
    });
  }
  return summarizeCalibration(rows, set.threshold);
}

export function summarizeCalibration(rows: readonly CalibrationRow[], threshold: number): Calibration {
  const confusion = { pass: { pass: 0, fail: 0 }, fail: { pass: 0, fail: 0 } };
  for (const r of rows) if (r.predicted !== 'error') confusion[r.label][r.predicted]++;
  const scored = rows.length - rows.filter((r) => r.predicted === 'error').length;
  const agreed = rows.filter((r) => r.agree).length;
  let kappa: number | null = null;
  if (scored > 0) {
    const po = (confusion.pass.pass + confusion.fail.fail) / scored;
    const labelPass = (confusion.pass.pass + confusion.pass.fail) / scored;
    const predPass = (confusion.pass.pass + confusion.fail.pass) / scored;
    const pe = labelPass * predPass + (1 - labelPass) * (1 - predPass);
    kappa = pe < 1 ? Math.round(((po - pe) / (1 - pe)) * 1000) / 1000 : null;
  }
  return {
    n: rows.length,
    agreed,
    agreement: rows.length > 0 ? Math.round((agreed / rows.length) * 1000) / 1000 : 0,
    kappa,
    errors: rows.length - scored,
    confusion,
    threshold,
    rows,
  };
}

export function formatCalibration(c: Calibration, model: string): string {
  const lines = [`Judge calibration (${model}, threshold ${c.threshold}):`];
  for (const r of c.rows)
    lines.push(
      `  ${r.agree ? 'agree   ' : 'DISAGREE'} ${r.id.padEnd(28)} label ${r.label.padEnd(4)} judge ${r.predicted.padEnd(5)} ${r.score === null ? '' : `(score ${r.score})`}${r.agree ? '' : ` — ${r.detail.slice(0, 160)}`}`,
    );
  lines.push(
    `agreement: ${c.agreed}/${c.n} = ${(c.agreement * 100).toFixed(1)}%, Cohen's kappa ${c.kappa ?? 'n/a'}${c.errors > 0 ? `, ${c.errors} case(s) without a verdict` : ''}`,
    `confusion (label → judge): pass→pass ${c.confusion.pass.pass}, pass→fail ${c.confusion.pass.fail}, fail→pass ${c.confusion.fail.pass}, fail→fail ${c.confusion.fail.fail}`,
  );
  return lines.join('\n');
}
