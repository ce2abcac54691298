import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { resolveTelemetryConfig } from '../../src/agent/telemetry/config.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { type CliRun, cliEnv, KEEL_BIN, tempWorkspace } from './helpers/cli.ts';

// OpenTelemetry export of a real `keel run` (built CLI, emulator as the API) to a local OTLP/HTTP
// receiver started here: span tree, GenAI attributes, error status, headers, TRACEPARENT in the
// commands Keel runs, content off by default; and no OpenTelemetry module loaded when unset.

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];
let emu: Emulator;

before(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      const json = req.headers['content-type']?.includes('json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : '');
    });
  });
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
  await new Promise((ok) => receiver.close(ok));
});

const PROMPT = 'Read a.txt and run a command (secret prompt words)';
function scenario() {
  emu.setScenario({
    replies: [
      { content: [{ type: 'tool_use', name: 'Read', input: { path: 'a.txt' } }] },
      { content: [{ type: 'tool_use', name: 'Read', input: { path: 'missing.txt' } }] },
      {
        content: [
          { type: 'tool_use', name: 'Bash', input: { command: 'printf %s "$TRACEPARENT" > tp.txt' } },
        ],
      },
      { content: [{ type: 'text', text: 'done' }] },
    ],
  });
}

function runKeelWith(nodeArgs: string[], args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...nodeArgs, KEEL_BIN, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

interface JsonSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  kind: number;
  status?: { code?: number; message?: string };
  attributes: { key: string; value: Record<string, unknown> }[];
}

function spansOf(bodies: Received[]): JsonSpan[] {
  return bodies.flatMap((r) => {
    const doc = JSON.parse(r.body.toString('utf8')) as {
      resourceSpans: { scopeSpans: { spans: JsonSpan[] }[] }[];
    };
    return doc.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
  });
}

function attr(span: JsonSpan, key: string): unknown {
  const v = span.attributes.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('arrayValue' in v)
    return ((v.arrayValue as { values?: { stringValue?: string }[] }).values ?? []).map((x) => x.stringValue);
  return v;
}

const otelEnv = (extra: Record<string, string>) => {
  const env = cliEnv(emu.url, extra);
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_') && !(k in extra)) delete env[k];
  delete env.TRACEPARENT;
  return env;
};

test('resolveTelemetryConfig: off unless an endpoint is set; protocol, content and the setting', () => {
  assert.equal(resolveTelemetryConfig({}), undefined);
  assert.equal(
    resolveTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }),
    undefined,
  );
  assert.deepEqual(resolveTelemetryConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x' }), {
    protocol: 'http/protobuf',
    includeContent: false,
    warnings: [],
  });
  const json = resolveTelemetryConfig({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://x/t',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  });
  assert.equal(json?.protocol, 'http/json');
  const grpc = resolveTelemetryConfig({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
  });
  assert.equal(grpc?.protocol, 'http/protobuf');
  assert.match(grpc?.warnings[0] ?? '', /grpc.*not supported/);
  const setting = resolveTelemetryConfig(
    {},
    { otlpEndpoint: 'http://collector:4318/', includeContent: true },
  );
  assert.deepEqual(setting, {
    url: 'http://collector:4318/v1/traces',
    protocol: 'http/protobuf',
    includeContent: true,
    warnings: [],
  });
});

test('keel run exports one trace (http/json): invoke_agent → chat / execute_tool with GenAI attributes, errors, headers, TRACEPARENT; no content', async () => {
  scenario();
  received.length = 0;
  const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
  const run = await runKeelWith(
    [],
    ['run', '--workspace', ws, '--approve', 'all', PROMPT],
    otelEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-team=keel,authorization=Bearer%20t0k',
    }),
  );
  assert.equal(run.code, 0, run.stderr);
  assert.ok(received.length >= 1, 'the receiver got an export');
  for (const r of received) {
    assert.equal(r.path, '/v1/traces');
    assert.match(String(r.headers['content-type']), /application\/json/);
    assert.equal(r.headers['x-team'], 'keel');
    assert.equal(r.headers.authorization, 'Bearer t0k');
  }
  const spans = spansOf(received);
  assert.equal(new Set(spans.map((s) => s.traceId)).size, 1, 'one trace');
  const agent = spans.filter((s) => s.name === 'invoke_agent keel');
  assert.equal(agent.length, 1);
  const root = agent[0]!;
  assert.ok(!root.parentSpanId, 'the run is the root');
  assert.equal(attr(root, 'gen_ai.operation.name'), 'invoke_agent');
  assert.equal(attr(root, 'gen_ai.provider.name'), 'anthropic');
  assert.equal(attr(root, 'gen_ai.request.model'), 'claude-sonnet-4-6');
  const chats = spans.filter((s) => s.name === 'chat claude-sonnet-4-6');
  assert.equal(chats.length, 4);
  for (const c of chats) {
    assert.equal(c.parentSpanId, root.spanId);
    assert.equal(c.kind, 3, 'CLIENT');
    assert.equal(attr(c, 'gen_ai.operation.name'), 'chat');
    assert.equal(attr(c, 'gen_ai.provider.name'), 'anthropic');
    assert.equal(attr(c, 'gen_ai.request.model'), 'claude-sonnet-4-6');
    assert.equal(attr(c, 'gen_ai.response.model'), 'claude-sonnet-4-6');
    assert.ok((attr(c, 'gen_ai.usage.input_tokens') as number) > 0);
    assert.ok((attr(c, 'gen_ai.usage.output_tokens') as number) > 0);
    assert.equal(typeof attr(c, 'gen_ai.usage.cache_read.input_tokens'), 'number');
    assert.equal(typeof attr(c, 'gen_ai.usage.cache_creation.input_tokens'), 'number');
    assert.match(String(attr(c, 'keel.prefix_hash')), /^[0-9a-f]{64}$/);
  }
  assert.deepEqual(
    chats.map((c) => attr(c, 'gen_ai.response.finish_reasons')),
    [['tool_use'], ['tool_use'], ['tool_use'], ['end_turn']],
  );
  const tools = spans.filter((s) => s.name.startsWith('execute_tool '));
  assert.deepEqual(tools.map((s) => s.name).sort(), [
    'execute_tool Bash',
    'execute_tool Read',
    'execute_tool Read',
  ]);
  for (const t of tools) {
    assert.equal(t.parentSpanId, root.spanId);
    assert.equal(attr(t, 'gen_ai.operation.name'), 'execute_tool');
    assert.match(String(attr(t, 'gen_ai.tool.call.id')), /^toolu_/);
  }
  const failed = tools.find((t) => t.status?.code === 2);
  assert.ok(failed, 'the failing Read has error status');
  assert.equal(attr(failed, 'gen_ai.tool.name'), 'Read');
  assert.equal(attr(failed, 'error.type'), 'NOT_FOUND');
  assert.equal(tools.filter((t) => t.status?.code === 2).length, 1);
  // The command saw the trace context of its own execute_tool span.
  const bash = tools.find((t) => t.name === 'execute_tool Bash')!;
  assert.equal(fs.readFileSync(path.join(ws, 'tp.txt'), 'utf8'), `00-${bash.traceId}-${bash.spanId}-01`);
  // Content is off by default: no prompt, arguments or results leave the machine.
  const all = received.map((r) => r.body.toString('utf8')).join('\n');
  assert.ok(!all.includes('secret prompt words'));
  assert.ok(!all.includes('alpha'));
  assert.ok(!all.includes('gen_ai.tool.call.arguments'));
  assert.ok(!all.includes('gen_ai.input.messages'));
});

test('http/protobuf is the default protocol; includeContent exports prompt and tool I/O', async () => {
  scenario();
  received.length = 0;
  const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
  const run = await runKeelWith(
    [],
    ['run', '--workspace', ws, '--approve', 'all', PROMPT],
    otelEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, KEEL_TELEMETRY_INCLUDE_CONTENT: '1' }),
  );
  assert.equal(run.code, 0, run.stderr);
  assert.ok(received.length >= 1);
  const body = Buffer.concat(received.map((r) => r.body));
  for (const r of received) {
    assert.equal(r.path, '/v1/traces');
    assert.equal(r.headers['content-type'], 'application/x-protobuf');
  }
  assert.throws(() => JSON.parse(received[0]!.body.toString('utf8')), 'a binary protobuf body, not JSON');
  // Protobuf keeps strings as UTF-8 bytes: names, attribute keys and (content on) the texts.
  for (const s of [
    'invoke_agent keel',
    'chat claude-sonnet-4-6',
    'execute_tool Bash',
    'gen_ai.usage.input_tokens',
    'gen_ai.tool.call.arguments',
    'secret prompt words',
    'alpha',
  ])
    assert.ok(body.includes(Buffer.from(s)), `protobuf export holds ${s}`);
});

test('with no endpoint set, a run loads no OpenTelemetry module (and with one, it does)', async () => {
  const hook = path.resolve('test/unit/helpers/moduleLog.mjs');
  const logOff = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-mods-')), 'off.txt');
  const logOn = `${logOff}.on`;
  scenario();
  const off = await runKeelWith(
    ['--import', hook],
    ['run', '--workspace', tempWorkspace({ 'a.txt': 'alpha\n' }), '--approve', 'all', PROMPT],
    otelEnv({ KEEL_MODULE_LOG: logOff }),
  );
  assert.equal(off.code, 0, off.stderr);
  const offModules = fs.readFileSync(logOff, 'utf8');
  assert.match(offModules, /dist\/cli\.mjs/, 'the hook saw the run');
  assert.doesNotMatch(offModules, /@opentelemetry/);
  scenario();
  received.length = 0;
  const on = await runKeelWith(
    ['--import', hook],
    ['run', '--workspace', tempWorkspace({ 'a.txt': 'alpha\n' }), '--approve', 'all', PROMPT],
    otelEnv({ KEEL_MODULE_LOG: logOn, OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl }),
  );
  assert.equal(on.code, 0, on.stderr);
  assert.match(fs.readFileSync(logOn, 'utf8'), /@opentelemetry\/sdk-trace/);
});

test('a sub-agent is an invoke_agent span under the Task call, with its chat and tool spans under it', async () => {
  emu.setScenario({
    replies: [
      {
        content: [
          {
            type: 'tool_use',
            name: 'Task',
            input: { description: 'Find the file', prompt: 'CHILD-OTEL: where is a.txt?', mode: 'explore' },
          },
        ],
      },
      { content: [{ type: 'text', text: 'done' }] },
    ],
    threads: [
      {
        firstUserContains: 'CHILD-OTEL',
        replies: [
          { content: [{ type: 'tool_use', name: 'Glob', input: { pattern: '*.txt' } }] },
          { content: [{ type: 'text', text: '## Summary\nIt is a.txt.' }] },
        ],
      },
    ],
  });
  received.length = 0;
  const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
  const run = await runKeelWith(
    [],
    ['run', '--workspace', ws, '--approve', 'all', 'Delegate the search'],
    otelEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }),
  );
  assert.equal(run.code, 0, run.stderr);
  const spans = spansOf(received);
  assert.equal(new Set(spans.map((s) => s.traceId)).size, 1, 'one trace');
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const root = spans.find((s) => s.name === 'invoke_agent keel')!;
  const taskSpan = spans.find((s) => s.name === 'execute_tool Task')!;
  assert.equal(taskSpan.parentSpanId, root.spanId);
  const sub = spans.find((s) => s.name === 'invoke_agent Find the file');
  assert.ok(sub, `spans: ${spans.map((s) => s.name).join(', ')}`);
  assert.equal(sub.parentSpanId, taskSpan.spanId, 'the sub-agent is a child of the Task tool span');
  assert.equal(attr(sub, 'gen_ai.operation.name'), 'invoke_agent');
  assert.match(String(attr(sub, 'gen_ai.agent.id')), /-sub-/);
  const glob = spans.find((s) => s.name === 'execute_tool Glob')!;
  assert.equal(glob.parentSpanId, sub.spanId);
  const subChats = spans.filter((s) => s.name.startsWith('chat ') && s.parentSpanId === sub.spanId);
  assert.equal(subChats.length, 2, 'both sub-agent model calls under the sub-agent');
  const mainChats = spans.filter((s) => s.name.startsWith('chat ') && s.parentSpanId === root.spanId);
  assert.equal(mainChats.length, 2);
  assert.ok(byId.size === spans.length);
});
