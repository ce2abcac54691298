import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kindModels, modelSetting } from '../../src/extension/modelSettings.ts';

// keel.model and keel.subagentModels as the extension reads them: a repository's settings may pick
// another model of the user's provider, never send the work to another vendor.

test("a workspace's keel.model: same provider is used; another provider is refused and named", () => {
  assert.deepEqual(modelSetting({ defaultValue: 'claude-sonnet-4-6', workspaceValue: 'claude-opus-4-6' }), {
    model: 'claude-opus-4-6',
  });
  assert.deepEqual(modelSetting({ defaultValue: 'claude-sonnet-4-6', workspaceValue: 'openai:gpt-4.1' }), {
    model: 'claude-sonnet-4-6',
    refused: 'openai:gpt-4.1',
  });
  // The user chose OpenAI: a workspace may pick another OpenAI model, not an Ollama one.
  assert.deepEqual(
    modelSetting({ globalValue: 'openai:gpt-4.1', workspaceFolderValue: 'openai:gpt-4o-mini' }),
    { model: 'openai:gpt-4o-mini' },
  );
  assert.equal(
    modelSetting({ globalValue: 'openai:gpt-4.1', workspaceValue: 'ollama:x' }).refused,
    'ollama:x',
  );
  assert.deepEqual(modelSetting({ globalValue: 'vscode:copilot/gpt-4.1' }), {
    model: 'vscode:copilot/gpt-4.1',
  });
});

test('keel.subagentModels: kind → model pairs; malformed ones dropped', () => {
  assert.deepEqual(kindModels({ explore: ' anthropic:claude-haiku-4-5 ', 'bad kind': 'x', general: '' }), {
    explore: 'anthropic:claude-haiku-4-5',
  });
  assert.deepEqual(kindModels(['explore=x']), {});
  assert.deepEqual(kindModels(undefined), {});
});
