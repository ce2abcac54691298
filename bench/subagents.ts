import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createNodeHost } from '../src/agent/node/nodeHost.ts';
import { createAgentSession } from '../src/agent/session/session.ts';
import { type ScriptedReply, startEmulator } from '../test/emulator/server.ts';

// Sub-agents in parallel: N Task calls in one reply (they run together through the global model lane)
// against the baseline of the same N sub-agents asked one per reply (one after another). Every model
// reply of a sub-agent takes `delayMs` (the emulator's slow fault), as a real model's would.

const N = 4;
const DELAY_MS = 250;

const child = (i: number) => ({
  firstUserContains: `BENCH-CHILD-${i}:`,
  replies: [
    {
      content: [{ type: 'tool_use', name: 'Glob', input: { pattern: '*.md' } }],
      fault: { type: 'slow', delayMs: DELAY_MS, perChunkDelayMs: 0 },
    },
    {
      content: [{ type: 'text', text: `## Summary\nchild ${i} done` }],
      fault: { type: 'slow', delayMs: DELAY_MS, perChunkDelayMs: 0 },
    },
  ] as ScriptedReply[],
});
const task = (i: number) => ({
  type: 'tool_use' as const,
  name: 'Task',
  input: { description: `part ${i}`, prompt: `BENCH-CHILD-${i}: look` },
});

/** Wall time of the sub-agents' part of one run. */
async function timeRun(parentReplies: ScriptedReply[]): Promise<number> {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-bench-sub-')));
  fs.writeFileSync(path.join(ws, 'README.md'), '# bench\n');
  const emu = await startEmulator({
    scenario: { replies: parentReplies, threads: Array.from({ length: N }, (_, i) => child(i)) },
  });
  try {
    const session = createAgentSession({
      host: createNodeHost({ workspace: ws, approvals: { ask: async () => 'deny' } }),
      model: 'claude-sonnet-4-6',
      apiKey: 'k',
      baseURL: emu.url,
      userSkillsDir: null,
    });
    // From the first Task call's start to the last one's end: the part sub-agents take.
    let first: number | undefined;
    let last = 0;
    session.subscribe((e) => {
      if (e.type === 'tool_start' && e.name === 'Task') first ??= performance.now();
      if (e.type === 'tool_end' && e.name === 'Task') last = performance.now();
    });
    const outcome = await session.prompt('split the work');
    session.dispose();
    if (outcome.status !== 'finished') throw new Error(`run ${outcome.status}: ${outcome.error}`);
    return last - (first ?? last);
  } finally {
    await emu.close();
    fs.rmSync(ws, { recursive: true, force: true });
  }
}

export async function runSubagentBench() {
  const done: ScriptedReply = { content: [{ type: 'text', text: 'all done' }] };
  const parallel = await timeRun([{ content: Array.from({ length: N }, (_, i) => task(i)) }, done]);
  const sequential = await timeRun([...Array.from({ length: N }, (_, i) => ({ content: [task(i)] })), done]);
  return {
    sub_agents: N,
    model_reply_ms: DELAY_MS,
    parallel_ms: Math.round(parallel),
    baseline_one_per_reply_ms: Math.round(sequential),
    speedup: Number((sequential / parallel).toFixed(2)),
  };
}
