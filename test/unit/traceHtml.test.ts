import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { rgPath } from '@vscode/ripgrep';
import { chromium } from 'playwright-core';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { loadSession } from '../../src/agent/session/log.ts';
import { createAgentSession } from '../../src/agent/session/session.ts';
import { buildTrace } from '../../src/agent/trace/html.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// `keel trace --html` of a 100-call session whose prefix changes after call 60 (AGENTS.md edited,
// session resumed), opened from disk in Debian's Chromium with every network request refused.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HOSTILE = '</script><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';

let emu: Emulator;
let workspace: string;
let sessionId: string;
let logPath: string;

const reads = (from: number, count: number): ScriptedReply[] =>
  Array.from({ length: count }, (_, i) => ({
    content: [{ type: 'tool_use' as const, name: 'Read', input: { path: `f${from + i}.txt` } }],
  }));

function open(resumeId?: string) {
  const host = createNodeHost({ workspace, approvals: createPolicyApprovals('never'), ripgrepPath: rgPath });
  return createAgentSession({
    host,
    model: 'claude-sonnet-4-6',
    apiKey: 'k',
    baseURL: emu.url,
    userSkillsDir: null,
    maxTurns: 100,
    ...(resumeId ? { resumeId } : {}),
  });
}

before(async () => {
  emu = await startEmulator({});
  const files: Record<string, string> = {};
  for (let i = 0; i < 100; i++) files[`f${i}.txt`] = `file ${i}\n`;
  files['f0.txt'] = `${'long line of output\n'.repeat(600)}`;
  files['f1.txt'] = `${HOSTILE}\n`;
  workspace = tempWorkspace(files);
  emu.setScenario({ replies: [...reads(0, 59), { content: [{ type: 'text', text: 'first half done' }] }] });
  const first = open();
  assert.equal((await first.prompt('read sixty files')).status, 'finished');
  sessionId = first.id;
  logPath = first.logPath;
  fs.writeFileSync(path.join(workspace, 'AGENTS.md'), '# Rules\nNew project rule added mid-way.\n');
  emu.setScenario({ replies: [...reads(59, 39), { content: [{ type: 'text', text: 'all done' }] }] });
  const second = open(sessionId);
  assert.equal((await second.prompt('read the rest')).status, 'finished');
});
after(async () => {
  await emu.close();
});

test('the trace model holds every call with tokens and prefix hash, and marks the one call whose prefix changed', async () => {
  const data = await buildTrace(logPath);
  const calls = data.rows.flatMap((r) => (r.k === 'call' ? [r] : []));
  assert.equal(calls.length, 100);
  assert.equal(data.prefixes.length, 2);
  const changed = calls.filter((c) => c.prefixChanged).map((c) => c.n);
  assert.deepEqual(changed, [61]);
  assert.equal(calls[60]!.prefixHash, data.prefixes[1]!.hash);
  assert.equal(calls[0]!.prefixHash, data.prefixes[0]!.hash);
  assert.match(data.prefixes[1]!.system, /New project rule added mid-way/);
  // The second call's additions: the first reply and the Read result it asked for.
  assert.deepEqual(
    calls[1]!.added.map((a) => a.label),
    ['assistant reply', 'tool_result Read'],
  );
  const loaded = loadSession(logPath);
  const inputs = loaded.events.flatMap((e) => (e.type === 'model_call' ? [e.record.input] : []));
  assert.deepEqual(
    calls.map((c) => c.input),
    inputs,
  );
  const bigRead = data.rows.find((r) => r.k === 'tool' && r.input.includes('"f0.txt"'));
  assert.ok(bigRead?.k === 'tool' && /characters cut here/.test(bigRead.text), 'long results are clipped');
});

test('keel trace --html opens offline in Chromium: 100 calls, tokens, prefix hashes, the change marked; screenshot', {
  skip: fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}`,
}, async () => {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-trace-')), 'trace.html');
  const run = await runKeel(['trace', sessionId, '--workspace', workspace, '--html', out], cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  const html = fs.readFileSync(out, 'utf8');
  assert.doesNotMatch(html, /(?:src|href)=["']?https?:/i, 'nothing loads from the network');
  assert.ok(!html.includes(HOSTILE), 'tool output is never raw markup in the page');

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const foreign: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith('file:')) foreign.push(r.url());
    });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.route(/^(?!file:)/, (route) => route.abort());
    await page.goto(pathToFileURL(out).href);
    await page.waitForSelector('.row.call');
    // Lazy rendering: scroll until the last batch is in.
    for (let i = 0; i < 20; i++) {
      const more = await page.textContent('#more');
      if (more?.startsWith('End of trace')) break;
      await page.evaluate(() => document.getElementById('more')?.scrollIntoView());
      await page.waitForTimeout(50);
    }
    assert.match((await page.textContent('#more')) ?? '', /^End of trace/);
    const calls = await page.$$eval('.row.call', (rows) =>
      rows.map((r) => ({
        text: r.textContent ?? '',
        hash: r.querySelector('.prefix-hash .num')?.textContent ?? '',
        changed: r.querySelector('.badge')?.textContent ?? '',
      })),
    );
    assert.equal(calls.length, 100);
    const data = await buildTrace(logPath);
    const [p1, p2] = data.prefixes;
    for (const [i, call] of calls.entries()) {
      assert.match(call.text, new RegExp(`#${i + 1} model call`));
      assert.match(call.text, /input \d[\d,]*.*cache read \d[\d,]*.*cache write \d[\d,]*.*output \d/);
      assert.equal(call.hash, (i < 60 ? p1 : p2)!.hash.slice(0, 12));
      assert.equal(call.changed, i === 60 ? 'PREFIX CHANGED' : '');
    }
    assert.match((await page.textContent('#jump')) ?? '', /call #61/);
    // Collapsed parts open on demand; the hostile file content shows as text and runs nothing.
    const second = page.locator('.row.call').nth(2);
    await second.locator('summary', { hasText: 'added since the previous call' }).click();
    await second.locator('summary', { hasText: 'tool_result Read' }).click();
    assert.match((await second.locator('pre').first().textContent()) ?? '', /window.__pwned=2/);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.deepEqual(foreign, []);
    assert.deepEqual(problems, []);
    const dir = process.env.KEEL_SCREENSHOTS ?? path.dirname(out);
    fs.mkdirSync(dir, { recursive: true });
    const shot = path.join(dir, 'trace-100-calls.png');
    await page.locator('.row.call').nth(60).scrollIntoViewIfNeeded();
    await page.screenshot({ path: shot });
    assert.ok(fs.statSync(shot).size > 10_000, 'a real screenshot was written');
  } finally {
    await browser.close();
  }
});

test('compaction and pruning show as their own rows, and a torn last line is counted, not fatal', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-trace-compact-'));
  const file = path.join(dir, 's.jsonl');
  const sessionId = 's1';
  let seq = 0;
  const ev = (body: Record<string, unknown>) =>
    JSON.stringify({ ...body, sessionId, seq: ++seq, ts: 1000 + seq });
  const lines = [
    JSON.stringify({ type: 'session', version: 1, id: sessionId, createdAt: 1, model: 'm', workspace: '/w' }),
    ev({ type: 'agent_start', runId: 'r', prompt: 'go' }),
    ev({
      type: 'message_appended',
      message: {
        role: 'context_edit',
        id: 'c1',
        ts: 1,
        stage: 2,
        edits: [{ messageId: 'res_1', content: '[cleared]' }],
      },
    }),
    ev({
      type: 'message_appended',
      message: {
        role: 'summary',
        id: 'sum1',
        ts: 2,
        text: 'Decisions: keep the API.',
        replaces: ['a'],
        archivePath: '/x',
      },
    }),
    ev({ type: 'agent_end', runId: 'r', status: 'finished', finalText: '' }),
    '{"type":"tool_end","seq":',
  ];
  fs.writeFileSync(file, lines.join('\n'));
  const data = await buildTrace(file);
  const compactions = data.rows.flatMap((r) => (r.k === 'compaction' ? [r] : []));
  assert.deepEqual(
    compactions.map((r) => r.what),
    ['pruning', 'summary'],
  );
  assert.match(compactions[0]!.text, /pruning stage 2: 1 older result/);
  assert.match(compactions[1]!.text, /Decisions: keep the API/);
  assert.equal(data.tornLines, 1);
});

test('a Task call links its sub-agent: id, log and how it ended', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-trace-sub-'));
  const file = path.join(dir, 's.jsonl');
  const sessionId = 's1';
  let seq = 0;
  const ev = (body: Record<string, unknown>) =>
    JSON.stringify({ ...body, sessionId, seq: ++seq, ts: 1000 + seq });
  const result = { status: 'success', data: null, text: 'summary', stats: { time_ms: 5 } };
  fs.writeFileSync(
    file,
    `${[
      JSON.stringify({
        type: 'session',
        version: 1,
        id: sessionId,
        createdAt: 1,
        model: 'm',
        workspace: '/w',
      }),
      ev({ type: 'tool_start', toolUseId: 'toolu_1', name: 'Task', input: { description: 'find uses' } }),
      ev({
        type: 'subagent_start',
        toolUseId: 'toolu_1',
        agentId: 'sub_1',
        description: 'find uses',
        mode: 'explore',
        logPath: '.keel/sessions/s1/sub_1.jsonl',
      }),
      ev({
        type: 'subagent_end',
        toolUseId: 'toolu_1',
        agentId: 'sub_1',
        status: 'finished',
        turns: 3,
        costUsd: 0.01,
      }),
      ev({ type: 'tool_end', toolUseId: 'toolu_1', name: 'Task', result, durationMs: 5 }),
    ].join('\n')}\n`,
  );
  const data = await buildTrace(file);
  const task = data.rows.find((r) => r.k === 'tool');
  assert.ok(task?.k === 'tool');
  assert.equal(task.childLog, '.keel/sessions/s1/sub_1.jsonl');
  assert.match(task.childSession ?? '', /sub_1 \(explore: find uses\)/);
  assert.equal(task.childEnd, 'finished, 3 turn(s), $0.01');
});
