import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createProviderLookup } from '../../src/agent/model/providers/index.ts';
import { lmSelector, parseLmModel } from '../../src/extension/lm/lmModelSpec.ts';

// `vscode:` model names: how a user's spelling selects a VS Code language model, and what the CLI
// (which has no VS Code) says when one is named there.

test('vscode: names select by vendor/id, by id then family, or any model', () => {
  assert.deepEqual(lmSelector(parseLmModel('vscode:copilot/gpt-4.1')), [
    { vendor: 'copilot', id: 'gpt-4.1' },
    { vendor: 'copilot', family: 'gpt-4.1' },
  ]);
  assert.deepEqual(lmSelector(parseLmModel('vscode:claude-sonnet-4')), [
    { id: 'claude-sonnet-4' },
    { family: 'claude-sonnet-4' },
  ]);
  assert.deepEqual(lmSelector(parseLmModel('vscode:')), [{}]);
  assert.deepEqual(lmSelector(parseLmModel('vscode:auto')), [{}]);
});

test('outside VS Code a vscode: model fails every call with a clear, non-retryable error', async () => {
  const provider = createProviderLookup()('vscode:copilot/gpt-4.1');
  assert.ok(provider);
  await assert.rejects(
    provider.stream({} as never),
    (e: Error & { kind?: string; retryable?: boolean }) =>
      e.retryable === false &&
      /served by the host \(VS Code's language models, inside the extension\)/.test(e.message),
  );
});
