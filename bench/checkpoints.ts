// Checkpoint overhead per prompt on a 20k-file workspace.
// The workspace: 20,000 real files (hard links into this repository's node_modules) plus a small src/.
// Each prompt is a real session turn against the emulator: Bash writes a file, then the model answers.
// Measured in the same run: per-prompt wall time with checkpoints off (baseline) and on, the
// checkpoint scan alone, and the emulator's own model-call latency. Printed: medians and ratios.
// Two layouts: node_modules ignored by .gitignore (a normal project: stat-only, no copies) and not
// ignored (worst case: every file is copied once by the first command, then only what changed).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_IGNORED_SIZE_CAP, scanWorkspace } from '../src/agent/checkpoints/scan.ts';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../src/agent/safety/approvals.ts';
import { createAgentSession } from '../src/agent/session/session.ts';
import { type ScriptedReply, startEmulator } from '../test/emulator/server.ts';

const FILES = Number(process.env.BENCH_FILES ?? 20_000);
const PROMPTS = Number(process.env.BENCH_PROMPTS ?? 15);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function linkTree(from: string, to: string, limit: number): number {
  let count = 0;
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (count >= limit) return;
      const abs = path.join(dir, e.name);
      const rel = path.relative(from, abs);
      if (e.isDirectory()) walk(abs);
      else if (e.isFile()) {
        fs.mkdirSync(path.join(to, path.dirname(rel)), { recursive: true });
        try {
          fs.linkSync(abs, path.join(to, rel));
        } catch {
          fs.copyFileSync(abs, path.join(to, rel));
        }
        count++;
      }
    }
  };
  walk(from);
  return count;
}

function makeWorkspace(ignored: boolean): { dir: string; files: number } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-ckpt-')));
  const files = linkTree(path.resolve('node_modules'), path.join(dir, 'node_modules'), FILES - 20);
  fs.mkdirSync(path.join(dir, 'src'));
  for (let i = 0; i < 19; i++)
    fs.writeFileSync(path.join(dir, 'src', `m${i}.ts`), `export const m${i} = ${i};\n`);
  fs.writeFileSync(path.join(dir, '.gitignore'), ignored ? 'node_modules/\n' : '# nothing ignored\n');
  return { dir, files: files + 20 };
}

async function runPrompts(workspace: string, checkpoints: boolean) {
  const replies: ScriptedReply[] = [];
  for (let i = 0; i < PROMPTS; i++) {
    replies.push({
      content: [{ type: 'tool_use', name: 'Bash', input: { command: `echo ${i} > src/out.txt` } }],
    });
    replies.push({ content: [{ type: 'text', text: `done ${i}` }] });
  }
  const emu = await startEmulator({ scenario: { replies } });
  const host = createNodeHost({ workspace, approvals: createPolicyApprovals('all') });
  const session = createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'bench',
    baseURL: emu.url,
    userSkillsDir: null,
    ...(checkpoints ? {} : { checkpoints: false as const }),
  });
  const modelMs: number[] = [];
  session.subscribe((e) => {
    if (e.type === 'model_call') modelMs.push(e.record.latency_ms);
  });
  const promptMs: number[] = [];
  let firstMs = 0;
  for (let i = 0; i < PROMPTS; i++) {
    const t0 = performance.now();
    const outcome = await session.prompt(`step ${i}`);
    const ms = performance.now() - t0;
    if (outcome.status !== 'finished')
      throw new Error(`prompt ${i}: ${outcome.status} ${outcome.error ?? ''}`);
    if (i === 0) firstMs = ms;
    else promptMs.push(ms);
  }
  session.dispose();
  await emu.close();
  return { firstMs, promptMs: median(promptMs), modelMs: median(modelMs) };
}

export async function runCheckpointBench() {
  const results: Record<string, unknown> = {};
  for (const ignored of [true, false]) {
    const ws = makeWorkspace(ignored);
    try {
      const scans: number[] = [];
      for (let i = 0; i < 7; i++) {
        const t0 = performance.now();
        scanWorkspace({
          root: ws.dir,
          skipDirs: [path.join(ws.dir, '.keel')],
          ignoredSizeCap: DEFAULT_IGNORED_SIZE_CAP,
        });
        scans.push(performance.now() - t0);
      }
      const off = await runPrompts(ws.dir, false);
      const on = await runPrompts(ws.dir, true);
      const overhead = on.promptMs - off.promptMs;
      const round = (n: number) => Math.round(n * 10) / 10;
      results[ignored ? 'node_modules ignored' : 'nothing ignored'] = {
        files: ws.files,
        scan_once_median_ms: round(median(scans)),
        prompt_median_ms_checkpoints_off: round(off.promptMs),
        prompt_median_ms_checkpoints_on: round(on.promptMs),
        overhead_per_prompt_ms: round(overhead),
        first_prompt_ms_on: round(on.firstMs),
        first_prompt_ms_off: round(off.firstMs),
        emulator_model_call_median_ms: round(on.modelMs),
        overhead_vs_emulator_turn_ratio: round(overhead / Math.max(1, off.promptMs)),
        overhead_vs_2_model_calls_ratio: round(overhead / Math.max(1, 2 * on.modelMs)),
      };
    } finally {
      fs.rmSync(ws.dir, { recursive: true, force: true });
    }
  }
  return results;
}
