import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { rgPath } from '@vscode/ripgrep';
import type { Host } from '../src/agent/host.ts';
import { createNodeStorage, createNodeWorkspace } from '../src/agent/node/nodeHost.ts';
import { createNodeShell } from '../src/agent/node/nodeShell.ts';
import { createPathGuard } from '../src/agent/safety/paths/pathGuard.ts';
import { buildGrepArgs, createGrepTool } from '../src/agent/tools/grep.ts';
import type { ToolContext } from '../src/agent/tools/protocol.ts';

// Keel's Grep tool (spawn rg --json, parse, sort, render, limit) against raw `rg --json` with the
// same arguments, on a real tree. Both sides search the same root with the same flags, so the ratio
// is Keel's overhead. Goal: keel/rg ≤ 1.2×.

export interface GrepBenchOptions {
  /** Search root; default: this repository's node_modules. */
  readonly root?: string;
  readonly pattern?: string;
  readonly warmup?: number;
  readonly runs?: number;
}

export interface GrepBenchResult {
  readonly root: string;
  readonly files: number;
  readonly enoughFiles: boolean;
  readonly pattern: string;
  readonly runs: number;
  readonly matchedLines: number;
  /** Keel stopped at its output limit (2000 matching lines) and told the model so; rg ran to the end. */
  readonly keelTruncated: boolean;
  readonly keelMedianMs: number;
  readonly rgMedianMs: number;
  readonly ratio: number;
  readonly goal: number;
  readonly pass: boolean;
}

const GOAL = 1.2;
const MIN_FILES = 10_000;

function countFiles(dir: string): number {
  let n = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const current = stack.pop()!;
    for (const entry of fs.readdirSync(current, { withFileTypes: true })) {
      if (entry.isDirectory()) stack.push(path.join(current, entry.name));
      else if (entry.isFile()) n++;
    }
  }
  return n;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function rawRg(args: readonly string[], cwd: string): Promise<{ ms: number; matchedLines: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(rgPath, args, {
      cwd,
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, RIPGREP_CONFIG_PATH: '' },
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', () => {
      const ms = performance.now() - started;
      const out = Buffer.concat(chunks).toString('utf8');
      resolve({ ms, matchedLines: out.split('\n').filter((l) => l.startsWith('{"type":"match"')).length });
    });
  });
}

/** Both a selective pattern (Keel parses every match) and a broad one (thousands of matches). */
export async function runGrepBenches(): Promise<GrepBenchResult[]> {
  return [await runGrepBench({ pattern: 'readFileSync' }), await runGrepBench({ pattern: 'function' })];
}

export async function runGrepBench(options: GrepBenchOptions = {}): Promise<GrepBenchResult> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const root = fs.realpathSync(options.root ?? path.join(here, '..', 'node_modules'));
  const pattern = options.pattern ?? 'readFileSync';
  const warmup = options.warmup ?? 3;
  const runs = options.runs ?? 15;
  const files = countFiles(root);

  // The search root is the workspace itself, so no parent .gitignore hides it; spill files go to a
  // temp state dir instead of into the tree being measured.
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-grep-'));
  const workspace = createNodeWorkspace([root]);
  const host: Host = {
    workspace,
    approvals: { ask: async () => 'deny' },
    shell: createNodeShell(),
    clock: { now: () => Date.now() },
    storage: createNodeStorage(),
    stateDir,
    ripgrepPath: rgPath,
  };
  const guard = createPathGuard({ roots: workspace.roots, stateDir });
  const tool = createGrepTool();
  const input = tool.inputSchema.parse({ pattern, output_mode: 'content' });
  const args = buildGrepArgs(input, root, false, false);
  let seq = 0;
  const keel = async (): Promise<{ ms: number; matchedLines: number; truncated: boolean }> => {
    const ctx: ToolContext = {
      host,
      sessionId: 'bench',
      toolUseId: `toolu_bench_${++seq}`,
      signal: new AbortController().signal,
      ledger: { recordRead: () => {}, lastHash: () => undefined, recordWrite: () => {}, forget: () => {} },
      guard,
      audit: () => {},
      update: () => {},
    };
    const started = performance.now();
    const result = await tool.execute(input, ctx);
    const ms = performance.now() - started;
    if (result.status === 'error') throw new Error(`Grep failed: ${result.text}`);
    return {
      ms,
      matchedLines: Number(result.stats.matched_lines ?? 0),
      truncated: result.status === 'partial',
    };
  };

  try {
    for (let i = 0; i < warmup; i++) {
      await keel();
      await rawRg(args, root);
    }
    const keelTimes: number[] = [];
    const rgTimes: number[] = [];
    let matchedLines = 0;
    let keelTruncated = false;
    for (let i = 0; i < runs; i++) {
      // Alternate which side goes first so cache and CPU-frequency drift hit both equally.
      let k: { ms: number; matchedLines: number; truncated: boolean };
      let r: { ms: number; matchedLines: number };
      if (i % 2 === 0) {
        k = await keel();
        r = await rawRg(args, root);
      } else {
        r = await rawRg(args, root);
        k = await keel();
      }
      // A complete Keel result must count exactly what rg finds; a truncated one may only count less.
      if (k.truncated ? k.matchedLines > r.matchedLines : k.matchedLines !== r.matchedLines) {
        throw new Error(`Keel and rg disagree: ${k.matchedLines} vs ${r.matchedLines} matching lines`);
      }
      matchedLines = r.matchedLines;
      keelTruncated ||= k.truncated;
      keelTimes.push(k.ms);
      rgTimes.push(r.ms);
    }
    const keelMedianMs = median(keelTimes);
    const rgMedianMs = median(rgTimes);
    const ratio = keelMedianMs / rgMedianMs;
    return {
      root,
      files,
      enoughFiles: files >= MIN_FILES,
      pattern,
      runs,
      matchedLines,
      keelTruncated,
      keelMedianMs,
      rgMedianMs,
      ratio,
      goal: GOAL,
      pass: ratio <= GOAL,
    };
  } finally {
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const pattern = process.argv[2];
  const r = await runGrepBench(pattern ? { pattern } : {});
  console.log(`Grep benchmark — root ${r.root}`);
  console.log(
    `  files in tree: ${r.files}${r.enoughFiles ? '' : ` (fewer than ${MIN_FILES}: not a representative tree)`}`,
  );
  console.log(
    `  pattern: ${JSON.stringify(r.pattern)}, ${r.matchedLines} matching lines${r.keelTruncated ? ' (Keel stops at its output limit)' : ''}, ${r.runs} alternating runs`,
  );
  console.log(`  raw rg --json : ${r.rgMedianMs.toFixed(1)} ms (median)`);
  console.log(`  Keel Grep     : ${r.keelMedianMs.toFixed(1)} ms (median)`);
  console.log(`  ratio keel/rg : ${r.ratio.toFixed(2)}× (goal ≤ ${r.goal}×) ${r.pass ? 'PASS' : 'MISS'}`);
}
