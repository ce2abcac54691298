import { recordSessionLog } from '../src/agent/trust/ledger.ts';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentMessage } from '../src/agent/messages.ts';
import { loadSearchLibrary, openMemoryIndex, openMemoryIndexAsync } from '../src/agent/memory/searchIndex.ts';
import { messageOfLine, searchableText } from '../src/agent/memory/sources.ts';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../src/agent/safety/approvals.ts';
import { createPathGuard } from '../src/agent/safety/paths/pathGuard.ts';
import { createMemorySearchTool } from '../src/agent/tools/memorySearch.ts';
import type { ToolContext } from '../src/agent/tools/protocol.ts';
import { rng } from './sessionScript.ts';

// MemorySearch over a generated workspace history — 200 session logs, ~50 MB of JSONL written the way
// Keel writes them — against a linear scan (read every log, parse every line, match every word: what
// MemorySearch did before the index) in the same run. Goal: median query well under a second.

export interface MemoryBenchOptions {
  readonly sessions?: number;
  readonly totalMb?: number;
  readonly runs?: number;
}

const CODE_WORDS =
  'function const return import export async await error failed test build config server client request response cache token prefix session message tool result file path edit read write grep glob bash npm node typescript module package version update delete create parse render stream retry timeout abort signal process child output input schema validate index search query ranking memory context window compaction summary archive decision reason because user prefers convention always never deploy staging production database migration port connection refused null undefined exception stack trace line column'.split(
    ' ',
  );

function makeVocabulary(rand: () => number, n: number): string[] {
  const syll = [
    'ka',
    'lo',
    'mi',
    'ne',
    'ru',
    'ta',
    'zo',
    'pe',
    'shi',
    'dra',
    'qu',
    'vex',
    'tor',
    'lin',
    'bar',
  ];
  const words = new Set<string>(CODE_WORDS);
  while (words.size < n) {
    let w = '';
    const k = 2 + Math.floor(rand() * 3);
    for (let i = 0; i < k; i++) w += syll[Math.floor(rand() * syll.length)];
    words.add(w);
  }
  return [...words];
}

/** Writes the history; returns the planted facts (one per tenth session) used as queries. */
export function generate(stateDir: string, sessions: number, totalBytes: number): string[] {
  const rand = rng(42);
  const vocab = makeVocabulary(rand, 6000);
  // Zipf-ish: common words much more often than rare ones, like real text.
  const word = () => vocab[Math.floor(vocab.length * rand() ** 3)]!;
  const sentence = (n: number) => Array.from({ length: n }, word).join(' ');
  const dir = path.join(stateDir, 'sessions');
  fs.mkdirSync(dir, { recursive: true });
  const perSession = totalBytes / sessions;
  const planted: string[] = [];
  for (let s = 0; s < sessions; s++) {
    const id = `20260101-${String(100000 + s)}-${(s * 7919).toString(16).padStart(6, '0').slice(-6)}`;
    const lines = [
      JSON.stringify({ type: 'session', version: 1, id, createdAt: s, model: 'm', workspace: '/w' }),
    ];
    let bytes = lines[0]!.length;
    let seq = 0;
    let n = 0;
    const push = (message: AgentMessage) => {
      const line = JSON.stringify({
        type: 'message_appended',
        message,
        sessionId: id,
        seq: ++seq,
        ts: message.ts,
      });
      lines.push(line);
      bytes += line.length + 1;
    };
    while (bytes < perSession) {
      const ts = Date.UTC(2026, 0, 1) + s * 86_400_000 + n * 1000;
      if (n % 6 === 0) {
        const fact =
          s % 10 === 0 && n === 0
            ? ` The nightly job zeta${s}quark fails on runner ${s}-omega because of clock skew.`
            : '';
        if (fact) planted.push(`zeta${s}quark clock skew`);
        push({
          role: 'user',
          id: `usr_${s}_${n}`,
          ts,
          text: `${sentence(12 + Math.floor(rand() * 30))}.${fact}`,
        });
      } else if (n % 2 === 1) {
        push({
          role: 'assistant',
          id: `msg_${s}_${n}`,
          ts,
          model: 'm',
          stopReason: 'tool_use',
          usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          content: [
            { type: 'text', text: sentence(20 + Math.floor(rand() * 60)) },
            { type: 'tool_use', id: `toolu_${s}_${n}`, name: 'Grep', input: { pattern: word() } },
          ],
        });
      } else {
        const out = Array.from({ length: 20 + Math.floor(rand() * 120) }, () => sentence(8)).join('\n');
        push({
          role: 'tool_result',
          id: `res_${s}_${n}`,
          ts,
          toolUseId: `toolu_${s}_${n - 1}`,
          toolName: 'Grep',
          content: out,
          isError: false,
          result: { status: 'success', data: null, text: out, stats: { time_ms: 1 } },
        });
      }
      n++;
    }
    fs.writeFileSync(path.join(dir, `${id}.jsonl`), `${lines.join('\n')}\n`);
    // Stands for logs Keel made: only those are searched (trust/ledger.ts).
    recordSessionLog(path.join(dir, `${id}.jsonl`));
  }
  return planted;
}

/** The baseline: what MemorySearch did before the index, applied to every log of the workspace. */
function linearScan(stateDir: string, query: string, limit: number): string[] {
  const terms = query.toLowerCase().split(/\s+/).filter(Boolean);
  const dir = path.join(stateDir, 'sessions');
  const scored: Array<{ id: string; hits: number; score: number }> = [];
  for (const name of fs.readdirSync(dir)) {
    if (!name.endsWith('.jsonl')) continue;
    for (const line of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      const message = messageOfLine(line);
      const text = message && searchableText(message);
      if (!message || !text) continue;
      const lower = text.toLowerCase();
      let hits = 0;
      let score = 0;
      for (const t of terms) {
        let c = 0;
        for (let at = lower.indexOf(t); at >= 0; at = lower.indexOf(t, at + t.length)) c++;
        if (c > 0) hits++;
        score += c;
      }
      if (hits > 0) scored.push({ id: message.id, hits, score });
    }
  }
  scored.sort((a, b) => b.hits - a.hits || b.score - a.score);
  return scored.slice(0, limit).map((s) => s.id);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const time = <T>(fn: () => T): [T, number] => {
  const t = performance.now();
  const v = fn();
  return [v, performance.now() - t];
};
/** CPU milliseconds (user + system) of a synchronous step: the machine may be shared, wall time inflates. */
const cpu = (fn: () => void): number => {
  const c = process.cpuUsage();
  fn();
  const d = process.cpuUsage(c);
  return (d.user + d.system) / 1000;
};
const dirSize = (dir: string) =>
  fs.readdirSync(dir).reduce((sum, n) => sum + fs.statSync(path.join(dir, n)).size, 0);

export async function runMemorySearchBench(options: MemoryBenchOptions = {}) {
  const sessions = options.sessions ?? 200;
  const totalBytes = (options.totalMb ?? 50) * 1024 * 1024;
  const runs = options.runs ?? 23;
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-membench-')));
  const savedHome = process.env.KEEL_HOME;
  process.env.KEEL_HOME = path.join(root, 'keel-home');
  try {
    const stateDir = path.join(root, '.keel');
    const planted = generate(stateDir, sessions, totalBytes);
    await loadSearchLibrary();
    const historyBytes = dirSize(path.join(stateDir, 'sessions'));
    const queries = [...planted, 'connection refused port', 'deploy staging migration', 'cache prefix token'];

    // Cold build (first search ever in this workspace), then what a new process pays (load, nothing new).
    let buildMs = 0;
    const buildCpuMs = cpu(() => {
      buildMs = time(() => {
        const index = openMemoryIndex({ stateDir });
        index.update();
        index.save();
      })[1];
    });
    const indexDir = path.join(stateDir, 'memory', 'index');
    const indexBytes = dirSize(indexDir);
    let loadMs = 0;
    const loadCpuMs = cpu(() => {
      loadMs = time(() => openMemoryIndex({ stateDir }).update())[1];
    });

    // What a session does at start: load the saved index in batches while the model works. The
    // longest event-loop stall during it is what a host (the VS Code extension host) feels.
    let longestStallMs = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const t = performance.now();
      longestStallMs = Math.max(longestStallMs, t - last);
      last = t;
    }, 1);
    const asyncStarted = performance.now();
    await openMemoryIndexAsync({ stateDir });
    const prefetchMs = performance.now() - asyncStarted;
    clearInterval(ticker);

    const host = createNodeHost({ workspace: root, approvals: createPolicyApprovals('never') });
    const ctx = {
      host,
      sessionId: 'bench',
      toolUseId: 't',
      signal: new AbortController().signal,
      guard: createPathGuard({ roots: [root], stateDir: host.stateDir }),
      audit: () => {},
      update: () => {},
    } as unknown as ToolContext;
    const tool = createMemorySearchTool({ userMemoryFile: null });
    await tool.execute({ query: 'warm up' }, ctx); // the process loads the index once

    const indexedMs: number[] = [];
    const scanMs: number[] = [];
    let agree = 0;
    for (let r = 0; r < runs; r++) {
      const query = queries[r % queries.length]!;
      const t = performance.now();
      const result = await tool.execute({ query, limit: 5 }, ctx);
      indexedMs.push(performance.now() - t);
      const [scan, ms] = time(() => linearScan(stateDir, query, 5));
      scanMs.push(ms);
      if (r < planted.length && result.data.matches[0]?.id === scan[0]) agree++;
    }

    // A session appends to its log between searches: the next search indexes only the new bytes.
    const log = path.join(stateDir, 'sessions', fs.readdirSync(path.join(stateDir, 'sessions'))[0]!);
    fs.appendFileSync(
      log,
      `${JSON.stringify({ type: 'message_appended', message: { role: 'user', id: 'usr_new', ts: 1, text: 'a brand new fact: ostrich-9' } })}\n`,
    );
    const t = performance.now();
    const fresh = await tool.execute({ query: 'ostrich-9' }, ctx);
    const appendThenSearchMs = performance.now() - t;

    const indexedMedian = median(indexedMs);
    const scanMedian = median(scanMs);
    return {
      sessions,
      historyMb: +(historyBytes / 1024 / 1024).toFixed(1),
      indexMb: +(indexBytes / 1024 / 1024).toFixed(1),
      indexToHistory: +(indexBytes / historyBytes).toFixed(2),
      coldBuildMs: Math.round(buildMs),
      coldBuildCpuMs: Math.round(buildCpuMs),
      newProcessLoadMs: Math.round(loadMs),
      newProcessLoadCpuMs: Math.round(loadCpuMs),
      sessionPrefetchMs: Math.round(prefetchMs),
      sessionPrefetchLongestEventLoopStallMs: Math.round(longestStallMs),
      runs,
      medianQueryMsIndexed: +indexedMedian.toFixed(1),
      medianQueryMsLinearScan: +scanMedian.toFixed(1),
      speedup: +(scanMedian / indexedMedian).toFixed(1),
      plantedFactTopHitAgreesWithScan: `${agree}/${Math.min(runs, planted.length)}`,
      appendThenSearchMs: Math.round(appendThenSearchMs),
      appendedFactFound: fresh.data.matches[0]?.id === 'usr_new',
      goal: 'median query < 1000 ms',
      pass: indexedMedian < 1000,
    };
  } finally {
    if (savedHome === undefined) delete process.env.KEEL_HOME;
    else process.env.KEEL_HOME = savedHome;
    fs.rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) {
  console.log(JSON.stringify(await runMemorySearchBench(), null, 2));
}
