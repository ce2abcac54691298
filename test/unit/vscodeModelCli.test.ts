import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// `vscode:` models are VS Code's own; the CLI says so before anything runs (exit 2, nothing sent).

test('keel run --model vscode:… is a usage error naming what works here', async () => {
  const ws = tempWorkspace({ 'a.txt': 'x\n' });
  const run = await runKeel(
    ['run', '--workspace', ws, '--model', 'vscode:copilot/gpt-4.1', 'hi'],
    cliEnv('http://127.0.0.1:9'),
  );
  assert.equal(run.code, 2, run.stderr);
  assert.match(
    run.stderr,
    /vscode:copilot\/gpt-4\.1: vscode: models are VS Code's language models, served inside the extension only/,
  );
  const sub = await runKeel(
    ['run', '--workspace', ws, '--subagent-model', 'explore=vscode:gpt-4.1', 'hi'],
    cliEnv('http://127.0.0.1:9'),
  );
  assert.equal(sub.code, 2, sub.stderr);
  assert.match(sub.stderr, /served inside the extension only/);
});
