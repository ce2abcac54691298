import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { crc32, encodeEventStreamMessage } from '../emulator/platforms.ts';
import { type Emulator, startEmulator } from '../emulator/server.ts';

// The emulator's Bedrock and Vertex doors refuse what those services refuse (the SDK paths that
// succeed are covered end to end in platformsCli.test.ts).

let emu: Emulator;
before(async () => {
  emu = await startEmulator({
    scenario: { replies: [{ content: [{ type: 'text', text: 'ok' }] }], onExhausted: 'repeat_last' },
  });
});
after(() => emu.close());

const sigv4 =
  'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261127/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=' +
  'a'.repeat(64);
const bedrockBody = {
  anthropic_version: 'bedrock-2023-05-31',
  max_tokens: 10,
  messages: [{ role: 'user', content: 'hi' }],
};

async function post(path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${emu.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get('x-amzn-errortype') ?? '', text: await res.text() };
}

test('Bedrock: no credential 403, a bad signature 403, model/stream in the body 400, a wrong version 400', async () => {
  const path = '/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke';
  const none = await post(path, bedrockBody, {});
  assert.equal(none.status, 403);
  assert.match(none.type, /^MissingAuthenticationTokenException/);
  const badSig = await post(path, bedrockBody, {
    authorization: 'AWS4-HMAC-SHA256 nonsense',
    'x-amz-date': '20261127T000000Z',
  });
  assert.equal(badSig.status, 403);
  assert.match(badSig.type, /^InvalidSignatureException/);
  const signed = { authorization: sigv4, 'x-amz-date': '20261127T000000Z' };
  const withModel = await post(path, { ...bedrockBody, model: 'x' }, signed);
  assert.equal(withModel.status, 400);
  assert.match(withModel.text, /extraneous key \[model\] is not permitted/);
  const withStream = await post(path, { ...bedrockBody, stream: true }, signed);
  assert.match(withStream.text, /extraneous key \[stream\]/);
  const version = await post(path, { ...bedrockBody, anthropic_version: '2023-06-01' }, signed);
  assert.equal(version.status, 400);
  const ok = await post(path, bedrockBody, signed);
  assert.equal(ok.status, 200, ok.text);
  assert.equal(JSON.parse(ok.text).model, 'anthropic.claude-sonnet-4-5-20250929-v1:0');
});

test('Vertex: no Bearer token 401 (Google shape), model in the body 400, wrong version 400', async () => {
  const path =
    '/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict';
  const body = {
    anthropic_version: 'vertex-2023-10-16',
    max_tokens: 10,
    messages: [{ role: 'user', content: 'hi' }],
  };
  const none = await post(path, body, { 'x-api-key': 'sk-ant-not-for-vertex' });
  assert.equal(none.status, 401);
  assert.equal(JSON.parse(none.text).error.status, 'UNAUTHENTICATED');
  const auth = { authorization: 'Bearer ya29.x' };
  assert.equal((await post(path, { ...body, model: 'claude' }, auth)).status, 400);
  assert.equal((await post(path, { ...body, anthropic_version: 'bedrock-2023-05-31' }, auth)).status, 400);
  const ok = await post(path, body, auth);
  assert.equal(ok.status, 200, ok.text);
  assert.equal(JSON.parse(ok.text).model, 'claude-sonnet-4-5@20250929');
});

test('event-stream framing: lengths and both CRC32s as AWS defines them', () => {
  assert.equal(crc32(Buffer.from('123456789')), 0xcbf43926, 'the standard CRC-32 check value');
  const msg = encodeEventStreamMessage({ ':event-type': 'chunk' }, Buffer.from('{}'));
  assert.equal(msg.readUInt32BE(0), msg.length);
  assert.equal(msg.readUInt32BE(8), crc32(msg.subarray(0, 8)));
  assert.equal(msg.readUInt32BE(msg.length - 4), crc32(msg.subarray(0, msg.length - 4)));
});
