// `npm run bench sessionLog`: reopening big and many session logs.
// 1. A ~50 MB session log: loadSession (what `keel run --resume`, the panel's reopen and the trace
//    read) and a whole resume (createAgentSession + the panel's snapshot), each in a fresh process for
//    its own wall time and peak RSS. Baselines in the same run: a bare `fs.readFileSync` of the same
//    file, and readFileSync + JSON.parse of every line (what loading did before: whole-file).
// 2. A history of 500 sessions (~50 MB in all): listSessions with its index warm, after 5 logs were
//    appended to, and cold (no index: first open after an upgrade, or a corrupt index). Baseline: reading
//    every log whole and parsing every line (what the list did before).
// Medians of REPS runs (env BENCH_REPS, default 5).
import { recordSessionLog } from '../src/agent/trust/ledger.ts';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INDEX_FILE, listSessions } from '../src/agent/session/sessionIndex.ts';
import { sessionLogText } from './sessionFixture.ts';

const REPS = Number(process.env.BENCH_REPS ?? 5);
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const r2 = (n: number) => Math.round(n * 100) / 100;

interface ChildFigures {
  ms: number;
  maxRssMb: number;
  [k: string]: unknown;
}

function child(mode: string, ...args: string[]): ChildFigures {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', path.join(here, 'sessionLogChild.ts'), mode, ...args],
    { cwd: root, encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  return JSON.parse(out.trim().split('\n').at(-1)!) as ChildFigures;
}

function medianOf(mode: string, ...args: string[]) {
  const runs = Array.from({ length: REPS }, () => child(mode, ...args));
  return {
    ms: median(runs.map((r) => r.ms)),
    maxRssMb: median(runs.map((r) => r.maxRssMb)),
    last: runs.at(-1)!,
    runs,
  };
}

function bigLog(workspace: string) {
  const dir = path.join(workspace, '.keel', 'sessions');
  fs.mkdirSync(dir, { recursive: true });
  const id = '20260101-000000-b1g000';
  const file = path.join(dir, `${id}.jsonl`);
  fs.writeFileSync(file, sessionLogText({ sessionId: id, bytes: 50 * 1024 * 1024, resultBytes: 12_000 }));
  // As Keel records a log it creates (only those are resumed): the bench's log stands for one.
  recordSessionLog(file);
  return { id, file };
}

function history(stateDir: string, count: number, totalBytes: number): string[] {
  const dir = path.join(stateDir, 'sessions');
  fs.mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = `20260101-${String(100000 + i)}-${(i * 7919).toString(16).padStart(6, '0').slice(-6)}`;
    const file = path.join(dir, `${id}.jsonl`);
    fs.writeFileSync(
      file,
      sessionLogText({ sessionId: id, bytes: totalBytes / count, seed: i, createdAt: i }),
    );
    const t = Date.now() / 1000 - (count - i) * 60;
    fs.utimesSync(file, t, t);
    files.push(file);
  }
  return files;
}

function timeMedian(fn: () => void, before?: () => void): number {
  const xs: number[] = [];
  for (let i = 0; i < REPS; i++) {
    before?.();
    const t = performance.now();
    fn();
    xs.push(performance.now() - t);
  }
  return Math.round(median(xs) * 10) / 10;
}

export async function runSessionLogBench() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-sessionlog-bench-'));
  // Keel's user folder (where the state ledger lives) inside the bench's own temp dir, for the children too.
  const savedHome = process.env.KEEL_HOME;
  process.env.KEEL_HOME = path.join(tmp, 'keel-home');
  try {
    // ---- 1. one 50 MB log ----
    const workspace = path.join(tmp, 'ws');
    const { id, file } = bigLog(workspace);
    const logMb = r2(fs.statSync(file).size / 1024 / 1024);
    const idle = medianOf('idle');
    const readFile = medianOf('readFile', file);
    const readAndParse = medianOf('readAndParse', file);
    const load = medianOf('loadSession', file);
    const resume = medianOf('resume', workspace, id);
    const bigLogFigures = {
      log_mb: logMb,
      events: load.last.events,
      process_idle_rss_mb: idle.maxRssMb,
      baseline_readFile_ms: readFile.ms,
      baseline_readFile_peak_rss_mb: readFile.maxRssMb,
      baseline_readFile_and_parse_lines_ms: readAndParse.ms,
      baseline_readFile_and_parse_lines_peak_rss_mb: readAndParse.maxRssMb,
      loadSession_ms: load.ms,
      loadSession_peak_rss_mb: load.maxRssMb,
      // The resume as the built CLI/extension runs it (modules already loaded), then with tsx's
      // on-the-fly compile of the session's modules (a bench artefact, not what users wait for).
      resume_with_panel_snapshot_ms: median(resume.runs.map((r) => r.buildMs as number)),
      resume_including_tsx_imports_ms: resume.ms,
      resume_peak_rss_mb: resume.maxRssMb,
      ratio_loadSession_vs_readFile_and_parse: r2(load.ms / readAndParse.ms),
      ratio_rss_loadSession_vs_readFile_and_parse: r2(load.maxRssMb / readAndParse.maxRssMb),
      goal: 'reopen < 2000 ms and < 300 MB',
    };

    // ---- 2. 500 sessions ----
    const stateDir = path.join(tmp, 'history', '.keel');
    const files = history(stateDir, 500, 50 * 1024 * 1024);
    const historyMb = r2(files.reduce((n, f) => n + fs.statSync(f).size, 0) / 1024 / 1024);
    const index = path.join(stateDir, 'sessions', INDEX_FILE);
    const baselineMs = timeMedian(() => {
      for (const f of files)
        for (const line of fs.readFileSync(f, 'utf8').split('\n')) if (line) JSON.parse(line);
    });
    const coldMs = timeMedian(
      () => listSessions(stateDir),
      () => fs.rmSync(index, { force: true }),
    );
    listSessions(stateDir);
    const warmMs = timeMedian(() => listSessions(stateDir));
    let k = 0;
    const appendedMs = timeMedian(
      () => listSessions(stateDir),
      () => {
        for (let i = 0; i < 5; i++) {
          const f = files[(k++ * 37) % files.length]!;
          const extra = `${JSON.stringify({ type: 'message_appended', message: { role: 'user', id: `x${k}_${i}`, ts: 1, text: 'more' }, sessionId: 'x', seq: 1e6 + k, ts: 1 })}\n`;
          fs.appendFileSync(f, extra);
        }
      },
    );
    const listed = listSessions(stateDir);
    const historyFigures = {
      sessions: listed.length,
      history_mb: historyMb,
      baseline_read_all_logs_whole_ms: baselineMs,
      list_warm_index_ms: warmMs,
      list_after_5_logs_appended_ms: appendedMs,
      list_cold_no_index_ms: coldMs,
      index_kb: Math.round(fs.statSync(index).size / 1024),
      ratio_warm_vs_baseline: r2(warmMs / baselineMs),
      ratio_cold_vs_baseline: r2(coldMs / baselineMs),
      goal: 'history of 500 sessions < 300 ms without reading whole logs',
    };
    return { reps: REPS, big_log: bigLogFigures, history_500: historyFigures };
  } finally {
    if (savedHome === undefined) delete process.env.KEEL_HOME;
    else process.env.KEEL_HOME = savedHome;
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
