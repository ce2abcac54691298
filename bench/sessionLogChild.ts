// One measurement of bench/sessionLog.ts in a fresh process, so its peak RSS is its own.
// argv: MODE FILE-OR-WORKSPACE [SESSION-ID]. Prints one JSON line {ms, maxRssMb, ...}.
import * as fs from 'node:fs';
import { loadSession } from '../src/agent/session/log.ts';

const [mode, target, sessionId] = process.argv.slice(2);
const mb = (kb: number) => Math.round(kb / 102.4) / 10;
const t0 = performance.now();
const extra: Record<string, unknown> = {};
switch (mode) {
  case 'idle':
    break;
  case 'readFile': {
    extra.chars = fs.readFileSync(target!, 'utf8').length;
    break;
  }
  case 'readAndParse': {
    const lines = fs.readFileSync(target!, 'utf8').split('\n').filter(Boolean);
    extra.records = lines.map((l) => JSON.parse(l) as unknown).length;
    break;
  }
  case 'loadSession': {
    const loaded = loadSession(target!);
    extra.events = loaded.events.length;
    extra.messages = loaded.messages.length;
    break;
  }
  case 'resume': {
    // `keel run --resume ID` and the panel's reopen: the real session built from the log, then the
    // snapshot the panel is sent (every event).
    const { createNodeHost } = await import('../src/agent/node/nodeHost.ts');
    const { createPolicyApprovals } = await import('../src/agent/safety/approvals.ts');
    const { createAgentSession } = await import('../src/agent/session/session.ts');
    const t1 = performance.now();
    const host = createNodeHost({ workspace: target!, approvals: createPolicyApprovals('never') });
    const session = createAgentSession({
      host,
      model: 'claude-sonnet-4-6',
      apiKey: 'bench',
      resumeId: sessionId!,
      userSkillsDir: null,
      userMemoryFile: null,
      checkpoints: false,
    });
    extra.messages = session.messages.length;
    extra.snapshotEvents = session.eventsSince(0).length;
    session.dispose();
    extra.importMs = Math.round(t1 - t0);
    extra.buildMs = Math.round(performance.now() - t1);
    break;
  }
  default:
    throw new Error(`unknown mode ${mode}`);
}
const ms = performance.now() - t0;
console.log(JSON.stringify({ ms: Math.round(ms), maxRssMb: mb(process.resourceUsage().maxRSS), ...extra }));
