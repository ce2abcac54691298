import * as path from 'node:path';
import type { EvalReport, TaskReport } from './runner.ts';

// The eval report as text (stdout) and as one self-contained HTML page (no script, no network).

const pct = (x: number | null) => (x === null ? '  -  ' : `${(x * 100).toFixed(1).padStart(5)}%`);

export function formatSummary(report: EvalReport): string {
  const part = report.shard
    ? ` (shard ${report.shard.index}/${report.shard.count})`
    : report.merged_from
      ? ` (merged from ${report.merged_from.length} report(s))`
      : '';
  const lines = [
    `Suite ${report.suite}${part}: ${report.overall.tasks} task(s), ${report.overall.trials} trial(s) in ${(report.durationMs / 1000).toFixed(1)} s`,
    '',
    `${'task'.padEnd(32)} trials pass fail infra  pass@1  pass@K  pass^K  turns   cost   (K = the task's trials)`,
  ];
  const row = (id: string, t: Omit<TaskReport, 'id' | 'results' | 'retried'>) => {
    const k = String(Object.keys(t.pass_at_k).length);
    return `${id.slice(0, 32).padEnd(32)} ${String(t.trials).padStart(6)} ${String(t.passed).padStart(4)} ${String(t.failed).padStart(4)} ${String(t.infra_errors).padStart(5)}  ${pct(t.pass_at_1)}  ${pct(t.pass_at_k[k] ?? null)}  ${pct(t.pass_hat_k[k] ?? null)}  ${(t.mean_turns ?? 0).toFixed(1).padStart(5)}  $${t.cost_usd.toFixed(4)}`;
  };
  for (const t of report.tasks) lines.push(row(t.id, t));
  lines.push('', row('OVERALL (mean over tasks)', report.overall));
  const o = report.overall;
  lines.push(
    '',
    `tokens: input ${o.tokens.input}, output ${o.tokens.output}, cache read ${o.tokens.cache_read}, cache write ${o.tokens.cache_write}; cache-hit ratio ${o.cache_hit_ratio ?? '-'}`,
    report.merged_from
      ? `trial logs: in each shard's --out directory (${report.merged_from.map((m) => m.outDir).join(', ')})`
      : `report and trial logs: ${report.outDir}`,
  );
  return lines.join('\n');
}

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** `htmlDir`: where the page is written, so links to the trials' trace pages are relative to it. */
export function renderReportHtml(report: EvalReport, htmlDir = report.outDir): string {
  const traceLink = (log: string) => {
    // A merged report's logs are absolute (each in its shard's --out directory).
    const rel = path.relative(htmlDir, path.resolve(report.outDir, path.dirname(log), 'trace.html'));
    return ` · <a href="${esc(rel.split(path.sep).join('/'))}">trace</a>`;
  };
  const K = Object.keys(report.overall.pass_at_k).length;
  const ksHead = Array.from({ length: K }, (_, i) => `<th>pass@${i + 1}</th><th>pass^${i + 1}</th>`).join('');
  const cells = (t: Omit<TaskReport, 'id' | 'results' | 'retried'>) =>
    `<td>${t.trials}</td><td>${t.passed}</td><td>${t.failed}</td><td>${t.infra_errors}</td>${Array.from(
      { length: K },
      (_, i) =>
        `<td>${pct(t.pass_at_k[String(i + 1)] ?? null)}</td><td>${pct(t.pass_hat_k[String(i + 1)] ?? null)}</td>`,
    ).join(
      '',
    )}<td>${t.mean_turns ?? '-'}</td><td>${t.tokens.input + t.tokens.cache_read + t.tokens.cache_write} / ${t.tokens.output}</td><td>${t.cache_hit_ratio ?? '-'}</td><td>$${t.cost_usd.toFixed(4)}</td>`;
  const taskRows = report.tasks
    .map(
      (t) =>
        `<tr><th scope="row">${esc(t.id)}</th>${cells(t)}</tr>` +
        `<tr><td colspan="${9 + 2 * K}"><details><summary>${t.results.length} trial(s)</summary><ul>${t.results
          .map(
            (r) =>
              `<li class="${r.status}"><b>trial ${r.trial}${r.attempt ? ` (retry ${r.attempt})` : ''}: ${r.status}</b> — ${esc(r.reason)}${r.log ? ` · log <code>${esc(r.log)}</code>${traceLink(r.log)}` : ''}</li>`,
          )
          .join('')}</ul></details></td></tr>`,
    )
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Keel eval ${esc(report.suite)}</title>
<style>:root{color-scheme:light dark}body{font:13px system-ui,sans-serif;margin:16px}table{border-collapse:collapse}td,th{border:1px solid #8884;padding:3px 6px;text-align:right;font-variant-numeric:tabular-nums}th[scope=row]{text-align:left}td[colspan]{text-align:left}.passed b{color:#1a7f37}.failed b{color:#cf222e}.infra_error b{color:#9a6700}</style></head><body>
<h1>Keel eval: ${esc(report.suite)}</h1>
<p>${report.overall.tasks} task(s), ${report.overall.trials} trial(s), started ${esc(report.startedAt)}, ${(report.durationMs / 1000).toFixed(1)} s${report.model ? `, model ${esc(report.model)}` : ''}. Trial logs under <code>${esc(report.outDir)}</code>. pass@k and pass^k count only valid trials (infrastructure errors are kept apart).</p>
<table><thead><tr><th>task</th><th>trials</th><th>passed</th><th>failed</th><th>infra errors</th>${ksHead}<th>mean turns</th><th>tokens in / out</th><th>cache hit</th><th>cost</th></tr></thead>
<tbody>${taskRows}
<tr><th scope="row">overall (mean over tasks)</th>${cells(report.overall)}</tr></tbody></table>
</body></html>
`;
}
