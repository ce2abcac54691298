import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import type { ApprovalRequest } from '../../src/agent/host.ts';
import { createNodeShell } from '../../src/agent/node/nodeShell.ts';
import { withSessionMemory } from '../../src/agent/safety/approvals.ts';
import { explainOutput } from '../../src/agent/safety/sandbox/denials.ts';
import { probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { createSandbox } from '../../src/agent/safety/sandbox/sandbox.ts';
import { seccompProgram } from '../../src/agent/safety/sandbox/seccomp.ts';
import {
  runOutsideDialog,
  runOutsideMessage,
  sandboxNotice,
  sandboxTooltip,
} from '../../src/extension/sandboxUi.ts';

// The sandbox's parts: the generated seccomp program (does bwrap load it, does it refuse exactly
// AF_UNIX sockets), the tier probe, denial explanations, and the one-time approval.

const available = probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap';

function tempDir(prefix: string): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
}

test('the seccomp program is whole instructions for x64 and arm64, and none for an unknown arch', () => {
  for (const arch of ['x64', 'arm64']) {
    const program = seccompProgram(arch);
    assert.ok(program && program.length > 0 && program.length % 8 === 0, arch);
  }
  assert.notDeepEqual(seccompProgram('x64'), seccompProgram('arm64'));
  assert.equal(seccompProgram('mips'), undefined);
});

test('inside the sandbox: AF_UNIX sockets refused, socketpair and AF_INET allowed', {
  skip: !available && 'no bwrap',
}, async () => {
  const ws = tempDir('keel-sbx-unit-');
  const sock = path.join(ws, '..', `keel-host-${process.pid}.sock`);
  let reached = 0;
  const server = net.createServer((c) => {
    reached++;
    c.end('host');
  });
  await new Promise<void>((r) => server.listen(sock, r));
  const sandbox = createSandbox({ roots: [ws] });
  const shell = createNodeShell({ sandbox });
  const run = (command: string) =>
    shell.run({ command, cwd: ws, env: { PATH: process.env.PATH ?? '' }, timeoutMs: 20_000 });
  try {
    const unix = await run(
      `node -e "require('net').connect('${sock}').on('error',e=>{console.error(e.message);process.exit(3)})"`,
    );
    assert.equal(unix.exitCode, 3, unix.stderr);
    assert.match(unix.stderr, /EPERM/);
    assert.deepEqual(
      unix.denials?.map((d) => [d.kind, d.target]),
      [['socket', path.resolve(sock)]],
    );
    const pair = await run(
      `python3 -c "import socket; a, b = socket.socketpair(); a.send(b'ok'); print(b.recv(2).decode())"`,
    );
    assert.equal(pair.stdout.trim(), 'ok', pair.stderr);
    const inet = await run(`python3 -c "import socket; socket.socket(socket.AF_INET); print('inet ok')"`);
    assert.equal(inet.stdout.trim(), 'inet ok', inet.stderr);
    // Children started by the command are confined too (the filter is inherited).
    const child = await run(
      `node -e "require('child_process').execSync('python3 -c \\"import socket; socket.socket(socket.AF_UNIX)\\"', {stdio: 'inherit'})"`,
    );
    assert.notEqual(child.exitCode, 0);
    assert.equal(reached, 0);
    // Outside the sandbox (approved 'off'), the same connection works: the filter is what stops it.
    const off = await shell.run({
      command: `node -e "require('net').connect('${sock}').on('data',d=>console.log(String(d)))"`,
      cwd: ws,
      env: { PATH: process.env.PATH ?? '' },
      timeoutMs: 20_000,
      sandbox: 'off',
    });
    assert.equal(off.stdout.trim(), 'host');
    assert.equal(off.sandboxed, undefined);
  } finally {
    server.close();
    sandbox.dispose();
    fs.rmSync(ws, { recursive: true, force: true });
  }
});

test('a bare bwrap without the filter is not a sandbox: the host socket is reachable', {
  skip: !available && 'no bwrap',
}, async () => {
  const dir = tempDir('keel-bare-');
  const sock = path.join(dir, 'h.sock');
  const server = net.createServer((c) => c.end('host'));
  await new Promise<void>((r) => server.listen(sock, r));
  try {
    const result = await new Promise<string>((resolve) => {
      const out: Buffer[] = [];
      const child = spawn('bwrap', [
        '--ro-bind',
        '/',
        '/',
        '--unshare-user',
        '--unshare-net',
        '--',
        process.execPath,
        '-e',
        `require('net').connect('${sock}').on('data',d=>process.stdout.write(d))`,
      ]);
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.on('close', () => resolve(Buffer.concat(out).toString()));
    });
    assert.equal(result, 'host');
  } finally {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the probe names the missing binary and the fix; turned off by setting is said as such', () => {
  const missing = probeSandbox({ bwrapPath: '/nonexistent/bwrap', platform: 'linux' });
  assert.equal(missing.tier, 'none');
  assert.match(missing.summary, /No sandbox \(bubblewrap not installed\)/);
  assert.match(missing.fix ?? '', /apt-get install bubblewrap/);
  const off = probeSandbox({ bwrapPath: 'bwrap', enabled: false });
  assert.equal(off.disabled, true);
  assert.match(off.summary, /Sandbox off \(by setting\)/);
  assert.match(probeSandbox({ bwrapPath: 'bwrap', platform: 'win32' }).fix ?? '', /WSL2/);
  assert.equal(spawnSync('true').status, 0);
});

test('denials name what was refused from the usual error texts', () => {
  const home = '/home/u';
  const explain = (stderr: string, command = 'x') =>
    explainOutput({ stdout: '', stderr, command, cwd: '/home/u/ws', denyRead: [`${home}/.ssh`] }).map(
      (d) => `${d.kind} ${d.target}`,
    );
  assert.deepEqual(explain("OSError: [Errno 30] Read-only file system: '/home/u/x'"), ['write /home/u/x']);
  assert.deepEqual(explain("Error: EROFS: read-only file system, open '../sib/y'"), ['write /home/u/sib/y']);
  assert.deepEqual(explain('/bin/bash: line 1: .git/hooks/pre-commit: Read-only file system'), [
    'write /home/u/ws/.git/hooks/pre-commit',
  ]);
  assert.deepEqual(explain('cat: /home/u/.ssh/id_rsa: No such file or directory'), [
    'read /home/u/.ssh/id_rsa',
  ]);
  assert.deepEqual(explain('cat: /home/u/notes: No such file or directory'), []);
  assert.deepEqual(explain('connect ECONNREFUSED 127.0.0.1:6379'), ['network 127.0.0.1:6379']);
  assert.deepEqual(explain('curl: (6) Could not resolve host: example.com'), ['network example.com']);
  assert.deepEqual(explain('connect EPERM /run/docker.sock'), ['socket /run/docker.sock']);
  // "FileNotFoundError" is not a DNS failure.
  assert.deepEqual(explain("FileNotFoundError: [Errno 2] No such file or directory: 'a.txt'"), []);
});

test('a one-time approval is never remembered for the session', async () => {
  let asked = 0;
  const approvals = withSessionMemory({
    ask: async () => {
      asked++;
      return 'allow_session';
    },
  });
  const request: ApprovalRequest = { kind: 'command', title: 't', detail: 'd', risk: 'high', once: true };
  assert.equal(await approvals.ask(request), 'allow_once');
  assert.equal(await approvals.ask(request), 'allow_once');
  assert.equal(asked, 2);
});

test('the extension shows the tier in the tooltip, a notice only without a sandbox, and a plain-words modal', () => {
  const on = {
    tier: 'bwrap' as const,
    summary: 'Sandbox on (bubblewrap + seccomp): writes only in the workspace.',
  };
  const off = {
    tier: 'none' as const,
    summary: 'No sandbox (bubblewrap not installed): commands run without an OS sandbox.',
    fix: 'Install bubblewrap',
  };
  assert.match(sandboxTooltip(on), /^Sandbox: on — \(bubblewrap \+ seccomp\)/);
  assert.match(
    sandboxTooltip(off),
    /^Sandbox: OFF — No sandbox \(bubblewrap not installed\).*Fix: Install bubblewrap/,
  );
  assert.equal(sandboxNotice(on), undefined);
  assert.deepEqual(sandboxNotice(off), { text: off.summary, suggestion: 'Install bubblewrap' });
  assert.match(sandboxNotice({ ...off, failIfUnavailable: true })?.text ?? '', /Commands will not run/);
  const dialog = runOutsideDialog('python3 x.py');
  assert.match(dialog.detail, /^python3 x\.py\n\n/);
  assert.match(dialog.detail, /write anywhere you can, read your SSH keys/);
  assert.match(runOutsideMessage('python3 x.py'), /"outside_sandbox": true[\s\S]*python3 x\.py$/);
});
