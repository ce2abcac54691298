import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { runKeel, tempWorkspace } from './helpers/cli.ts';

// Claude through Amazon Bedrock and Google Vertex AI: the built `keel`, the official platform SDKs
// (@anthropic-ai/bedrock-sdk: SigV4, event-stream framing; @anthropic-ai/vertex-sdk:
// :streamRawPredict), the emulator speaking each wire format. The same read → edit → command
// session completes through each, with thinking on and the prompt cache hit.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({ credentials: ['AKIDEXAMPLEKEEL', 'ya29.keel-test-token'] });
});
after(() => emu.close());

const session = (): ScriptedReply[] => [
  { content: [{ type: 'tool_use', name: 'Read', input: { path: 'app.txt' } }] },
  {
    expect: { toolResultContains: 'version = 1' },
    content: [
      {
        type: 'tool_use',
        name: 'Edit',
        input: { path: 'app.txt', old_string: 'version = 1', new_string: 'version = 2' },
      },
    ],
  },
  {
    content: [{ type: 'tool_use', name: 'Bash', input: { command: 'expr 40 + 2' } }],
  },
  { expect: { toolResultContains: '42' }, content: [{ type: 'text', text: 'Bumped to version 2.' }] },
];

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-home-')));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: dir,
    KEEL_HOME: path.join(dir, '.keel'),
    KEEL_RETRY_BASE_MS: '5',
  };
  for (const k of Object.keys(env))
    if (/^(ANTHROPIC_|AWS_|CLOUD_ML_|CLAUDE_CODE_|GOOGLE_|KEEL_MODEL$)/.test(k)) delete env[k];
  return { ...env, ...extra };
}

async function runSession(args: string[], env: NodeJS.ProcessEnv) {
  const ws = tempWorkspace({ 'app.txt': 'name = demo\nversion = 1\n' });
  emu.setScenario({ replies: session() });
  const before = emu.requests.length;
  const run = await runKeel(['run', '--workspace', ws, '--approve', 'all', ...args, 'bump the version'], env);
  const mine = emu.requests.slice(before);
  return { run, mine, ws };
}

describe('providers', () => {
  test('Bedrock (--model bedrock:…, AWS env): SigV4-signed, event-stream answered, the session completes', async () => {
    const { run, mine, ws } = await runSession(
      ['--model', 'bedrock:claude-sonnet-4-5'],
      cleanEnv({
        AWS_REGION: 'us-west-2',
        AWS_ACCESS_KEY_ID: 'AKIDEXAMPLEKEEL',
        AWS_SECRET_ACCESS_KEY: 'keel-test-secret-not-real',
        ANTHROPIC_BEDROCK_BASE_URL: emu.url,
      }),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'Bumped to version 2.');
    assert.equal(fs.readFileSync(path.join(ws, 'app.txt'), 'utf8'), 'name = demo\nversion = 2\n');
    assert.equal(mine.length, 4);
    for (const r of mine) {
      assert.equal(r.status, 200, JSON.stringify(r.error));
      assert.equal(r.path, '/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream');
      assert.match(
        r.headers.authorization ?? '',
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLEKEEL\/\d{8}\/us-west-2\/bedrock\//,
      );
      const body = r.body as Record<string, unknown>;
      assert.equal(body.anthropic_version, 'bedrock-2023-05-31');
      assert.ok(!('model' in body) && !('stream' in body), 'no model/stream in a Bedrock body');
      assert.equal((body.thinking as { type?: string } | undefined)?.type, 'enabled', 'thinking on');
    }
    assert.ok((mine.at(-1)?.usage?.cache_read_input_tokens ?? 0) > 0, 'the prompt cache is hit on Bedrock');
  });

  test('Vertex (--model vertex:…, CLOUD_ML_REGION, token from auth.json): :streamRawPredict, the session completes', async () => {
    const env = cleanEnv({
      CLOUD_ML_REGION: 'us-east5',
      ANTHROPIC_VERTEX_PROJECT_ID: 'keel-test-project',
      ANTHROPIC_VERTEX_BASE_URL: `${emu.url}/v1`,
    });
    fs.mkdirSync(env.KEEL_HOME!, { recursive: true });
    const auth = path.join(env.KEEL_HOME!, 'auth.json');
    fs.writeFileSync(
      auth,
      JSON.stringify({ profiles: [{ name: 'gcp', provider: 'vertex', authToken: 'ya29.keel-test-token' }] }),
      { mode: 0o600 },
    );
    const { run, mine, ws } = await runSession(['--model', 'vertex:claude-sonnet-4-5'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'Bumped to version 2.');
    assert.equal(fs.readFileSync(path.join(ws, 'app.txt'), 'utf8'), 'name = demo\nversion = 2\n');
    assert.equal(mine.length, 4);
    for (const r of mine) {
      assert.equal(r.status, 200, JSON.stringify(r.error));
      assert.equal(
        r.path,
        '/v1/projects/keel-test-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict',
      );
      assert.equal(r.headers.authorization, 'Bearer ya29.keel-test-token');
      const body = r.body as Record<string, unknown>;
      assert.equal(body.anthropic_version, 'vertex-2023-10-16');
      assert.ok(!('model' in body), 'no model in a Vertex body');
    }
    assert.ok((mine.at(-1)?.usage?.cache_read_input_tokens ?? 0) > 0, 'the prompt cache is hit on Vertex');
  });

  test('cross-provider failover: the Anthropic profile is refused, the Bedrock profile in auth.json finishes the session', async () => {
    const env = cleanEnv({
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLEKEEL',
      AWS_SECRET_ACCESS_KEY: 'keel-test-secret-not-real',
    });
    fs.mkdirSync(env.KEEL_HOME!, { recursive: true });
    fs.writeFileSync(
      path.join(env.KEEL_HOME!, 'auth.json'),
      JSON.stringify({
        profiles: [
          { name: 'direct', apiKey: 'sk-ant-revoked-0000000000', baseUrl: emu.url },
          { name: 'aws', provider: 'bedrock', region: 'us-east-1', baseUrl: emu.url },
        ],
      }),
      { mode: 0o600 },
    );
    const { run, mine, ws } = await runSession(['--model', 'claude-sonnet-4-5'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /profile 'direct' rejected \(401\): switched to 'aws'/);
    assert.equal(fs.readFileSync(path.join(ws, 'app.txt'), 'utf8'), 'name = demo\nversion = 2\n');
    assert.deepEqual(
      mine.map((r) => `${r.status} ${r.path?.startsWith('/model/') ? 'bedrock' : r.path}`),
      ['401 /v1/messages', '200 bedrock', '200 bedrock', '200 bedrock', '200 bedrock'],
    );
  });

  test('CLAUDE_CODE_USE_BEDROCK=1 routes a plain model name to Bedrock; a wrong key id is refused (403) with a clear error', async () => {
    const { run, mine } = await runSession(
      ['--model', 'claude-sonnet-4-5'],
      cleanEnv({
        CLAUDE_CODE_USE_BEDROCK: '1',
        AWS_REGION: 'eu-central-1',
        AWS_ACCESS_KEY_ID: 'AKIDNOTKNOWNHERE',
        AWS_SECRET_ACCESS_KEY: 'whatever-secret',
        ANTHROPIC_BEDROCK_BASE_URL: emu.url,
      }),
    );
    assert.notEqual(run.code, 0);
    assert.match(
      run.stderr,
      /Authentication failed \(403\): The security token included in the request is invalid/,
    );
    assert.ok(!run.stderr.includes('whatever-secret'));
    assert.equal(mine.length, 1, 'an auth failure is not retried');
    assert.match(mine[0]!.path ?? '', /^\/model\/anthropic\.claude-sonnet-4-5/);
  });
});
