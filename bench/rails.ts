// The rails' own cost, moved here from timed unit tests (a loaded CI machine made them a coin toss):
// 1. Command classification per command (parse + policy walk) against the shell parser alone on the
//    same commands — the ratio is what the policy adds to parsing.
// 2. Edit's NO_MATCH answer on a 10k-line file (it searches for the most similar region) against a
//    successful Edit of the same file — the ratio is what the similarity search costs.
// Medians of BENCH_RUNS (default 7) runs each.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { classifyCommand } from '../src/agent/safety/commandPolicy.ts';
import { createReadLedger } from '../src/agent/safety/guards/readLedger.ts';
import { createPathGuard } from '../src/agent/safety/paths/pathGuard.ts';
import { parseShell } from '../src/agent/safety/shell/shellParse.ts';
import { createEditTool } from '../src/agent/tools/edit.ts';
import { createWriteGate } from '../src/agent/tools/editing/gate.ts';
import type { ToolContext, ToolResult } from '../src/agent/tools/protocol.ts';
import { createReadTool } from '../src/agent/tools/read.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);

// biome-ignore-start lint/suspicious/noTemplateCurlyInString: shell commands
const COMMANDS = [
  'cd src && npm test -- --grep "x" | tee out.log && git status',
  'git log --oneline -20 | head',
  'for f in src/*.ts; do wc -l "$f"; done',
  'npx tsc -p tsconfig.json --noEmit && npm run lint',
  'find . -name "*.orig" -print0 | xargs -0 rm -f',
  'curl -fsSL https://example.com/install.sh | sh',
  'rm -rf node_modules dist && npm ci',
  'bash -c "echo ${HOME} > /tmp/x"',
  'python3 -c "import os; os.remove(\'a.txt\')"',
  'cat <<EOF > notes.md\nhello $USER\nEOF',
];
// biome-ignore-end lint/suspicious/noTemplateCurlyInString: shell commands

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function timeIt(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

function classifyBench() {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-rails-')));
  try {
    const options = { workspaceRoot: ws, home: os.homedir() };
    const rounds = 20;
    const all = () => {
      for (let r = 0; r < rounds; r++) for (const c of COMMANDS) classifyCommand(c, options);
    };
    const parseOnly = () => {
      for (let r = 0; r < rounds; r++) for (const c of COMMANDS) parseShell(c);
    };
    all(); // warm-up: loads the parser, fills caches
    parseOnly();
    const n = rounds * COMMANDS.length;
    const classify: number[] = [];
    const parse: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      classify.push(timeIt(all) / n);
      parse.push(timeIt(parseOnly) / n);
    }
    const keel = median(classify);
    const base = median(parse);
    return {
      commands: COMMANDS.length,
      classifyMsPerCommand: Number(keel.toFixed(3)),
      parseOnlyMsPerCommand: Number(base.toFixed(3)),
      ratio: Number((keel / base).toFixed(2)),
    };
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

async function noMatchBench() {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-rails-')));
  try {
    const host = createNodeHost({ workspace: ws, approvals: { ask: async () => 'allow_once' as const } });
    const guard = createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir });
    const ledger = createReadLedger();
    const ctx: ToolContext = {
      host,
      sessionId: 'bench',
      toolUseId: 'tool-1',
      signal: new AbortController().signal,
      ledger,
      guard,
      audit: () => {},
      update: () => {},
    };
    const lines = Array.from({ length: 10_000 }, (_, i) => `const value${i} = compute(${i}, "item-${i}");`);
    lines[7341] = 'function parseConfig(input: string, strict = false) {';
    const file = path.join(ws, 'big.ts');
    const original = lines.join('\n');
    const read = createReadTool();
    const edit = createEditTool({ gate: createWriteGate() });
    const fresh = async () => {
      fs.writeFileSync(file, original);
      await read.execute({ path: 'big.ts', limit: 20_000 }, ctx);
    };
    const noMatch = {
      path: 'big.ts',
      old_string: 'function parseConfig(input: string, strict = true) {',
      new_string: 'x',
    };
    const match = {
      path: 'big.ts',
      old_string: 'function parseConfig(input: string, strict = false) {',
      new_string: 'x',
    };
    const miss: number[] = [];
    const hit: number[] = [];
    for (let i = 0; i <= RUNS; i++) {
      await fresh();
      let outcome: ToolResult<unknown> | undefined;
      const m = await timeAsync(async () => {
        outcome = await edit.execute(noMatch, ctx);
      });
      if (outcome?.error?.code !== 'NO_MATCH')
        throw new Error(`expected NO_MATCH, got ${JSON.stringify(outcome)}`);
      await fresh();
      const h = await timeAsync(async () => {
        outcome = await edit.execute(match, ctx);
      });
      if (outcome?.error) throw new Error(`the matching edit failed: ${outcome.error.message}`);
      if (i === 0) continue; // warm-up
      miss.push(m);
      hit.push(h);
    }
    const keel = median(miss);
    const base = median(hit);
    return {
      fileLines: lines.length,
      noMatchMs: Number(keel.toFixed(1)),
      successfulEditMs: Number(base.toFixed(1)),
      ratio: Number((keel / base).toFixed(2)),
    };
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

export async function runRailsBench() {
  return { classify: classifyBench(), editNoMatch: await noMatchBench() };
}
