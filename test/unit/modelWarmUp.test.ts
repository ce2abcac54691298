import assert from 'node:assert/strict';
import { test } from 'node:test';
import { warmUpModelCalls } from '../../src/agent/model/warmUp.ts';

// The extension warms the model path while the user types the first prompt: one canned streamed call
// through the real client and SDK against a throwaway loopback server. It must really complete (a
// canned stream the client rejects would warm nothing) and must never throw.

test('the warm-up completes one canned streamed call through the model client on loopback', async () => {
  assert.equal(await warmUpModelCalls(), true);
});

test('a warm-up that cannot finish in time reports false instead of throwing', async () => {
  assert.equal(await warmUpModelCalls(0), false);
});
