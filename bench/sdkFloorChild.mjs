// The floor under any CLI that answers through the model SDK: a bare Node process that imports
// @anthropic-ai/sdk, streams ONE reply from a canned server on loopback and exits. No Keel code.
// bench/coldStart.ts times it next to `node -e 0` and `keel run --demo` (5 model turns + tools).
import * as http from 'node:http';
import Anthropic from '@anthropic-ai/sdk';

const events = [
  {
    type: 'message_start',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'm',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 0 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } },
  { type: 'content_block_stop', index: 0 },
  {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: 1 },
  },
  { type: 'message_stop' },
];
const body = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const client = new Anthropic({
  apiKey: 'k',
  baseURL: `http://127.0.0.1:${server.address().port}`,
  maxRetries: 0,
});
const stream = await client.messages.create({
  model: 'm',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'hi' }],
  stream: true,
});
let text = '';
for await (const event of stream)
  if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
if (text !== 'hi') throw new Error(`unexpected reply: ${text}`);
// Done: exit now rather than wait for idle keep-alive sockets to be torn down (the floor is the work).
process.exit(0);
