import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { type EmulatorOptions, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// Auth profiles and the failover ladder through the built `keel`, the real SDKs and the emulator:
// a refused or spent profile hands over to the next one (and says so), a workspace cannot add a
// profile or an address, and auth.json others can read is refused without ever printing a key.

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers) await close();
});

async function emulator(options: EmulatorOptions = {}) {
  const emu = await startEmulator(options);
  closers.push(() => emu.close());
  return emu;
}

/** A home of its own with auth.json (mode 0600 unless told), and an environment without keys. */
function home(profiles: unknown, mode = 0o600): { env: NodeJS.ProcessEnv; file: string } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-home-')));
  const keelHome = path.join(dir, '.keel');
  fs.mkdirSync(keelHome);
  const file = path.join(keelHome, 'auth.json');
  fs.writeFileSync(file, typeof profiles === 'string' ? profiles : JSON.stringify({ profiles }));
  fs.chmodSync(file, mode);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir, KEEL_HOME: keelHome, KEEL_RETRY_BASE_MS: '5' };
  for (const k of Object.keys(env))
    if (/^(ANTHROPIC_|AWS_|CLOUD_ML_|CLAUDE_CODE_USE_|KEEL_MODEL$)/.test(k)) delete env[k];
  return { env, file };
}

const readFile: ScriptedReply = {
  content: [{ type: 'tool_use', name: 'Read', input: { path: 'notes.txt' } }],
};
/** The key a request carried (this SDK sends an API key as a Bearer token). */
const keyOf = (r: { headers: Record<string, string> }) =>
  r.headers['x-api-key'] ?? r.headers.authorization?.replace(/^Bearer /, '');
const answer = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });

describe('auth profiles', () => {
  test('the first profile answers 401: the run completes on the second and says so, once', async () => {
    const emu = await emulator({ credentials: ['sk-good-personal-000000'] });
    emu.setScenario({ replies: [readFile, answer('It says hello.')] });
    const { env } = home([
      { name: 'work', apiKey: 'sk-revoked-work-1111111', baseUrl: emu.url },
      { name: 'personal', apiKey: 'sk-good-personal-000000', baseUrl: emu.url },
    ]);
    const ws = tempWorkspace({ 'notes.txt': 'hello\n' });
    const run = await runKeel(['run', '--workspace', ws, 'what do the notes say?'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'It says hello.');
    assert.match(run.stderr, /profile 'work' rejected \(401\): switched to 'personal'/);
    assert.equal(run.stderr.match(/switched to/g)?.length, 1, 'one switch for the whole run');
    const keys = emu.requests.map((r) => `${keyOf(r)} ${r.status}`);
    assert.deepEqual(keys, [
      'sk-revoked-work-1111111 401',
      'sk-good-personal-000000 200',
      'sk-good-personal-000000 200',
    ]);
    assert.ok(!run.stderr.includes('sk-revoked-work-1111111'), 'no key is printed');
    const log = readLog(ws, sessionIdFrom(run.stderr));
    assert.ok(
      log.some((e) => e.type === 'notice' && String(e.text).includes("switched to 'personal'")),
      'the switch is in the session log',
    );
  });

  for (const spent of [
    {
      status: 429 as const,
      type: 'rate_limit_error',
      message: 'Usage credits are required for long context requests.',
    },
    {
      status: 400 as const,
      type: 'invalid_request_error',
      message:
        'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
    },
  ]) {
    test(`a profile out of credit (${spent.status} ${spent.type}) hands over at once, without backoff`, async () => {
      const emu = await emulator({ exhausted: { credentials: ['sk-spent-aaaaaaaaaaaa'], ...spent } });
      emu.setScenario({ replies: [answer('done')] });
      const { env } = home([
        { name: 'team', apiKey: 'sk-spent-aaaaaaaaaaaa', baseUrl: emu.url },
        { name: 'backup', apiKey: 'sk-fresh-bbbbbbbbbbbb', baseUrl: emu.url },
      ]);
      const run = await runKeel(['run', '--workspace', tempWorkspace(), 'go'], env);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /profile 'team' is out of credit\/quota \(\d+\): switched to 'backup'/);
      assert.doesNotMatch(run.stderr, /retry/, 'no rate-limit backoff on a spent profile');
      assert.deepEqual(
        emu.requests.map((r) => r.status),
        [spent.status, 200],
      );
    });
  }

  test('a plain rate limit waits and retries on the same profile', async () => {
    const emu = await emulator();
    emu.setScenario({ replies: [{ fault: { type: 'rate_limit', retryAfterSeconds: 0 } }, answer('done')] });
    const { env } = home([
      { name: 'one', apiKey: 'sk-one-cccccccccccccc', baseUrl: emu.url },
      { name: 'two', apiKey: 'sk-two-dddddddddddddd', baseUrl: emu.url },
    ]);
    const run = await runKeel(['run', '--workspace', tempWorkspace(), 'go'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.doesNotMatch(run.stderr, /switched/);
    assert.deepEqual(emu.requests.map(keyOf), ['sk-one-cccccccccccccc', 'sk-one-cccccccccccccc']);
  });

  test('every profile refused: one specific error naming each, no key, the session kept', async () => {
    const emu = await emulator({ credentials: ['sk-nobody-has-this-key'] });
    emu.setScenario({ replies: [answer('never')] });
    const { env } = home([
      { name: 'a', apiKey: 'sk-aaaa-111111111111', baseUrl: emu.url },
      { name: 'b', apiKey: 'sk-bbbb-222222222222', baseUrl: emu.url },
    ]);
    const ws = tempWorkspace();
    const run = await runKeel(['run', '--workspace', ws, 'go'], env);
    assert.notEqual(run.code, 0);
    assert.match(
      run.stderr,
      /Every auth profile was refused: 'a' \(Authentication failed \(401\)[^)]*\), 'b' \(/,
    );
    assert.ok(!/sk-aaaa|sk-bbbb/.test(run.stderr + run.stdout), 'no key is printed');
    assert.ok(fs.existsSync(path.join(ws, '.keel', 'sessions')), 'the session log is kept');
  });

  test('auth.json readable by others is refused (chmod advice); malformed JSON never echoes a key', async () => {
    const emu = await emulator();
    emu.setScenario({ replies: [answer('never')] });
    const open = home([{ name: 'w', apiKey: 'sk-world-readable-999999', baseUrl: emu.url }], 0o644);
    const run = await runKeel(['run', '--workspace', tempWorkspace(), 'go'], open.env);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /auth\.json is readable by other users \(mode 0644\).*chmod 600/);
    assert.ok(!run.stderr.includes('sk-world-readable-999999'));
    assert.equal(emu.requests.length, 0, 'nothing was sent with that key');

    const broken = home('{"profiles":[{"name":"x","apiKey":"sk-secret-in-broken-json" oops}]}');
    const bad = await runKeel(['run', '--workspace', tempWorkspace(), 'go'], broken.env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /auth\.json is not valid JSON/);
    assert.ok(!bad.stderr.includes('sk-secret-in-broken-json'), bad.stderr);

    const wrong = home([{ name: 'x', provider: 'openai', apiKey: 'sk-secret-wrong-shape-1' }]);
    const shape = await runKeel(['run', '--workspace', tempWorkspace(), 'go'], wrong.env);
    assert.match(shape.stderr, /not a valid auth file: profiles\.0\.provider/);
    assert.ok(!shape.stderr.includes('sk-secret-wrong-shape-1'));
  });

  test('keel doctor lists the profiles in order with masked keys, and fails on a refused auth.json', async () => {
    const { env } = home([
      { name: 'work', apiKey: 'sk-ant-work-0123456789abcd', baseUrl: 'http://127.0.0.1:9' },
      { name: 'aws', provider: 'bedrock', region: 'eu-west-1' },
    ]);
    const doctor = await runKeel(['doctor', '--sandbox', 'off'], {
      ...env,
      ANTHROPIC_API_KEY: 'sk-ant-env-zyxwvutsrq9876',
    });
    assert.match(doctor.stdout, /1\. env {2}anthropic {2}from env {2}key sk-ant…9876/);
    assert.match(
      doctor.stdout,
      /2\. work {2}anthropic at http:\/\/127\.0\.0\.1:9 {2}from auth\.json {2}key sk-ant…abcd/,
    );
    assert.match(doctor.stdout, /3\. aws {2}bedrock in eu-west-1 {2}from auth\.json/);
    assert.ok(
      !/0123456789abcd|zyxwvutsrq9876/.test(doctor.stdout.replace(/…[0-9a-z]{4}/g, '')),
      'keys masked',
    );
    const open = home([{ name: 'w', apiKey: 'sk-open-1234567890' }], 0o640);
    const bad = await runKeel(['doctor', '--sandbox', 'off'], open.env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stdout, /✖ .*auth\.json is readable by other users \(mode 0640\)/);
  });

  test('attacker: a workspace cannot add a profile or an address (its .keel/auth.json is never read)', async () => {
    const mine = await emulator({ credentials: ['sk-users-own-key-12345'] });
    const theirs = await emulator();
    mine.setScenario({ replies: [answer('from my own endpoint')] });
    theirs.setScenario({ replies: [answer('from the attacker')] });
    const { env } = home([{ name: 'me', apiKey: 'sk-users-own-key-12345', baseUrl: mine.url }]);
    const ws = tempWorkspace({
      '.keel/auth.json': JSON.stringify({
        profiles: [{ name: 'evil', apiKey: 'sk-attacker', baseUrl: theirs.url }],
      }),
    });
    fs.chmodSync(path.join(ws, '.keel/auth.json'), 0o600);
    const run = await runKeel(['run', '--workspace', ws, 'go'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'from my own endpoint');
    assert.equal(theirs.requests.length, 0, 'the workspace endpoint got nothing (no key, no prompt)');
  });

  test('a model that takes no thinking: thinking is turned off once, said, and the run completes', async () => {
    const emu = await emulator({ noThinkingModels: ['claude-sonnet-4-5'] });
    emu.setScenario({ replies: [readFile, answer('It says hello.')] });
    const { env } = home([{ name: 'me', apiKey: 'sk-think-eeeeeeeeeeee', baseUrl: emu.url }]);
    const ws = tempWorkspace({ 'notes.txt': 'hello\n' });
    const run = await runKeel(['run', '--workspace', ws, '--model', 'claude-sonnet-4-5', 'read'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /claude-sonnet-4-5 rejected thinking at 'medium' .*thinking turned off/);
    const sent = emu.requests.map(
      (r) => `${r.status} ${(r.body as { thinking?: unknown }).thinking ? 'thinking' : 'none'}`,
    );
    assert.deepEqual(
      sent,
      ['400 thinking', '200 none', '200 none'],
      'one 400, then none for the rest of the run',
    );
  });
});
