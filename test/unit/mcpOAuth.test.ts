import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startLoopbackListener } from '../../src/agent/mcp/oauthLoopback.ts';
import { KeelOAuthProvider, McpAuthRequiredError } from '../../src/agent/mcp/oauthProvider.ts';
import { createOAuthStore, oauthDir } from '../../src/agent/mcp/oauthStore.ts';
import { probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { defaultsAnswer, parseField } from '../../src/cli/mcpPrompts.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';
import { type OAuthTestServer, startOAuthTestServer } from './helpers/oauthServer.ts';

// MCP sign-in (OAuth 2.1) and elicitation answers: the pieces, then the built `keel run` against a
// local OAuth-protected MCP server — the browser step done by $BROWSER (test/conformance/browser.mjs),
// the token kept in a 0600 file under KEEL_HOME, unreadable from the command sandbox.

const BROWSER = `${process.execPath} ${path.resolve('test/conformance/browser.mjs')}`;

describe('the OAuth pieces', () => {
  test('the token file: 0600 in a 0700 folder under keelHome, keyed by URL, removed on sign-out', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-oauth-'));
    const env = { KEEL_HOME: home };
    const store = createOAuthStore('s', 'https://mcp.example.test/mcp', env);
    store.update((e) => ({ ...e, tokens: { access_token: 'secret', token_type: 'Bearer' } }));
    assert.ok(store.file.startsWith(path.join(home, 'mcp-oauth') + path.sep));
    assert.equal(fs.statSync(store.file).mode & 0o777, 0o600);
    assert.equal(fs.statSync(oauthDir(env)).mode & 0o777, 0o700);
    assert.equal(store.read()?.tokens?.access_token, 'secret');
    // Another URL's store does not see it.
    assert.equal(createOAuthStore('s', 'https://other.example.test/mcp', env).read(), undefined);
    store.clear();
    assert.equal(fs.existsSync(store.file), false);
    fs.rmSync(home, { recursive: true, force: true });
  });

  test('the loopback listener takes only its own state; an error redirect is an error', async () => {
    const l = await startLoopbackListener();
    try {
      assert.match(l.redirectUrl, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
      const code = l.waitForCode('good-state', { timeoutMs: 5000 });
      const wrong = await fetch(`${l.redirectUrl}?code=evil&state=other`);
      assert.equal(wrong.status, 400);
      const right = await fetch(`${l.redirectUrl}?code=the-code&state=good-state`);
      assert.equal(right.status, 200);
      assert.equal(await code, 'the-code');
      const failing = l.waitForCode('s2', { timeoutMs: 5000 });
      const refused = assert.rejects(failing, /access_denied/);
      await fetch(`${l.redirectUrl}?error=access_denied&state=s2`);
      await refused;
    } finally {
      await l.close();
    }
  });

  test('no human to consent: no browser, an error naming the server and the URL', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-oauth-'));
    const provider = new KeelOAuthProvider({
      server: 'linear',
      url: 'https://mcp.example.test/mcp',
      store: createOAuthStore('linear', 'https://mcp.example.test/mcp', { KEEL_HOME: home }),
      authorize: async () => false,
    });
    await provider.prepare();
    try {
      const url = new URL('https://auth.example.test/authorize?state=x&client_id=c');
      await assert.rejects(provider.redirectToAuthorization(url), (e: unknown) => {
        assert.ok(e instanceof McpAuthRequiredError);
        assert.match(e.message, /"linear" needs you to sign in/);
        assert.ok(e.message.includes(url.href));
        return true;
      });
      assert.equal(provider.takePendingCode(), undefined);
    } finally {
      await provider.dispose();
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  test('elicitation answers: defaults only when they cover every required field; typed input', () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', default: 'Ada' }, age: { type: 'integer' } },
      required: ['name'],
    };
    assert.deepEqual(defaultsAnswer(schema), { name: 'Ada' });
    assert.equal(defaultsAnswer({ ...schema, required: ['name', 'age'] }), undefined);
    assert.equal(parseField({ type: 'integer' }, '42'), 42);
    assert.ok(parseField({ type: 'integer' }, '4.2') instanceof Error);
    assert.equal(parseField({ type: 'boolean' }, 'yes'), true);
    assert.ok(parseField({ type: 'string', enum: ['a', 'b'] }, 'c') instanceof Error);
  });
});

describe('keel run against an OAuth-protected MCP server', () => {
  let emu: Emulator;
  let srv: OAuthTestServer;
  let home: string;
  before(async () => {
    emu = await startEmulator({});
    srv = await startOAuthTestServer();
    home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-oauth-home-')));
  });
  after(async () => {
    await emu.close();
    await srv.close();
    fs.rmSync(home, { recursive: true, force: true });
  });
  const keelHome = () => path.join(home, '.keel');
  const env = (extra: Record<string, string> = {}) => cliEnv(emu.url, { HOME: home, ...extra });
  const use = (name: string, input: unknown): ScriptedReply => ({
    content: [{ type: 'tool_use', name, input }],
  });
  const config = () => {
    const file = path.join(home, 'mcp.json');
    fs.writeFileSync(file, JSON.stringify({ servers: { remote: { type: 'http', url: srv.mcpUrl } } }));
    return file;
  };
  /** What the model got back last (the tool result), without the whole request. */
  const lastMessage = () =>
    JSON.stringify((emu.requests.at(-1)?.body as { messages: unknown[] } | undefined)?.messages.at(-1));
  const callWhoami = (): ScriptedReply[] => [
    use('McpCall', { server: 'remote', tool: 'whoami', arguments: {} }),
    { content: [{ type: 'text', text: 'done' }] },
  ];

  test('--approve never: no browser, a clear error with the URL, no hang', { timeout: 60_000 }, async () => {
    const ws = tempWorkspace();
    emu.setScenario({ replies: callWhoami() });
    const run = await runKeel(
      ['run', '--workspace', ws, '--mcp-config', config(), '--approve', 'never', 'who am i'],
      env({ BROWSER: '/bin/false' }),
    );
    const out = run.stdout + run.stderr;
    assert.match(out, /needs you to sign in/);
    assert.match(out, /\/authorize\?/);
    assert.equal(srv.seen.authorize, 0, 'the authorization URL was opened without consent');
    assert.equal(
      fs.existsSync(path.join(keelHome(), 'mcp-oauth')) &&
        fs
          .readdirSync(path.join(keelHome(), 'mcp-oauth'))
          .some((f) =>
            fs.readFileSync(path.join(keelHome(), 'mcp-oauth', f), 'utf8').includes('access_token'),
          ),
      false,
    );
  });

  test('--approve all: signs in through the browser step, calls the tool, keeps the token private', {
    timeout: 60_000,
  }, async () => {
    const ws = tempWorkspace();
    emu.setScenario({ replies: callWhoami() });
    const run = await runKeel(
      ['run', '--workspace', ws, '--mcp-config', config(), '--approve', 'all', 'who am i'],
      env({ BROWSER }),
    );
    assert.equal(run.code, 0, run.stderr);
    const toolResult = lastMessage();
    assert.match(toolResult, /signed-in-as-tester/, run.stderr);
    assert.equal(srv.seen.authorize, 1);
    const files = fs.readdirSync(path.join(keelHome(), 'mcp-oauth'));
    assert.equal(files.length, 1);
    const file = path.join(keelHome(), 'mcp-oauth', files[0]!);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.ok(fs.readFileSync(file, 'utf8').includes(srv.token));
    // Never in the workspace (session log, tool output) nor in what the model saw.
    const inWorkspace = fs
      .readdirSync(ws, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .some((d) => fs.readFileSync(path.join(d.parentPath, d.name), 'utf8').includes(srv.token));
    assert.equal(inWorkspace, false, 'the token landed in the workspace');
    assert.ok(!JSON.stringify(emu.requests.map((r) => r.body)).includes(srv.token));

    // The next run uses the stored token: no browser (--approve safe: no one to consent to a sign-in,
    // the read-only tool runs).
    emu.setScenario({ replies: callWhoami() });
    const again = await runKeel(
      ['run', '--workspace', ws, '--mcp-config', config(), '--approve', 'safe', 'who am i'],
      env({ BROWSER: '/bin/false' }),
    );
    assert.equal(again.code, 0, again.stderr);
    assert.equal(srv.seen.authorize, 1);
    assert.match(lastMessage(), /signed-in-as-tester/);

    if (probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap') {
      const bash = await runKeel(
        [
          'tool',
          'Bash',
          JSON.stringify({ command: `python3 -c 'print(open("${file}").read())'` }),
          '--workspace',
          ws,
          '--approve',
          'all',
        ],
        env(),
      );
      const result = JSON.parse(bash.stdout) as { text: string; error?: { code: string } };
      assert.equal(result.error?.code, 'SANDBOX_DENIED', result.text);
      assert.ok(!bash.stdout.includes(srv.token), 'a sandboxed command read the token');
    }
  });
});
