import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { cliEnv, readLog, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// `keel run` against an Anthropic-compatible server that is NOT our emulator: a small, independent
// server written from the API reference, strict where the real API is strict and sparse where
// compatible servers are sparse (no `ping`, no `usage` object on message_start, an unknown event
// type, extra fields). It shares no code with test/emulator, so a rule both got wrong in the same
// way cannot hide here.

interface Block {
  type: string;
  text?: string;
  id?: string;
  tool_use_id?: string;
  cache_control?: { type: string; ttl?: string };
  content?: unknown;
}
interface Body {
  model?: unknown;
  max_tokens?: unknown;
  system?: Block[];
  tools?: { name: string; input_schema: { type?: string }; cache_control?: { ttl?: string } }[];
  messages?: { role: string; content: string | Block[] }[];
}

/** The API's request rules this server enforces; returns the first broken one. */
function violation(body: Body): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return 'model: required';
  if (typeof body.max_tokens !== 'number' || body.max_tokens < 1) return 'max_tokens: required';
  const markers: string[] = [];
  for (const t of body.tools ?? []) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(t.name)) return `tool name ${t.name}`;
    if (t.input_schema?.type !== 'object') return `tools.${t.name}.input_schema.type must be object`;
    if (t.cache_control) markers.push(t.cache_control.ttl ?? '5m');
  }
  for (const b of body.system ?? []) {
    if (b.type !== 'text' || !b.text?.trim()) return 'system: text blocks must be non-empty';
    if (b.cache_control) markers.push(b.cache_control.ttl ?? '5m');
  }
  const messages = body.messages ?? [];
  if (messages[0]?.role !== 'user') return 'messages: the first message must use the user role';
  let pendingToolUses: string[] = [];
  for (const [i, m] of messages.entries()) {
    if (i > 0 && messages[i - 1]!.role === m.role) return `messages.${i}: roles must alternate`;
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (blocks.length === 0) return `messages.${i}: content must be non-empty`;
    if (m.role === 'user') {
      const results = blocks.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id ?? '');
      if (pendingToolUses.some((id) => !results.includes(id)))
        return `messages.${i}: tool_use ids without tool_result`;
      if (results.some((id) => !pendingToolUses.includes(id)))
        return `messages.${i}: tool_result without a matching tool_use`;
      const firstOther = blocks.findIndex((b) => b.type !== 'tool_result');
      if (firstOther >= 0 && blocks.slice(firstOther).some((b) => b.type === 'tool_result'))
        return `messages.${i}: tool_result blocks must come first`;
      pendingToolUses = [];
    } else {
      pendingToolUses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id ?? '');
    }
    for (const b of blocks) {
      if (b.type === 'text' && !b.text?.trim()) return `messages.${i}: text content blocks must be non-empty`;
      if (b.cache_control) markers.push(b.cache_control.ttl ?? '5m');
    }
  }
  if (markers.length > 4)
    return `A maximum of 4 blocks with cache_control may be provided. Found ${markers.length}.`;
  const firstShort = markers.indexOf('5m');
  if (firstShort >= 0 && markers.slice(firstShort).includes('1h'))
    return 'a ttl=1h cache_control block must not come after a ttl=5m cache_control block';
  return undefined;
}

function sse(res: http.ServerResponse, events: [string, unknown][]) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_foreign' });
  for (const [event, data] of events) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.end();
}

let server: http.Server;
let url: string;
const received: { body: Body; rejected?: string }[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as Body;
      const rejected = violation(body);
      received.push({ body, ...(rejected ? { rejected } : {}) });
      if (rejected) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: rejected } }),
        );
        return;
      }
      const last = body.messages!.at(-1)!;
      const sawResult = Array.isArray(last.content) && last.content.some((b) => b.type === 'tool_result');
      const start: [string, unknown] = [
        'message_start',
        // Sparse on purpose: no usage object at all, as some compatible servers send.
        {
          type: 'message_start',
          message: { id: 'msg_f', type: 'message', role: 'assistant', model: 'local-model', content: [] },
        },
      ];
      if (!sawResult) {
        sse(res, [
          start,
          ['vendor_heartbeat', { type: 'vendor_heartbeat', note: 'an event type Keel has never seen' }],
          [
            'content_block_start',
            {
              type: 'content_block_start',
              index: 0,
              content_block: { type: 'tool_use', id: 'toolu_f1', name: 'Read', input: {} },
            },
          ],
          [
            'content_block_delta',
            {
              type: 'content_block_delta',
              index: 0,
              delta: { type: 'input_json_delta', partial_json: '{"pa' },
            },
          ],
          [
            'content_block_delta',
            {
              type: 'content_block_delta',
              index: 0,
              delta: { type: 'input_json_delta', partial_json: 'th": "NOTES.md"}' },
            },
          ],
          ['content_block_stop', { type: 'content_block_stop', index: 0 }],
          [
            'message_delta',
            {
              type: 'message_delta',
              delta: { stop_reason: 'tool_use', stop_sequence: null },
              usage: { output_tokens: null },
            },
          ],
          ['message_stop', { type: 'message_stop' }],
        ]);
        return;
      }
      const resultText = JSON.stringify(last.content);
      const secret = /the code word is (\w+)/.exec(resultText)?.[1] ?? 'unknown';
      sse(res, [
        start,
        [
          'content_block_start',
          { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        ],
        [
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `The code word is ` } },
        ],
        [
          'content_block_delta',
          { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `${secret}.` } },
        ],
        ['content_block_stop', { type: 'content_block_stop', index: 0 }],
        // message_delta without usage: also seen from compatible servers.
        ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null } }],
        ['message_stop', { type: 'message_stop' }],
      ]);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

describe('keel run against a foreign Anthropic-compatible server', () => {
  test('completes Read → answer and sends nothing the API would reject', async () => {
    // Large enough that Keel treats the result as a big one (cache anchors, pruning candidates).
    const filler = Array.from({ length: 60 }, (_, i) => `line ${i}: notes about the project layout.`);
    const ws = tempWorkspace({ 'NOTES.md': `${filler.join('\n')}\nthe code word is albatross\n` });
    const run = await runKeel(['run', '--workspace', ws, 'What is the code word in NOTES.md?'], {
      ...cliEnv(url),
      KEEL_MODEL: 'local-model',
    });
    assert.deepEqual(
      received.filter((r) => r.rejected).map((r) => r.rejected),
      [],
      'no request broke a rule of the API',
    );
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'The code word is albatross.');
    assert.equal(received.length, 2);
    assert.match(run.stderr, /context window of local-model is unknown/, 'a non-Claude model gets a warning');
    const entries = readLog(ws, sessionIdFrom(run.stderr));
    assert.ok(entries.some((e) => e.type === 'agent_end'));
  });

  test('an empty prompt is a usage error, not a request the API rejects', async () => {
    const before = received.length;
    const run = await runKeel(['run', '--workspace', tempWorkspace(), '   '], cliEnv(url));
    assert.equal(run.code, 2);
    assert.match(run.stderr, /PROMPT is empty/);
    assert.equal(received.length, before, 'nothing was sent');
  });
});
