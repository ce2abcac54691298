import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import {
  cliEnv,
  KEEL_BIN,
  processesWith,
  readLog,
  runKeel,
  sessionIdFrom,
  startKeel,
  tempWorkspace,
  waitFor,
} from './helpers/cli.ts';

// The `keel` CLI end to end: the built command, the real SDK, the emulator over HTTP.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const readReadme: ScriptedReply = {
  content: [{ type: 'tool_use', name: 'Read', input: { path: 'README.md' } }],
};
const answer = (text: string, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'text', text }],
  ...(expect ? { expect } : {}),
});

function assertLogComplete(workspace: string, id: string) {
  const entries = readLog(workspace, id);
  assert.equal(entries[0]?.type, 'session');
  const seqs = entries.slice(1).map((e) => e.seq as number);
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
    'seq is monotonic',
  );
  assert.ok(
    entries.some((e) => e.type === 'agent_end'),
    'the run end is logged',
  );
  return entries;
}

describe('keel run', () => {
  test('completes a Read → answer loop and prints the answer', async () => {
    const ws = tempWorkspace({ 'README.md': 'The launch code is 4711.\n' });
    emu.setScenario({
      replies: [readReadme, answer('The README mentions 4711.', { toolResultContains: '4711' })],
    });
    const before = emu.requests.length;
    const run = await runKeel(['run', '--workspace', ws, 'What does the README say?'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'The README mentions 4711.');
    const mine = emu.requests.slice(before);
    assert.equal(mine.length, 2);
    assert.ok(
      mine.every((r) => r.status === 200),
      'no request was rejected by validation',
    );
    const prefix = (r: (typeof mine)[number]) => {
      const body = r.body as { system: unknown; tools: unknown };
      return JSON.stringify([body.system, body.tools]);
    };
    assert.equal(prefix(mine[0]!), prefix(mine[1]!), 'tools + system are byte-identical across calls (P1)');
    const entries = assertLogComplete(ws, sessionIdFrom(run.stderr));
    assert.ok(entries.some((e) => e.type === 'tool_end'));
    assert.ok(fs.readFileSync(path.join(ws, '.keel', '.gitignore'), 'utf8').includes('*'));
  });

  test('@file mentions become a reminder to read the file, never its content', async () => {
    const ws = tempWorkspace({ 'src/a.ts': 'export const hidden = 31337;\n' });
    emu.setScenario({
      replies: [answer('will read it', { lastUserContains: 'referenced these files' })],
    });
    const run = await runKeel(
      ['run', '--workspace', ws, 'what does @src/a.ts export? (not @nope.ts, mail me@x.io)'],
      cliEnv(emu.url),
    );
    assert.equal(run.code, 0, run.stderr);
    const sent = JSON.stringify(emu.requests.at(-1)?.body);
    assert.match(sent, /- src\/a\.ts/);
    assert.ok(!sent.includes('31337'), 'the file content is not sent');
    assert.ok(!sent.includes('- nope.ts'), 'a name that is no file is not a mention');
  });

  test('--json prints one AgentEvent per line with increasing seq', async () => {
    const ws = tempWorkspace({ 'README.md': 'hi\n' });
    emu.setScenario({ replies: [answer('hello there')] });
    const run = await runKeel(['run', '--json', '--workspace', ws, 'hi'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; seq: number });
    assert.equal(events[0]?.type, 'agent_start');
    assert.equal(events.at(-1)?.type, 'agent_end');
    assert.ok(events.some((e) => e.type === 'message_delta'));
    for (let i = 1; i < events.length; i++) assert.ok(events[i]!.seq > events[i - 1]!.seq);
  });

  test('keel sessions lists past sessions newest first with their first prompt; --resume takes the listed ID', async () => {
    const ws = tempWorkspace({ 'README.md': 'hi\n' });
    const empty = await runKeel(['sessions', '--workspace', ws], cliEnv(emu.url));
    assert.equal(empty.code, 0, empty.stderr);
    assert.match(empty.stdout, /^No sessions yet in /);
    const ids: string[] = [];
    for (const prompt of ['first question about the readme', 'second question, later']) {
      emu.setScenario({ replies: [answer(`answer to: ${prompt}`)] });
      const run = await runKeel(['run', '--workspace', ws, prompt], cliEnv(emu.url));
      assert.equal(run.code, 0, run.stderr);
      ids.push(sessionIdFrom(run.stderr));
    }
    const listed = await runKeel(['sessions', '--workspace', ws], cliEnv(emu.url));
    assert.equal(listed.code, 0, listed.stderr);
    const rows = listed.stdout.split('\n').filter((l) => /^\S+ {2}\d{4}-/.test(l));
    assert.equal(rows.length, 2, listed.stdout);
    assert.ok(rows[0]!.startsWith(`${ids[1]}  `) && rows[0]!.includes('second question, later'), rows[0]);
    assert.ok(
      rows[1]!.startsWith(`${ids[0]}  `) && rows[1]!.includes('first question about the readme'),
      rows[1],
    );
    assert.match(listed.stdout, /keel run --resume ID/);
    const json = await runKeel(['sessions', '--workspace', ws, '--json'], cliEnv(emu.url));
    const parsed = JSON.parse(json.stdout) as { sessions: { id: string; messageCount: number }[] };
    assert.deepEqual(
      parsed.sessions.map((x) => x.id),
      [ids[1], ids[0]],
    );
    assert.ok(parsed.sessions.every((x) => x.messageCount >= 2));
    emu.setScenario({ replies: [answer('resumed fine')] });
    const resumed = await runKeel(
      ['run', '--workspace', ws, '--resume', ids[0]!, 'and a follow-up'],
      cliEnv(emu.url),
    );
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /resumed fine/);
    const bad = await runKeel(['sessions', 'extra'], cliEnv(emu.url));
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /keel sessions takes no arguments/);
  });

  const recoverable: [string, ScriptedReply['fault']][] = [
    ['529 overloaded', { type: 'overloaded' }],
    ['429 with retry-after', { type: 'rate_limit', retryAfterSeconds: 1 }],
    ['500', { type: 'server_error', status: 500 }],
    ['503', { type: 'server_error', status: 503 }],
    ['a mid-stream error event', { type: 'mid_stream_error', afterEvents: 5 }],
    ['a cut stream', { type: 'cut_stream', afterEvents: 5 }],
  ];
  for (const [name, fault] of recoverable) {
    test(`recovers from ${name}`, async () => {
      const ws = tempWorkspace({ 'README.md': 'x\n' });
      emu.setScenario({
        replies: [
          { fault, content: [{ type: 'text', text: 'partial words that must be discarded' }] },
          answer('recovered'),
        ],
      });
      const run = await runKeel(['run', '--workspace', ws, 'go'], cliEnv(emu.url));
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout.trim(), 'recovered');
      const entries = assertLogComplete(ws, sessionIdFrom(run.stderr));
      const retry = entries.find((e) => e.type === 'retry');
      assert.ok(retry, 'the retry is logged');
      if (fault?.type === 'rate_limit') {
        // KEEL_RETRY_BASE_MS is 5 ms here: only the server's retry-after can make the wait 1 s.
        assert.ok((retry.delayMs as number) >= 1000, `waited ${retry.delayMs} ms, honouring retry-after`);
      }
      if (fault?.type === 'mid_stream_error' || fault?.type === 'cut_stream') {
        assert.ok(
          entries.some((e) => e.type === 'discarded'),
          'the partial reply is kept in the log, marked',
        );
        const sentToModel = JSON.stringify(emu.requests.at(-1)?.body);
        assert.ok(!sentToModel.includes('must be discarded'), 'a discarded partial never reaches the model');
      }
    });
  }

  test('invalid tool JSON from the model becomes INVALID_PARAM the model can correct', async () => {
    const ws = tempWorkspace({ 'README.md': 'x\n' });
    emu.setScenario({
      replies: [
        {
          fault: { type: 'invalid_tool_json' },
          content: [{ type: 'tool_use', name: 'Read', input: { path: 'README.md' } }],
        },
        answer('corrected', { toolResultIsError: true, toolResultContains: 'INVALID_PARAM' }),
      ],
    });
    const run = await runKeel(['run', '--workspace', ws, 'go'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'corrected');
  });

  test('retries exhausted end in a clean, explained failure (exit 1)', async () => {
    const ws = tempWorkspace();
    emu.setScenario({
      replies: Array.from({ length: 10 }, () => ({ fault: { type: 'overloaded' as const } })),
    });
    const run = await runKeel(['run', '--workspace', ws, 'go'], cliEnv(emu.url));
    assert.equal(run.code, 1);
    assert.match(run.stderr, /kept failing/);
    assert.match(run.stderr, /Overloaded \(529\)/);
    assertLogComplete(ws, sessionIdFrom(run.stderr));
  });

  test('falls back to --fallback-model when the primary keeps failing', async () => {
    const ws = tempWorkspace();
    emu.setScenario({
      replies: [{ model: 'backup-model', content: [{ type: 'text', text: 'from the backup' }] }],
    });
    const run = await runKeel(
      ['run', '--workspace', ws, '--model', 'main-model', '--fallback-model', 'backup-model', 'go'],
      cliEnv(emu.url),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'from the backup');
  });

  test('prompt too long fails clearly when compaction cannot help', async () => {
    const ws = tempWorkspace();
    emu.setScenario({
      replies: Array.from({ length: 6 }, () => ({ fault: { type: 'prompt_too_long' as const } })),
    });
    const run = await runKeel(['run', '--workspace', ws, 'go'], cliEnv(emu.url));
    assert.equal(run.code, 1);
    assert.match(run.stderr, /context window/);
    assertLogComplete(ws, sessionIdFrom(run.stderr));
  });

  test('Ctrl-C during a slow stream exits 130 at once (not after the 30 s stream) with the log intact', async () => {
    const ws = tempWorkspace();
    emu.setScenario({
      replies: [{ fault: { type: 'slow', delayMs: 30_000 }, content: [{ type: 'text', text: 'late' }] }],
    });
    const before = emu.requests.length;
    const child = startKeel(['run', '--workspace', ws, 'go'], cliEnv(emu.url));
    await waitFor(() => emu.requests.length > before, 10_000, 'the model request');
    const t0 = Date.now();
    child.kill('SIGINT');
    const run = await child.result;
    assert.equal(run.code, 130, run.stderr);
    assert.ok(Date.now() - t0 < 10_000, `exited in ${Date.now() - t0} ms`);
    const entries = assertLogComplete(ws, sessionIdFrom(run.stderr));
    assert.equal(entries.at(-1)?.status, 'aborted');
  });

  // Ctrl-C and a supervisor's SIGTERM end a run the same way: the command's whole process tree is
  // stopped, the sandbox folder removed, the log closed with the run aborted.
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    test(`${signal} while a command runs: exit ${code}, the command tree stopped, the sandbox folder removed`, async () => {
      const ws = tempWorkspace();
      // The child's temp dir is ours: whatever keel leaves behind in it shows.
      const tmp = tempWorkspace();
      const marker = `${300 + Math.floor(Math.random() * 600)}.${process.pid}`;
      emu.setScenario({
        replies: [
          {
            content: [
              {
                type: 'tool_use',
                name: 'Bash',
                input: { command: `sleep ${marker} & sleep ${marker}; wait` },
              },
            ],
          },
          answer('never'),
        ],
      });
      const child = startKeel(['run', '--workspace', ws, 'go'], cliEnv(emu.url, { TMPDIR: tmp }));
      await waitFor(() => processesWith(`sleep ${marker}`).length >= 2, 10_000, 'the command to start');
      const t0 = Date.now();
      child.kill(signal);
      const run = await child.result;
      assert.equal(run.code, code, run.stderr);
      // It wound down on its own (not the 5 s forced exit, which says so), and not after the
      // command's minutes-long sleep.
      assert.doesNotMatch(run.stderr, /still winding down/);
      assert.ok(Date.now() - t0 < 30_000, `exited in ${Date.now() - t0} ms`);
      await waitFor(() => processesWith(`sleep ${marker}`).length === 0, 10_000, 'no process left behind');
      assert.deepEqual(fs.readdirSync(tmp), [], 'nothing left in the temp dir (the sandbox folder)');
      const entries = assertLogComplete(ws, sessionIdFrom(run.stderr));
      assert.equal(entries.at(-1)?.status, 'aborted');
    });
  }

  test('kill -9 mid-turn, then --resume continues with every prior entry', async () => {
    const ws = tempWorkspace({ 'README.md': 'resume-me\n' });
    emu.setScenario({
      replies: [
        readReadme,
        { fault: { type: 'slow', delayMs: 30_000 }, content: [{ type: 'text', text: 'x' }] },
      ],
    });
    const before = emu.requests.length;
    const child = startKeel(['run', '--workspace', ws, 'read it'], cliEnv(emu.url));
    await waitFor(() => emu.requests.length >= before + 2, 10_000, 'the second model call');
    child.kill('SIGKILL');
    const killed = await child.result;
    const id = sessionIdFrom(killed.stderr);
    const logFile = path.join(ws, '.keel', 'sessions', `${id}.jsonl`);
    // Simulate the torn write a crash can leave.
    fs.appendFileSync(logFile, '{"type":"message_appen');
    const priorLines = fs.readFileSync(logFile, 'utf8').split('\n').slice(0, -1);

    emu.setScenario({ replies: [answer('resumed fine', { lastUserContains: 'continue please' })] });
    const resumed = await runKeel(
      ['run', '--workspace', ws, '--resume', id, 'continue please'],
      cliEnv(emu.url),
    );
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(resumed.stdout.trim(), 'resumed fine');
    const after = fs.readFileSync(logFile, 'utf8').split('\n');
    assert.deepEqual(
      after.slice(0, priorLines.length),
      priorLines,
      'every prior entry is still there, unchanged',
    );
    const sent = JSON.stringify(emu.requests.at(-1)?.body);
    assert.ok(sent.includes('resume-me'), 'the earlier tool result is part of the resumed conversation');
    assert.ok(fs.existsSync(`${logFile}.torn`), 'the torn fragment is kept aside');
  });
});

describe('keel run crash recovery during a tool call', () => {
  test('kill -9 while a command runs, then --resume: the call is marked [Interrupted] and the request stays valid', async () => {
    const ws = tempWorkspace({ 'README.md': 'x\n' });
    const marker = `${300 + Math.floor(Math.random() * 600)}.${process.pid}`;
    emu.setScenario({
      replies: [{ content: [{ type: 'tool_use', name: 'Bash', input: { command: `sleep ${marker}` } }] }],
    });
    const child = startKeel(['run', '--workspace', ws, '--approve', 'all', 'wait a bit'], cliEnv(emu.url));
    await waitFor(() => processesWith(`sleep ${marker}`).length >= 1, 10_000, 'the command to start');
    child.kill('SIGKILL');
    const killed = await child.result;
    const id = sessionIdFrom(killed.stderr);
    // A SIGKILLed parent cannot take its children along; clean up the orphan this test created.
    // Sandboxed, the command's bwrap wrappers carry the marker too and die with their parent:
    // one already gone is not an error.
    for (const pid of processesWith(`sleep ${marker}`)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }

    emu.setScenario({
      replies: [
        answer('picked up again', { toolResultContains: '[Interrupted]', lastUserContains: 'carry on' }),
      ],
    });
    const before = emu.requests.length;
    const resumed = await runKeel(['run', '--workspace', ws, '--resume', id, 'carry on'], cliEnv(emu.url));
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(resumed.stdout.trim(), 'picked up again');
    const mine = emu.requests.slice(before);
    assert.ok(
      mine.every((r) => r.status === 200),
      'the resumed request pairs every tool_use with a result',
    );
    assertLogComplete(ws, id);
  });
});

describe('keel usage and guards', () => {
  test('usage errors exit 2 with a specific message', async () => {
    const env = cliEnv(emu.url);
    for (const [args, names] of [
      [['run'], /keel run needs a PROMPT/],
      [['run', '--approve', 'maybe', 'x'], /--approve takes never, safe, auto or all/],
      [['bogus'], /Unknown command: bogus/],
      [['run', '--max-turns', 'ten', 'x'], /--max-turns must be a positive whole number/],
      [['tool', 'Read'], /keel tool takes NAME/],
      [['run', '--job-wait', 'soon', 'x'], /--job-wait must be a whole number of seconds/],
    ] as const) {
      const run = await runKeel([...args], env);
      assert.equal(run.code, 2, `${args.join(' ')} → ${run.code}`);
      assert.match(run.stderr, names);
    }
  });

  test('keel --version prints the version of the package it runs from', async () => {
    const { version } = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V', 'version']) {
      const run = await runKeel([flag], cliEnv(emu.url));
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, `keel ${version}\n`);
    }
    const extra = await runKeel(['--version', 'now'], cliEnv(emu.url));
    assert.equal(extra.code, 2);
    assert.match(extra.stderr, /keel --version takes no arguments/);
  });

  test('a flag of another command is refused by keel run, naming the flag, before any request', async () => {
    const before = emu.requests.length;
    const run = await runKeel(['run', '--workspace', tempWorkspace(), '--undo', 'fix it'], cliEnv(emu.url));
    assert.equal(run.code, 2);
    assert.match(run.stderr, /keel run does not take --undo/);
    assert.equal(emu.requests.length, before, 'nothing was sent to the model');
  });

  test('refuses a context window under 16K tokens as a usage error (exit 2), before any request', async () => {
    const before = emu.requests.length;
    const run = await runKeel(
      ['run', '--workspace', tempWorkspace(), '--context-window', '8000', 'x'],
      cliEnv(emu.url),
    );
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--context-window must be at least 16000 tokens/);
    assert.equal(emu.requests.length, before, 'nothing was sent to the model');
  });

  test('keel tool runs one tool through the guards and prints its ToolResult', async () => {
    const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
    const ok = await runKeel(['tool', 'Read', '{"path":"a.txt"}', '--workspace', ws], cliEnv(emu.url));
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).status, 'success');
    const out = await runKeel(
      ['tool', 'Read', '{"path":"../../../../etc/passwd"}', '--workspace', ws],
      cliEnv(emu.url),
    );
    assert.equal(out.code, 1);
    assert.equal(JSON.parse(out.stdout).error.code, 'OUTSIDE_WORKSPACE');
    assert.ok(!out.stdout.includes('root:'));
    const bad = await runKeel(['tool', 'Read', '{nope', '--workspace', ws], cliEnv(emu.url));
    assert.equal(bad.code, 1);
    assert.equal(JSON.parse(bad.stdout).error.code, 'INVALID_PARAM');
  });

  test('keel trace prints metrics for a session', async () => {
    const ws = tempWorkspace({ 'README.md': 'trace me\n' });
    emu.setScenario({ replies: [readReadme, answer('done')] });
    const run = await runKeel(['run', '--workspace', ws, 'go'], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    const trace = await runKeel(['trace', sessionIdFrom(run.stderr), '--workspace', ws], cliEnv(emu.url));
    assert.equal(trace.code, 0, trace.stderr);
    const metrics = JSON.parse(trace.stdout);
    assert.equal(metrics.turns, 2);
    assert.equal(metrics.tool_calls.Read.success, 1);
    assert.equal(typeof metrics.cache_hit_ratio, 'number');
    assert.equal(typeof metrics.prefix_stability_ratio, 'number');
  });

  test('--demo needs no API key, says loudly that it is a demo, and cleans up its workspace', async () => {
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    delete env.ANTHROPIC_BASE_URL;
    const run = await runKeel(['run', '--demo'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /DEMO MODE/);
    assert.match(run.stdout, /That was the tour/);
    assert.match(run.stdout, /scripted by the bundled emulator/);
    const workspace = /scratch git repo (\S+)/.exec(run.stderr)?.[1];
    assert.ok(workspace, run.stderr);
    assert.equal(fs.existsSync(workspace), false, 'the scratch workspace is removed when the run ends');
  });

  test('--demo "add a farewell function" reads, edits, runs the tests and prints the diff', async () => {
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    const run = await runKeel(['run', '--demo', 'add a farewell function'], env);
    assert.equal(run.code, 0, run.stderr);
    const tools = [...run.stderr.matchAll(/^▸ (\w+)/gm)].map((m) => m[1]);
    assert.deepEqual(tools, ['Read', 'Edit', 'Bash']);
    assert.doesNotMatch(run.stderr, /DENIED|ignored by git/);
    assert.match(run.stdout, /the tests pass/);
    assert.match(run.stdout, /^\+export function farewell\(name\) \{$/m);
    assert.match(run.stdout, /^\+\+\+ b\/src\/greet\.js$/m);
  });

  test('--demo "delete the build folder" under --approve never: nothing ran, nobody was asked, --approve named', async () => {
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    const run = await runKeel(['run', '--demo', '--approve', 'never', 'delete the build folder'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /▸ Bash \{"command":"rm -r build"\}\n\s+error DENIED_BY_USER/);
    assert.match(
      run.stderr,
      /No approval was possible for running: rm -r build \(nobody was asked\): --approve never/,
    );
    assert.match(run.stdout, /No approval was possible for `rm -r build`.*so nothing ran/);
    assert.match(run.stdout, /--approve all/);
    assert.doesNotMatch(run.stdout, /You declined/);
  });

  test('a closed stdout (`keel run --demo --json | head -n 1`) ends keel quietly with exit 0', async () => {
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    const child = spawn(
      'bash',
      ['-c', `set -o pipefail; "${process.execPath}" "${KEEL_BIN}" run --demo --json | head -n 1`],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
    });
    child.stderr.on('data', (c) => {
      stderr += c;
    });
    const [code] = await once(child, 'close');
    assert.equal(code, 0, stderr);
    assert.equal(JSON.parse(stdout.trim()).type, 'agent_start');
    assert.doesNotMatch(stderr, /EPIPE|Error:/);
    const workspace = /scratch git repo (\S+)/.exec(stderr)?.[1];
    assert.ok(workspace && !fs.existsSync(workspace), 'the demo workspace is removed after an EPIPE too');
  });

  test('a closed stderr (`keel run --demo 2>&1 | head -n 2`) does not crash keel before its clean-up', async () => {
    // The scratch repo's name is cut off with the rest of stderr: look for it in a temp dir of our own.
    const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-cli-stderr-')));
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp };
    delete env.ANTHROPIC_API_KEY;
    try {
      const child = spawn(
        'bash',
        ['-c', `set -o pipefail; "${process.execPath}" "${KEEL_BIN}" run --demo 2>&1 | head -n 2`],
        { env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let output = '';
      child.stdout.on('data', (c) => {
        output += c;
      });
      const [code] = await once(child, 'close');
      assert.match(output, /DEMO MODE/);
      assert.equal(code, 0, 'quiet exit once the reader has gone');
      assert.deepEqual(
        fs.readdirSync(tmp).filter((name) => name.startsWith('keel-')),
        [],
        'the scratch repo and the sandbox temp dir were removed',
      );
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('keel tool', () => {
  test('a file named .keel in the way is named, with what to do, instead of a bare errno', async () => {
    const ws = tempWorkspace({ '.keel': 'not a folder\n' });
    const run = await runKeel(['tool', 'LS', '{}', '--workspace', ws], cliEnv(emu.url));
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /keeps its session logs, checkpoints and audit log in .*\.keel, but a file of that name is in the way/,
    );
    assert.doesNotMatch(run.stderr, /EEXIST|ENOTDIR|\n\s+at /, 'no errno, no stack trace');
    assert.equal(fs.readFileSync(path.join(ws, '.keel'), 'utf8'), 'not a folder\n', 'the file is untouched');
  });

  test('SIGTERM stops the command keel tool Bash runs, even outside the sandbox', async () => {
    const ws = tempWorkspace();
    const marker = `${300 + Math.floor(Math.random() * 600)}.${process.pid}`;
    // Not `sleep MARKER` in keel's own argv: only the command's process may match it.
    const child = startKeel(
      [
        'tool',
        'Bash',
        JSON.stringify({ command: `S=${marker}; sleep $S` }),
        '--workspace',
        ws,
        '--sandbox',
        'off',
      ],
      cliEnv(emu.url),
    );
    await waitFor(() => processesWith(`sleep ${marker}`).length > 0, 10_000, 'the command to start');
    child.kill('SIGTERM');
    const run = await child.result;
    assert.match(run.stdout, /"code":"ABORTED"/);
    await waitFor(() => processesWith(`sleep ${marker}`).length === 0, 10_000, 'no process left behind');
  });

  test('without arguments lists the tools a session offers, one per line', async () => {
    const ws = tempWorkspace({});
    const run = await runKeel(['tool', '--workspace', ws], cliEnv(emu.url));
    assert.equal(run.code, 0, run.stderr);
    const names = run.stdout
      .split('\n')
      .map((l) => /^(\w+)\s{2,}\S/.exec(l)?.[1])
      .filter(Boolean);
    for (const name of ['Bash', 'Edit', 'Read', 'Write', 'Grep']) assert.ok(names.includes(name), run.stdout);
    assert.match(run.stdout, /keel tool NAME 'JSON-INPUT'/);
  });
});
