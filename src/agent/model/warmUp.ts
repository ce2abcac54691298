import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createModelClient } from './client.ts';
import { createLimiter } from './limiter.ts';

// The first model call of a process pays for code that runs only once: the SDK's request path,
// fetch's HTTP client (its parser is WebAssembly, compiled on first use), the SSE decoder. A host
// with idle time before its first prompt (the extension, while the user types) runs one canned call
// through the very same client against a throwaway server on 127.0.0.1: nothing leaves the machine,
// no key is sent anywhere else, no session or log is made.

const CANNED = [
  ['message_start', { type: 'message_start', message: warmMessage() }],
  [
    'content_block_start',
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  ],
  [
    'content_block_delta',
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: '.' } },
  ],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  [
    'message_delta',
    {
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 1 },
    },
  ],
  ['message_stop', { type: 'message_stop' }],
]
  .map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  .join('');

function warmMessage() {
  return {
    id: 'msg_warm_up',
    type: 'message',
    role: 'assistant',
    model: 'warm-up',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 0 },
  };
}

/** One canned streamed call through the model client: true when it went through (never rejects). */
export async function warmUpModelCalls(timeoutMs = 5000): Promise<boolean> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(CANNED);
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const { port } = server.address() as AddressInfo;
    const client = createModelClient({
      models: ['warm-up'],
      apiKey: 'warm-up',
      baseURL: `http://127.0.0.1:${port}`,
      maxRetries: 0,
      limiter: createLimiter(1),
    });
    await client.stream(
      {
        system: [{ type: 'text', text: '.' }],
        tools: [],
        messages: [{ role: 'user', content: [{ type: 'text', text: '.' }] }],
        maxTokens: 1,
      },
      AbortSignal.timeout(timeoutMs),
    );
    return true;
  } catch {
    // A warm-up that fails (a proxy in the way, no loopback) only means the first call stays cold.
    return false;
  } finally {
    server.close();
    server.closeAllConnections?.();
  }
}
