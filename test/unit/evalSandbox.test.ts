import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import type { EvalReport } from '../../src/agent/eval/runner.ts';
import { probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { runKeel } from './helpers/cli.ts';

// `keel eval` treats a suite as repository content: its command graders run in the OS sandbox with an
// allow-list environment (no key, no token of Keel's), and every path it names stays in its folder.

const made: string[] = [];
process.on('exit', () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});
function tempDir(prefix: string): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  made.push(dir);
  return dir;
}

function writeSuite(files: Record<string, unknown>): string {
  const dir = tempDir('keel-suite-');
  for (const [name, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(
      path.join(dir, name),
      typeof content === 'string' ? content : JSON.stringify(content, null, 2),
    );
  }
  return dir;
}

const sandboxed = probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap';
const FAKE_KEY = 'FAKE-PRIVATE-KEY-0c9f';

/** Keel's environment with secrets planted, and a home holding a fake SSH key. */
function plantedEnv(home: string): NodeJS.ProcessEnv {
  const { ANTHROPIC_BASE_URL: _u, KEEL_SANDBOX: _s, ...rest } = process.env;
  return {
    ...rest,
    HOME: home,
    ANTHROPIC_API_KEY: 'sk-ant-planted-key',
    ANTHROPIC_AUTH_TOKEN: 'planted-auth-token',
    MY_SECRET_TOKEN: 'planted-secret-token',
    AWS_SECRET_ACCESS_KEY: 'planted-aws-secret',
    OPENAI_API_KEY: 'planted-openai-key',
  };
}

test('keel eval: graders and the trial agent see no key or token of Keel, cannot read secrets or write outside the trial', async () => {
  const home = tempDir('keel-fake-home-');
  fs.mkdirSync(path.join(home, '.ssh'));
  fs.writeFileSync(path.join(home, '.ssh', 'id_rsa'), `${FAKE_KEY}\n`);
  const outside = tempDir('keel-outside-');
  const envLine =
    'printf "KEY=[%s] AUTH=[%s] MINE=[%s] AWS=[%s] OPENAI=[%s] PLANTED=[%s]" "$ANTHROPIC_API_KEY" "$ANTHROPIC_AUTH_TOKEN" "$MY_SECRET_TOKEN" "$AWS_SECRET_ACCESS_KEY" "$OPENAI_API_KEY" "$(env | grep -c planted)"';
  const suite = writeSuite({
    'suite.json': { name: 'confined' },
    'fixtures/empty/README.md': 'empty\n',
    'tasks/env.json': {
      id: 'env',
      prompt: 'Write the environment to agent-env.txt and try to copy the SSH key.',
      fixture: 'fixtures/empty',
      approve: 'all',
      env: { OUTSIDE: outside, GREETING: 'hello' },
      emulator: {
        policy: 'succeeds',
        steps: [
          { bash: 'env > agent-env.txt' },
          { bash: `cp ${home}/.ssh/id_rsa stolen.txt` },
          // A link the agent plants: a file grader must not read (and the report quote) its target.
          { bash: `ln -s ${home}/.ssh/id_rsa leak` },
        ],
      },
      graders: [
        { type: 'command', run: envLine },
        { type: 'command', run: 'printf "AGENT=[%s]" "$(grep -c -e planted -e ANTHROPIC_ agent-env.txt)"' },
        {
          type: 'command',
          run: 'printf "STOLEN=[%s] GREETING=[%s]" "$(cat stolen.txt 2>/dev/null)" "$GREETING"',
        },
        { type: 'command', run: `cat ${home}/.ssh/id_rsa` },
        { type: 'command', run: 'echo x > "$OUTSIDE/pwned"' },
        { type: 'file', path: 'leak', equals: '' },
      ],
    },
  });
  const out = tempDir('keel-eval-out-');
  const run = await runKeel(['eval', suite, '--emulator', '--out', out], plantedEnv(home));
  assert.equal(run.code, 0, run.stderr);
  // Said once, on stderr, like `keel run`'s sandbox line.
  assert.equal(run.stderr.match(/keel: eval graders run/g)?.length, 1, run.stderr);
  const report = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8')) as EvalReport;
  const graders = report.tasks[0]!.results[0]!.graders;
  const detail = (i: number) => graders[i]!.detail;
  assert.match(detail(0), /KEY=\[\] AUTH=\[\] MINE=\[\] AWS=\[\] OPENAI=\[\] PLANTED=\[0\]/, detail(0));
  assert.match(detail(1), /AGENT=\[0\]/, "the agent's Bash saw neither the key nor Keel's secrets");
  assert.match(detail(2), /GREETING=\[hello\]/, 'the variables the suite declares reach its graders');
  assert.equal(graders[3]!.pass, false, detail(3));
  assert.equal(graders[4]!.pass, false, detail(4));
  assert.ok(!fs.existsSync(path.join(outside, 'pwned')), 'nothing written outside the trial');
  assert.equal(graders[5]!.pass, false);
  assert.match(detail(5), /leak leads outside the trial's workspace/, detail(5));
  const everything = fs.readFileSync(path.join(out, 'report.json'), 'utf8');
  assert.doesNotMatch(everything, new RegExp(FAKE_KEY), 'the key never reaches the report');
  assert.doesNotMatch(
    everything,
    /sk-ant-planted-key|planted-(auth-token|secret-token|aws-secret|openai-key)/,
  );
  if (!sandboxed) {
    // Without an OS sandbox the command policy keeps these from running at all.
    console.log('# no OS sandbox here: the sandbox refusals are not asserted (CI has bubblewrap)');
    assert.match(detail(3), /not run|refused/);
    assert.match(run.stderr, /keel: eval graders run WITHOUT an OS sandbox/);
    return;
  }
  assert.match(run.stderr, /keel: eval graders run in the OS sandbox/);
  assert.match(detail(2), /STOLEN=\[\]/, "the trial agent's sandbox hides the real home's secrets");
  assert.match(detail(3), /exit [1-9]/, 'cat ran, and the sandbox hid the key');
  assert.match(detail(4), /exit [1-9].*(Read-only|read-only|Permission)/s, detail(4));
});

test('keel eval: a grader reaches no network unless it declares it', async (t) => {
  if (!sandboxed) {
    t.skip('no OS sandbox here: unsandboxed graders that reach the network are not run at all');
    return;
  }
  const home = tempDir('keel-fake-home-');
  // A listener on the host's loopback: inside the sandbox's own network namespace it is unreachable.
  const net = await import('node:net');
  const server = net.createServer((socket) => socket.end('HELLO\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  try {
    const probe = `node -e "require('net').connect(${port},'127.0.0.1').on('data',()=>process.exit(0)).on('error',()=>process.exit(3))"`;
    const suite = writeSuite({
      'suite.json': { name: 'offline' },
      'fixtures/empty/README.md': 'empty\n',
      'tasks/net.json': {
        id: 'net',
        prompt: 'Nothing to do.',
        fixture: 'fixtures/empty',
        emulator: { policy: 'succeeds', steps: [] },
        graders: [
          { type: 'command', run: probe, expect_exit: 3 },
          // Declared: still no direct route, only Keel's proxy (when socat is here to bridge it).
          { type: 'command', run: probe, expect_exit: 3, network: true },
          { type: 'command', run: 'printf "PROXY=[%s]" "$HTTPS_PROXY"', network: true },
          { type: 'command', run: 'printf "PROXY=[%s]" "$HTTPS_PROXY"' },
        ],
      },
    });
    const out = tempDir('keel-eval-out-');
    const run = await runKeel(['eval', suite, '--emulator', '--out', out], plantedEnv(home));
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'report.json'), 'utf8')) as EvalReport;
    const [offline, declared, proxied, plain] = report.tasks[0]!.results[0]!.graders;
    assert.equal(offline!.pass, true, `the host's loopback was reachable: ${offline!.detail}`);
    assert.equal(declared!.pass, true, `the host's loopback was reachable: ${declared!.detail}`);
    assert.match(plain!.detail, /PROXY=\[\]/, 'no proxy for a grader that did not declare the network');
    if (fs.existsSync('/usr/bin/socat'))
      assert.match(proxied!.detail, /PROXY=\[http:\/\/127\.0\.0\.1:\d+\]/, proxied!.detail);
  } finally {
    server.close();
  }
});

test('keel eval refuses fixture paths out of the suite (.., absolute, symlinks) before any trial (exit 2)', async () => {
  const elsewhere = tempDir('keel-elsewhere-');
  fs.writeFileSync(path.join(elsewhere, 'secret.txt'), 'secret\n');
  const task = (id: string, fixture: string) => ({
    id,
    prompt: 'x',
    fixture,
    graders: [{ type: 'file', path: 'a.txt', contains: 'x' }],
    emulator: { policy: 'succeeds', steps: [] },
  });
  const suite = writeSuite({
    'suite.json': { name: 'escape' },
    'fixtures/ok/a.txt': 'x\n',
    'fixtures/leaky/a.txt': 'x\n',
    'tasks/climb.json': task('climb', '../../etc/passwd'),
    'tasks/absolute.json': task('absolute', elsewhere),
    'tasks/linked.json': task('linked', 'fixtures/link'),
    'tasks/inner.json': task('inner', 'fixtures/leaky'),
    'tasks/fine.json': task('fine', 'fixtures/ok'),
  });
  fs.symlinkSync(elsewhere, path.join(suite, 'fixtures', 'link'));
  fs.symlinkSync(path.join(elsewhere, 'secret.txt'), path.join(suite, 'fixtures', 'leaky', 'secret.txt'));
  const out = path.join(tempDir('keel-eval-out-'), 'out');
  const run = await runKeel(['eval', suite, '--emulator', '--out', out], plantedEnv(tempDir('keel-home-')));
  assert.equal(run.code, 2, run.stderr);
  assert.match(
    run.stderr,
    /tasks\/climb\.json \(task "climb"\): fixture: refused: \.\.\/\.\.\/etc\/passwd is outside the suite folder/,
  );
  assert.match(
    run.stderr,
    new RegExp(
      `tasks/absolute\\.json \\(task "absolute"\\): fixture: refused: ${elsewhere} is an absolute path`,
    ),
  );
  assert.match(
    run.stderr,
    /tasks\/linked\.json \(task "linked"\): fixture: refused: fixtures\/link leads outside the suite folder through a symlink/,
  );
  assert.match(
    run.stderr,
    /tasks\/inner\.json \(task "inner"\): fixture: refused: fixtures\/leaky\/secret\.txt is a symlink to .*outside the suite folder/,
  );
  assert.doesNotMatch(run.stderr, /task "fine"/);
  assert.ok(!fs.existsSync(out), 'no trial ran');
});

test('keel eval refuses a grader on the never-run list before any trial (exit 2)', async () => {
  const suite = writeSuite({
    'suite.json': { name: 'never' },
    'fixtures/ok/a.txt': 'x\n',
    'tasks/wipe.json': {
      id: 'wipe',
      prompt: 'x',
      fixture: 'fixtures/ok',
      graders: [{ type: 'command', run: 'rm -rf /' }],
      env: { GITHUB_TOKEN: 'x' },
      emulator: { policy: 'succeeds', steps: [] },
    },
  });
  const out = path.join(tempDir('keel-eval-out-'), 'out');
  const run = await runKeel(['eval', suite, '--emulator', '--out', out], plantedEnv(tempDir('keel-home-')));
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /tasks\/wipe\.json \(task "wipe"\): env\.GITHUB_TOKEN: looks like a secret/);
  assert.ok(!fs.existsSync(out), 'no trial ran');
  // The env problem is a load problem; fix it and the policy refusal shows.
  const file = path.join(suite, 'tasks', 'wipe.json');
  const json = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  delete json.env;
  fs.writeFileSync(file, JSON.stringify(json));
  const again = await runKeel(['eval', suite, '--emulator', '--out', out], plantedEnv(tempDir('keel-home-')));
  assert.equal(again.code, 2, again.stderr);
  assert.match(
    again.stderr,
    /tasks\/wipe\.json \(task "wipe"\): graders\[0\]\.run: refused by the command policy/,
  );
  assert.ok(!fs.existsSync(out), 'no trial ran');
});
