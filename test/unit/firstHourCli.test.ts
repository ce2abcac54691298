import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { cliEnv, KEEL_BIN, runKeel, tempWorkspace } from './helpers/cli.ts';

// Issue 20, "a first hour": what a newcomer saw from the built `keel` CLI that was misleading — a demo
// that claimed success, refusals that said "you declined", errors that did not say what was wrong.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

/** The environment of a user without an API key (the demo needs none). */
function noKeyEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, KEEL_RETRY_BASE_MS: '5', ...extra };
  delete env.ANTHROPIC_API_KEY;
  delete env.ANTHROPIC_BASE_URL;
  return env;
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source text, not a template
const GREET = 'export function greet(name) {\n  return `Hello, ${name}!`;\n}\n';

describe('keel run --demo tells the truth', () => {
  test('--workspace DIR: the banner says the demo works in DIR and keeps it; a failed Read is a failed run', async () => {
    const ws = tempWorkspace({ 'notes.txt': 'mine\n' });
    const run = await runKeel(['run', '--demo', '--workspace', ws, 'explain src/greet.js'], noKeyEnv());
    assert.match(run.stderr, new RegExp(`in YOUR folder ${ws}: its edits stay there, nothing is removed`));
    assert.doesNotMatch(run.stderr, /scratch git repo|removed when the run ends/);
    assert.ok(fs.existsSync(path.join(ws, 'notes.txt')), 'the folder is still there');
    assert.match(run.stdout, /I could not read `src\/greet\.js`/);
    assert.doesNotMatch(run.stdout, /returns the greeting/, 'no explanation of a file that was never read');
    assert.match(run.stderr, /the demo did not go as scripted: Read failed \(NOT_FOUND\)/);
    assert.equal(run.code, 1);
  });

  test('an edit that did not apply makes the run fail (exit 1), not "finished"', async () => {
    // The folder has a src/greet.js, but not the demo's: the scripted Edit finds nothing to replace.
    const ws = tempWorkspace({ 'src/greet.js': GREET.replace('Hello', 'Hi') });
    const run = await runKeel(['run', '--demo', '--workspace', ws, 'add a farewell function'], noKeyEnv());
    assert.match(run.stdout, /The edit did not apply/);
    assert.match(run.stderr, /the demo did not go as scripted: Edit failed \(\w+\)/);
    assert.equal(run.code, 1);
    assert.equal(fs.readFileSync(path.join(ws, 'src/greet.js'), 'utf8'), GREET.replace('Hello', 'Hi'));
  });

  test('the demo names no real model and costs nothing', async () => {
    const run = await runKeel(['run', '--demo', '--json', 'explain src/greet.js'], noKeyEnv());
    assert.equal(run.code, 0, run.stderr);
    const calls = run.stdout
      .split('\n')
      .filter((l) => l.startsWith('{"type":"model_call"'))
      .map((l) => (JSON.parse(l) as { record: { model: string; cost_usd: number } }).record);
    assert.ok(calls.length >= 2, run.stdout.slice(0, 500));
    for (const call of calls) {
      assert.equal(call.model, 'keel-demo-emulator');
      assert.equal(call.cost_usd, 0);
    }
    assert.doesNotMatch(run.stdout, /claude-/);
  });
});

describe('approvals without a terminal', () => {
  test('are "no approval was possible", naming --approve, never "you declined"', async () => {
    // stdin is not a TTY (runKeel ignores it) and no --approve is given.
    const run = await runKeel(['run', '--demo', 'delete the build folder'], noKeyEnv());
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /No approval was possible for running: rm -r build \(nobody was asked\)/);
    assert.match(run.stderr, /no terminal to ask on.*--approve all/);
    assert.match(run.stdout, /No approval was possible for `rm -r build`/);
    assert.doesNotMatch(run.stdout, /You declined/);
  });
});

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('errors that say what is wrong', () => {
  test('an unreachable endpoint: its URL and "connection refused", said without a wall of retries', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const started = Date.now();
    // The real backoff (no KEEL_RETRY_BASE_MS): what a user waits.
    const env: NodeJS.ProcessEnv = cliEnv(url);
    delete env.KEEL_RETRY_BASE_MS;
    const run = await runKeel(['run', '--workspace', tempWorkspace(), 'hi'], env);
    const seconds = (Date.now() - started) / 1000;
    assert.equal(run.code, 1);
    assert.match(run.stderr, new RegExp(`Could not reach the model service at ${url}: connection refused`));
    assert.doesNotMatch(run.stderr, /Connection error\./);
    assert.ok(run.stderr.split(url).length - 1 <= 2, `the URL is not repeated on every line:\n${run.stderr}`);
    assert.match(run.stderr, /↻ retry 1/, 'it still retries (a server may be starting)');
    assert.ok(seconds < 10, `gave up after ${seconds} s`);
  });

  test('a read-only workspace says "read-only file system", not ENOENT', async (t) => {
    const ws = tempWorkspace({ 'a.txt': 'x\n' });
    // A read-only bind mount needs bubblewrap (root or user namespaces); chmod does not stop root.
    const wrap = (argv: string[]) => [
      '--bind',
      '/',
      '/',
      '--ro-bind',
      ws,
      ws,
      '--dev',
      '/dev',
      '--proc',
      '/proc',
      ...argv,
    ];
    const probe = spawnSync('bwrap', wrap(['touch', path.join(ws, 'probe')]), { encoding: 'utf8' });
    if (probe.error || !/Read-only file system/i.test(probe.stderr)) {
      t.skip(`no read-only bind mount here (bwrap: ${probe.error?.message ?? probe.stderr.trim()})`);
      return;
    }
    const run = spawnSync('bwrap', wrap([process.execPath, KEEL_BIN, 'run', '--workspace', ws, 'hi']), {
      env: cliEnv(emu.url),
      encoding: 'utf8',
    });
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.stderr, /read-only file system \(EROFS\)/);
    assert.doesNotMatch(run.stderr, /ENOENT/);
  });

  test('flag errors name the flag and exit 2', async () => {
    const env = cliEnv(emu.url);
    const zero = await runKeel(['restore', 'some-id', '--before-prompt', '0'], env);
    assert.equal(zero.code, 2);
    assert.match(zero.stderr, /^keel: --before-prompt must be a positive whole number/);
    const small = await runKeel(['run', '--context-window', '1000', 'hi'], env);
    assert.equal(small.code, 2);
    assert.match(small.stderr, /^keel: --context-window must be at least 16000 tokens/);
    const unknown = await runKeel(['run', '--bogus', 'hi'], env);
    assert.equal(unknown.code, 2);
    const first = unknown.stderr.split('\n')[0]!;
    assert.match(first, /^keel: unknown option --bogus /);
    assert.equal((first.match(/"/g) ?? []).length % 2, 0, `quotes are balanced: ${first}`);
    assert.equal((first.match(/'/g) ?? []).length % 2, 0, `quotes are balanced: ${first}`);
  });
});

describe('keel sessions', () => {
  test('marks a session that never got a model reply (no API key) instead of listing it as a conversation', async () => {
    const ws = tempWorkspace();
    const failed = await runKeel(['run', '--workspace', ws, 'first try'], noKeyEnv());
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /No API key/);
    emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'hello there' }] }] });
    const ok = await runKeel(['run', '--workspace', ws, 'second try'], cliEnv(emu.url));
    assert.equal(ok.code, 0, ok.stderr);
    const list = await runKeel(['sessions', '--workspace', ws], cliEnv(emu.url));
    assert.equal(list.code, 0, list.stderr);
    const lines = list.stdout.split('\n');
    assert.match(
      lines.find((l) => l.includes('first try')) ?? '',
      /\[no model reply: the run failed before any answer\]/,
    );
    assert.doesNotMatch(lines.find((l) => l.includes('second try')) ?? 'missing', /no model reply/);
    const json = await runKeel(['sessions', '--workspace', ws, '--json'], cliEnv(emu.url));
    const sessions = (JSON.parse(json.stdout) as { sessions: { title: string; replies: number }[] }).sessions;
    assert.deepEqual(
      sessions.map((s) => [s.title, s.replies]),
      [
        ['second try', 1],
        ['first try', 0],
      ],
    );
  });

  test('a session log that came with the repository is counted, never listed by its title', async () => {
    const ws = tempWorkspace();
    emu.setScenario({ replies: [{ content: [{ type: 'text', text: 'hello there' }] }] });
    const ok = await runKeel(['run', '--workspace', ws, 'my own prompt'], cliEnv(emu.url));
    assert.equal(ok.code, 0, ok.stderr);
    const dir = path.join(ws, '.keel', 'sessions');
    const own = fs.readdirSync(dir).find((n) => n.endsWith('.jsonl'))!;
    // A committed log: Keel's own format, a title chosen by whoever committed it.
    const planted = fs
      .readFileSync(path.join(dir, own), 'utf8')
      .replaceAll('my own prompt', 'PLANTED \u001b[2J title')
      .replace(/"id":"([^"]+)"/, '"id":"planted-1"');
    fs.writeFileSync(path.join(dir, 'planted-1.jsonl'), planted);
    const list = await runKeel(['sessions', '--workspace', ws], cliEnv(emu.url));
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /my own prompt/);
    assert.doesNotMatch(list.stdout, /PLANTED|planted-1/);
    assert.match(list.stdout, /1 session log in .* was not created by Keel here .*cannot be resumed/);
  });
});
