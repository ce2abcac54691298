import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Emulator, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// `keel run --effort LEVEL` / `--no-thinking` / KEEL_EFFORT, and how the thinking is shown (stderr, dimmed on
// a terminal; plain here, where stderr is a pipe).

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const thoughtful = () =>
  emu.setScenario({
    replies: [
      {
        content: [
          { type: 'thinking', thinking: 'The user wants a greeting.\nKeep it short.' },
          { type: 'text', text: 'hello' },
        ],
      },
    ],
  });

test('thinking is on at medium by default, and shown on stderr, not in the answer', async () => {
  thoughtful();
  const run = await runKeel(['run', '--workspace', tempWorkspace(), 'greet'], cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, 'hello\n');
  assert.match(run.stderr, /✻ thinking\n {2}The user wants a greeting\.\n {2}Keep it short\./);
  assert.doesNotMatch(run.stderr, /\x1b\[2m/, 'no escape codes when stderr is not a terminal');
  const body = emu.requests.at(-1)!.request!;
  assert.deepEqual(body.thinking, { type: 'adaptive' });
  assert.deepEqual(body.output_config, { effort: 'medium' });
});

test('--effort high, --no-thinking and KEEL_EFFORT reach the request', async () => {
  thoughtful();
  let run = await runKeel(
    ['run', '--workspace', tempWorkspace(), '--effort', 'high', 'greet'],
    cliEnv(emu.url),
  );
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(emu.requests.at(-1)!.request!.output_config, { effort: 'high' });

  thoughtful();
  run = await runKeel(['run', '--workspace', tempWorkspace(), '--no-thinking', 'greet'], cliEnv(emu.url));
  assert.equal(run.code, 0, run.stderr);
  assert.equal(emu.requests.at(-1)!.request!.thinking, undefined);
  assert.doesNotMatch(run.stderr, /thinking/, 'the model did not think');

  thoughtful();
  run = await runKeel(
    ['run', '--workspace', tempWorkspace(), 'greet'],
    cliEnv(emu.url, { KEEL_EFFORT: 'low' }),
  );
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(emu.requests.at(-1)!.request!.output_config, { effort: 'low' });
});

test('a bad --effort, or --effort with --no-thinking, is a usage error', async () => {
  let run = await runKeel(['run', '--effort', 'huge', 'x'], cliEnv(emu.url));
  assert.equal(run.code, 2);
  assert.match(run.stderr, /--effort takes low, medium, high, max/);
  run = await runKeel(['run', '--effort', 'low', '--no-thinking', 'x'], cliEnv(emu.url));
  assert.equal(run.code, 2);
  assert.match(run.stderr, /contradict/);
  run = await runKeel(['eval', 'suite', '--effort', 'huge'], cliEnv(emu.url));
  assert.equal(run.code, 2);
  assert.match(run.stderr, /--effort takes/);
  run = await runKeel(['task', 'run', '--no-thinking', '--effort', 'max'], cliEnv(emu.url));
  assert.equal(run.code, 2);
  assert.match(run.stderr, /contradict/);
  run = await runKeel(['task', 'status', '--effort', 'low'], cliEnv(emu.url));
  assert.equal(run.code, 2, 'task status runs no model');
});
