import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type { AgentEvent, ModelCallRecord } from '../../src/agent/events.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { type MessagesRequest, startEmulator } from '../emulator/server.ts';

// Overflow → compaction → retry, end to end: the real session and loop, the real SDK, the emulator
// enforcing a context window smaller than the one Keel was told about.

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const RED_LINE = 'Never modify anything under vendor/ without asking me.';

function bigFile(i: number): string {
  return Array.from(
    { length: 600 },
    (_, n) => `export const v${i}_${n} = ${n}; // module ${i} padding padding`,
  ).join('\n');
}

const hasTools = (req: MessagesRequest) => (req.tools?.length ?? 0) > 0;

test('a "prompt is too long" error triggers compaction and a retry that succeeds; red lines survive', async () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-overflow-')));
  dirs.push(root);
  for (let i = 0; i < 8; i++) fs.writeFileSync(path.join(root, `mod${i}.ts`), bigFile(i));
  let step = 0;
  const emu = await startEmulator({
    contextWindow: 40_000,
    scenario: {
      respond: (req) => {
        if (!hasTools(req)) {
          return {
            content: [
              {
                type: 'text',
                text: '## Decisions\n- Read modules one by one.\n## Progress\n- Read mod0..mod4.',
              },
            ],
          };
        }
        step++;
        if (step <= 8)
          return { content: [{ type: 'tool_use', name: 'Read', input: { path: `mod${step - 1}.ts` } }] };
        return { content: [{ type: 'text', text: 'All modules reviewed.' }] };
      },
    },
  });
  try {
    const host = createNodeHost({ workspace: root, approvals: createPolicyApprovals('never') });
    const session = createAgentSession({
      host,
      model: 'claude-sonnet-4-5',
      apiKey: 'k',
      baseURL: emu.url,
      contextWindow: 200_000,
      maxTurns: 20,
    });
    const events: AgentEvent[] = [];
    session.subscribe((e) => events.push(e));
    const outcome = await session.prompt(`Review mod0.ts to mod7.ts one by one. ${RED_LINE}`);
    assert.equal(outcome.status, 'finished', outcome.error);
    assert.equal(outcome.finalText, 'All modules reviewed.');

    const tooLong = emu.requests.filter(
      (r) => r.status === 400 && /prompt is too long/.test(r.error?.message ?? ''),
    );
    assert.ok(tooLong.length >= 1, 'the window was really exceeded');
    const summaries = session.messages.filter((m) => m.role === 'summary');
    assert.ok(summaries.length >= 1, 'a compaction happened');
    const retried = emu.requests.find(
      (r) =>
        r.status === 200 &&
        r.request &&
        hasTools(r.request) &&
        JSON.stringify(r.request.messages).includes('<session-summary'),
    );
    assert.ok(retried, 'the retry carried the summary');
    assert.ok(
      JSON.stringify(retried.request!.messages).includes(RED_LINE),
      'the red line is in the summary verbatim',
    );
    const calls = events.flatMap((e) => (e.type === 'model_call' ? [e.record as ModelCallRecord] : []));
    assert.ok(
      calls.some((c) => c.stage === 3),
      'the compacted call is recorded as stage 3',
    );
    assert.equal(new Set(calls.map((c) => c.prefix_hash)).size, 1, 'tools + system never changed');
    session.dispose();
  } finally {
    await emu.close();
  }
});
