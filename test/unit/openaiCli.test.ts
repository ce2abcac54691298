import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { firstUserText } from '../emulator/scenario.ts';
import {
  type Emulator,
  type RecordedRequest,
  type ScriptedReply,
  startEmulator,
} from '../emulator/server.ts';
import { cliEnv, readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';
import { threeServers, writeJson } from './helpers/mcp.ts';

// OpenAI-compatible models through the built `keel` CLI and the real `openai` SDK, against the
// emulator's Chat Completions and Responses endpoints: the sessions the Anthropic tests script
// (read, edit, command, sub-agent, MCP) with the same scenario scripting.

let emu: Emulator;
let home: string;
before(async () => {
  emu = await startEmulator({});
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-openai-home-'));
});
after(async () => {
  await emu.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) =>
  cliEnv(emu.url, { HOME: home, OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: `${emu.url}/v1`, ...extra });
const use = (name: string, input: unknown, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
  ...(expect ? { expect } : {}),
});
const answer = (text: string, expect?: ScriptedReply['expect']): ScriptedReply => ({
  content: [{ type: 'text', text }],
  ...(expect ? { expect } : {}),
});
const since = (from: number) => emu.requests.slice(from);
type ChatBody = { model: string; messages: { role: string; content: unknown }[]; tools: unknown[] };
/** tools + the system message: what must lead every request unchanged (P1). */
const chatPrefix = (r: RecordedRequest) => {
  const b = r.body as ChatBody;
  return JSON.stringify([b.tools, b.messages[0]]);
};

describe('keel run --model openai:… (Chat Completions)', () => {
  test('read: Read → answer; tools + system lead every request byte for byte; the log names the model', async () => {
    const ws = tempWorkspace({ 'README.md': 'The launch code is 4711.\n' });
    emu.setScenario({
      replies: [
        use('Read', { path: 'README.md' }),
        answer('The README mentions 4711.', { toolResultContains: '4711' }),
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(
      ['run', '--workspace', ws, '--model', 'openai:gpt-4o', 'What does the README say?'],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'The README mentions 4711.');
    const mine = since(from);
    assert.equal(mine.length, 2);
    assert.ok(mine.every((r) => r.api === 'chat' && r.status === 200));
    assert.equal((mine[0]!.body as ChatBody).model, 'gpt-4o');
    assert.equal((mine[0]!.body as ChatBody).messages[0]!.role, 'system');
    assert.equal(chatPrefix(mine[0]!), chatPrefix(mine[1]!));
    assert.ok(
      (mine[1]!.raw ?? '').startsWith(
        (mine[0]!.raw ?? '').slice(0, (mine[0]!.raw ?? '').indexOf('"role":"user"')),
      ),
      'the second body starts with the first one’s bytes up to its first user message',
    );
    const log = readLog(ws, sessionIdFrom(run.stderr));
    const models = log.flatMap((e) =>
      e.type === 'message_appended' && (e.message as { role: string }).role === 'assistant'
        ? [(e.message as { model: string }).model]
        : [],
    );
    assert.deepEqual(models, ['openai:gpt-4o', 'openai:gpt-4o']);
  });

  test('edit and command: Read, Edit, Bash; parallel calls in one reply; results reach the model', async () => {
    const ws = tempWorkspace({ 'a.txt': 'alpha\n', 'b.txt': 'beta\n' });
    emu.setScenario({
      replies: [
        {
          content: [
            { type: 'tool_use', name: 'Read', input: { path: 'a.txt' } },
            { type: 'tool_use', name: 'Read', input: { path: 'b.txt' } },
          ],
        },
        use(
          'Edit',
          { path: 'a.txt', old_string: 'alpha', new_string: 'ALPHA' },
          { toolResultContains: 'beta' },
        ),
        use('Bash', { command: 'echo cmd-ran-$((6*7))' }, { toolResultIsError: false }),
        answer('edited', { toolResultContains: 'cmd-ran-42' }),
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(
      ['run', '--workspace', ws, '--approve', 'all', '--model', 'openai:gpt-4o', 'edit a'],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'ALPHA\n');
    const second = since(from)[1]!.body as { messages: { role: string; tool_call_id?: string }[] };
    assert.equal(second.messages.filter((m) => m.role === 'tool').length, 2, 'both parallel calls answered');
  });

  test('sub-agent on a cheaper model: --subagent-model explore=openai:… while the parent is Anthropic', async () => {
    const ws = tempWorkspace({ 'notes/secret.txt': 'launch code 7731\n' });
    emu.setScenario({
      replies: [
        use('Task', { description: 'Find the code', prompt: 'CHILD-A: find the launch code in notes/' }),
        answer('The code is 7731.', { toolResultContains: '7731' }),
      ],
      threads: [
        {
          firstUserContains: 'CHILD-A',
          replies: [
            use('Read', { path: 'notes/secret.txt' }),
            answer(
              '## Summary\nThe launch code is 7731.\n## Evidence\nnotes/secret.txt:1\n## Open questions\nNone',
              {
                toolResultContains: '7731',
              },
            ),
          ],
        },
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(
      [
        'run',
        '--workspace',
        ws,
        '--subagent-model',
        'explore=openai:gpt-4o-mini',
        'PARENT: what is the code?',
      ],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    const mine = since(from);
    const child = mine.filter((r) => r.request && firstUserText(r.request).includes('CHILD-A'));
    const parent = mine.filter((r) => r.request && firstUserText(r.request).includes('PARENT'));
    assert.deepEqual(
      child.map((r) => `${r.api}:${(r.body as ChatBody).model}`),
      ['chat:gpt-4o-mini', 'chat:gpt-4o-mini'],
    );
    assert.ok(
      parent.every((r) => r.api === undefined),
      'the parent stays on the Messages API',
    );
    assert.match(run.stderr, /sub-agent \S+ \(explore on openai:gpt-4o-mini\)/);
    const trace = await runKeel(['trace', sessionIdFrom(run.stderr), '--workspace', ws], env());
    assert.equal(trace.code, 0, trace.stderr);
    const log = readLog(ws, sessionIdFrom(run.stderr));
    const calls = log
      .filter((e) => e.type === 'model_call')
      .map((e) => e.record as { model: string; agent?: string });
    assert.deepEqual(
      calls.filter((c) => c.agent).map((c) => c.model),
      ['openai:gpt-4o-mini', 'openai:gpt-4o-mini'],
      'the trace shows the sub-agent’s model',
    );
  });

  test('MCP: McpSearch and McpCall through a real MCP server', async () => {
    const ws = tempWorkspace({ 'notes/todo.txt': 'buy milk 8812\n' });
    const config = writeJson(
      path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-oai-mcp-')), 'mcp.json'),
      threeServers({ fsRoot: path.join(ws, 'notes'), memoryFile: path.join(ws, 'm.jsonl') }),
    );
    emu.setScenario({
      replies: [
        use('McpSearch', { query: 'echo', server: 'everything' }),
        use(
          'McpCall',
          { server: 'everything', tool: 'echo', arguments: { message: 'ahoy-8812' } },
          {
            toolResultContains: 'echo',
          },
        ),
        answer('echoed', { toolResultContains: 'ahoy-8812' }),
      ],
    });
    const run = await runKeel(
      [
        'run',
        '--workspace',
        ws,
        '--mcp-config',
        config,
        '--approve',
        'all',
        '--model',
        'openai:gpt-4o',
        'echo',
      ],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'echoed');
  });

  test('a 60-call session reads ≥ 90 % of its input tokens from the automatic prefix cache', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 59; i++) files[`f${i}.txt`] = `file ${i}: ${'lorem ipsum '.repeat(20)}\n`;
    const ws = tempWorkspace(files);
    emu.setScenario({
      replies: [
        ...Array.from({ length: 59 }, (_, i) => use('Read', { path: `f${i}.txt` })),
        answer('read them all'),
      ],
    });
    const from = emu.requests.length;
    const run = await runKeel(
      ['run', '--workspace', ws, '--max-turns', '80', '--model', 'openai:gpt-4o', 'read every file'],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    const mine = since(from);
    assert.equal(mine.length, 60);
    const prompt = mine.reduce((s, r) => s + (r.openaiUsage?.prompt ?? 0), 0);
    const cached = mine.reduce((s, r) => s + (r.openaiUsage?.cached ?? 0), 0);
    const trace = JSON.parse(
      (await runKeel(['trace', sessionIdFrom(run.stderr), '--workspace', ws], env())).stdout,
    ) as {
      cache_hit_ratio: number;
      calls: number;
    };
    console.log(
      `# 60-call session: ${cached}/${prompt} input tokens cached = ${(cached / prompt).toFixed(4)}; keel trace cache_hit_ratio ${trace.cache_hit_ratio}`,
    );
    assert.equal(trace.calls, 60);
    assert.ok(cached / prompt >= 0.9, `cached share ${cached / prompt}`);
    assert.ok(
      Math.abs(trace.cache_hit_ratio - cached / prompt) < 0.001,
      'Keel’s trace reports what the server counted',
    );
  });

  test('429 with retry-after, then success: the wait honours the header', async () => {
    const ws = tempWorkspace({});
    emu.setScenario({
      replies: [{ fault: { type: 'rate_limit', retryAfterSeconds: 1 } }, answer('recovered')],
    });
    const run = await runKeel(['run', '--workspace', ws, '--model', 'openai:gpt-4o', 'go'], env());
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'recovered');
    const retry = readLog(ws, sessionIdFrom(run.stderr)).find((e) => e.type === 'retry');
    assert.ok(retry, 'the retry is logged');
    assert.ok((retry.delayMs as number) >= 1000, `waited ${retry.delayMs} ms`);
    assert.match(String(retry.reason), /Rate limited \(429\): Rate limit reached/);
  });

  test('a mid-stream error and a cut stream are retried; a partial reply never reaches the model', async () => {
    for (const fault of [
      { type: 'mid_stream_error', afterEvents: 3 },
      { type: 'cut_stream', afterEvents: 3 },
    ] as const) {
      const ws = tempWorkspace({});
      emu.setScenario({
        replies: [
          { fault, content: [{ type: 'text', text: 'partial words that must be discarded' }] },
          answer('ok'),
        ],
      });
      const run = await runKeel(['run', '--workspace', ws, '--model', 'openai:gpt-4o', 'go'], env());
      assert.equal(run.code, 0, `${fault.type}: ${run.stderr}`);
      assert.equal(run.stdout.trim(), 'ok');
    }
  });
});

describe('keel run --api responses', () => {
  test('Read → answer through the Responses API (function_call / function_call_output items)', async () => {
    const ws = tempWorkspace({ 'README.md': 'The launch code is 4711.\n' });
    emu.setScenario({
      replies: [use('Read', { path: 'README.md' }), answer('It says 4711.', { toolResultContains: '4711' })],
    });
    const from = emu.requests.length;
    const run = await runKeel(
      [
        'run',
        '--workspace',
        ws,
        '--model',
        'openai:gpt-5',
        '--api',
        'responses',
        'What does the README say?',
      ],
      env(),
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'It says 4711.');
    const mine = since(from);
    assert.deepEqual(
      mine.map((r) => `${r.api} ${r.status}`),
      ['responses 200', 'responses 200'],
    );
    const second = mine[1]!.body as { input: { type?: string }[]; instructions: string; store: boolean };
    assert.deepEqual(
      second.input.map((i) => i.type ?? 'message'),
      ['message', 'function_call', 'function_call_output'],
    );
    assert.equal(second.store, false);
    assert.equal(second.instructions, (mine[0]!.body as { instructions: string }).instructions);
  });

  test('--api responses with a model of another provider is a usage error', async () => {
    const run = await runKeel(['run', '--model', 'ollama:llama3', '--api', 'responses', 'hi'], env());
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--api responses is for an openai: model/);
  });
});

describe('providers and prefixes', () => {
  test('an unknown provider prefix and a missing key are usage errors before any request', async () => {
    const from = emu.requests.length;
    const bad = await runKeel(['run', '--model', 'opneai:gpt-4o', 'hi'], env());
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /Unknown model provider "opneai".*openai:/);
    const noKey = await runKeel(['run', '--model', 'openai:gpt-4o', 'hi'], env({ OPENAI_API_KEY: '' }));
    assert.equal(noKey.code, 2);
    assert.match(noKey.stderr, /set OPENAI_API_KEY/);
    const azure = await runKeel(['run', '--model', 'azure:my-deploy', 'hi'], env());
    assert.equal(azure.code, 2);
    assert.match(azure.stderr, /AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION/);
    assert.equal(emu.requests.length, from, 'nothing was sent');
  });

  test('azure:DEPLOYMENT goes to the deployment path with api-key and api-version; ollama: needs no key', async () => {
    const ws = tempWorkspace({});
    emu.setScenario({ replies: [answer('from azure'), answer('from ollama')] });
    const from = emu.requests.length;
    const azure = await runKeel(
      ['run', '--workspace', ws, '--model', 'azure:my-deploy', 'hi'],
      env({
        AZURE_OPENAI_API_KEY: 'az-key',
        AZURE_OPENAI_ENDPOINT: emu.url,
        OPENAI_API_VERSION: '2024-10-21',
      }),
    );
    assert.equal(azure.code, 0, azure.stderr);
    assert.equal(azure.stdout.trim(), 'from azure');
    assert.equal(emu.requests[from]!.headers['api-key'], 'az-key');
    assert.equal(emu.requests[from]!.request?.model, 'my-deploy');
    const ollama = await runKeel(
      ['run', '--workspace', ws, '--model', 'ollama:qwen3:8b', 'hi'],
      env({ OPENAI_API_KEY: '', OLLAMA_HOST: emu.url }),
    );
    assert.equal(ollama.code, 0, ollama.stderr);
    assert.equal(ollama.stdout.trim(), 'from ollama');
    const body = emu.requests[from + 1]!.body as { model: string; max_tokens?: number };
    assert.equal(body.model, 'qwen3:8b');
    assert.ok(body.max_tokens, 'compatible servers get max_tokens');
  });

  test('/model switches a chat to another provider mid-session: history kept, each turn names its model', async () => {
    const ws = tempWorkspace({ 'README.md': 'code 4711\n' });
    emu.setScenario({ replies: [use('Read', { path: 'README.md' }), answer('first answer from claude')] });
    const first = await runKeel(['run', '--workspace', ws, 'read the readme'], env());
    assert.equal(first.code, 0, first.stderr);
    const id = sessionIdFrom(first.stderr);
    const bad = await runKeel(['run', '--workspace', ws, '--resume', id, '/model nope:x'], env());
    assert.match(bad.stderr, /Unknown model provider "nope"/);
    const sw = await runKeel(['run', '--workspace', ws, '--resume', id, '/model openai:gpt-4.1'], env());
    assert.equal(sw.code, 0, sw.stderr);
    emu.setScenario({ replies: [answer('second answer from gpt', { lastUserContains: 'and now' })] });
    const from = emu.requests.length;
    const second = await runKeel(['run', '--workspace', ws, '--resume', id, 'and now?'], env());
    assert.equal(second.code, 0, second.stderr);
    const sent = since(from);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.api, 'chat');
    const text = JSON.stringify(sent[0]!.body);
    assert.match(text, /code 4711/, 'the earlier turns (a tool result from the Anthropic turn) are kept');
    assert.match(text, /first answer from claude/);
    const models = readLog(ws, id).flatMap((e) =>
      e.type === 'message_appended' && (e.message as { role: string }).role === 'assistant'
        ? [(e.message as { model: string }).model]
        : [],
    );
    assert.equal(models.at(-1), 'openai:gpt-4.1');
    assert.ok(!models[0]!.startsWith('openai:'), 'the first turns name the Anthropic model');
  });
});
