// `npm run bench`: every benchmark, each printed as figures and ratios against a baseline measured
// in the same run. Benchmarks are not tests: they print, they do not fail the build.
import { existsSync } from 'node:fs';

interface Bench {
  readonly name: string;
  readonly file: string;
  readonly fn: string;
}

const benches: Bench[] = [
  { name: 'Grep tool vs raw rg (real tree ≥10k files)', file: './grep.ts', fn: 'runGrepBenches' },
  { name: 'Harness CPU per call at 25k-150k tokens', file: './turnCpu.ts', fn: 'runTurnCpuBench' },
  { name: 'Fixed prefix: cl100k tokens per tool', file: './prefix.ts', fn: 'runPrefixBench' },
  { name: 'Extension: first prompt after activation', file: './firstPrompt.ts', fn: 'runFirstPromptBench' },
  {
    name: 'Sub-agents: 4 Task calls in one reply vs one per reply',
    file: './subagents.ts',
    fn: 'runSubagentBench',
  },
  {
    name: 'Checkpoint overhead per prompt (20k-file workspace)',
    file: './checkpoints.ts',
    fn: 'runCheckpointBench',
  },
  {
    name: '100-turn session: prompt cache and prefix stability',
    file: './session.ts',
    fn: 'runSessionBench',
  },
  { name: 'keel trace --html of a 50 MB session log', file: './trace.ts', fn: 'runTraceBench' },
  { name: 'Rails: command classification and Edit NO_MATCH cost', file: './rails.ts', fn: 'runRailsBench' },
  { name: 'OS sandbox: per-command overhead', file: './sandbox.ts', fn: 'runSandboxBench' },
  {
    name: 'MCP: eager vs lazy tool schemas (three real servers, 30 calls)',
    file: './mcp.ts',
    fn: 'runMcpBench',
  },
  {
    name: 'MemorySearch: 200 sessions / 50 MB history, index vs linear scan',
    file: './memorySearch.ts',
    fn: 'runMemorySearchBench',
  },
  {
    name: 'Session logs: reopen a 50 MB log, list 500 sessions',
    file: './sessionLog.ts',
    fn: 'runSessionLogBench',
  },
  {
    name: 'Chat panel: a 5,000-event transcript in Chromium',
    file: './panel.ts',
    fn: 'runPanelBench',
  },
  {
    name: 'CLI cold start: keel tool LS, keel run --demo vs node -e 0',
    file: './coldStart.ts',
    fn: 'runColdStartBench',
  },
  {
    name: 'Read-only tools: 6 Reads + 2 Greps in one turn, concurrent vs sequential',
    file: './readConcurrency.ts',
    fn: 'runReadConcurrencyBench',
  },
];

const only = process.argv[2];
for (const bench of benches) {
  if (only && !bench.file.includes(only)) continue;
  if (!existsSync(new URL(bench.file, import.meta.url))) {
    console.log(`\n## ${bench.name}\n(not present: ${bench.file})`);
    continue;
  }
  console.log(`\n## ${bench.name}`);
  const mod = (await import(bench.file)) as Record<string, () => Promise<unknown>>;
  const run = mod[bench.fn];
  if (!run) {
    console.log(`(${bench.file} does not export ${bench.fn})`);
    continue;
  }
  const started = Date.now();
  const figures = await run();
  console.log(JSON.stringify(figures, null, 2));
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`);
}
