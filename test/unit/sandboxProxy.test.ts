import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import type { ApprovalDecision, ApprovalRequest } from '../../src/agent/host.ts';
import { createNodeShell } from '../../src/agent/node/nodeShell.ts';
import { configuredRegistryDomains, domainMatches } from '../../src/agent/safety/sandbox/domains.ts';
import { findExecutable, probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { createSandbox } from '../../src/agent/safety/sandbox/sandbox.ts';
import { workspaceStateHome } from '../../src/agent/trust/paths.ts';

// The domain-filtering proxy with real processes: curl inside the bubblewrap sandbox (no route out)
// reaches a local test server through Keel's proxy when the name is allowed, gets 403 with the reason
// when it is not, and every decision lands in the audit. The test names are under the reserved
// `.test` TLD; the test tells the proxy they live on loopback (no /etc/hosts, no DNS).

const available =
  probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap' &&
  findExecutable('socat') !== undefined &&
  findExecutable('curl') !== undefined;

test('domain patterns: exact names, and *.x / .x for subdomains', () => {
  assert.ok(domainMatches('registry.example.org', 'registry.example.org'));
  assert.ok(!domainMatches('registry.example.org.attacker.com', 'registry.example.org'));
  assert.ok(domainMatches('a.b.example.com', '*.example.com'));
  assert.ok(domainMatches('example.com', '.example.com'));
  assert.ok(!domainMatches('badexample.com', '*.example.com'));
  assert.ok(domainMatches('Pkgs.Example.org.', 'pkgs.example.org'));
});

test("the registries the user's package managers are configured with are allowed; a workspace's own files are not read; nothing is hard-coded", () => {
  const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-registries-')));
  const ws = path.join(home, 'ws');
  fs.mkdirSync(path.join(home, '.config', 'pip'), { recursive: true });
  fs.mkdirSync(ws);
  fs.writeFileSync(
    path.join(home, '.npmrc'),
    'registry=https://npm.mirror.example/\n//npm.mirror.example/:_authToken=secret\n',
  );
  fs.writeFileSync(path.join(ws, '.npmrc'), '@acme:registry=https://npm.acme.example/api/\n');
  fs.writeFileSync(path.join(ws, '.yarnrc.yml'), 'npmRegistryServer: "https://yarn.mirror.example"\n');
  fs.writeFileSync(
    path.join(home, '.config', 'pip', 'pip.conf'),
    '[global]\nindex-url = https://pypi.mirror.example/simple\nextra-index-url = https://extra.example/simple\n',
  );
  try {
    assert.deepEqual(
      configuredRegistryDomains({
        home,
        roots: [ws],
        env: { GOPROXY: 'https://goproxy.example,direct', UV_INDEX_URL: 'not a url' },
      }),
      // The workspace's .npmrc and .yarnrc.yml reach the list only once approved (trust/items.ts).
      ['extra.example', 'goproxy.example', 'npm.mirror.example', 'pypi.mirror.example'],
    );
    assert.deepEqual(configuredRegistryDomains({ home: path.join(home, 'none'), roots: [], env: {} }), []);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

async function fixture(answer: ApprovalDecision, allowedDomains: string[] = ['allowed.test']) {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-proxy-ws-')));
  const stateDir = path.join(ws, '.keel');
  fs.mkdirSync(stateDir);
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.headers.host} ${req.url}`);
    res.end(`hello from ${req.headers.host}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const asked: ApprovalRequest[] = [];
  const audit: Record<string, unknown>[] = [];
  const sandbox = createSandbox({
    roots: [ws],
    stateDir,
    settings: { allowedDomains },
    approvals: {
      ask: async (request) => {
        asked.push(request);
        return answer;
      },
    },
    audit: (entry) => audit.push(entry),
    resolveHost: (host) => (host.endsWith('.test') ? '127.0.0.1' : host),
  });
  const shell = createNodeShell({ sandbox });
  const run = (command: string) =>
    shell.run({ command, cwd: ws, env: { PATH: process.env.PATH ?? '' }, timeoutMs: 20_000 });
  const done = () => {
    sandbox.dispose();
    server.close();
    fs.rmSync(ws, { recursive: true, force: true });
  };
  return { ws, stateDir, port, hits, asked, audit, sandbox, run, done };
}

test('allowed domain: plain HTTP and CONNECT reach the server; no direct route out', {
  skip: !available && 'needs bwrap, socat and curl',
}, async () => {
  const f = await fixture('deny');
  try {
    assert.equal(f.sandbox.network.proxy, true, f.sandbox.network.reason);
    assert.match(f.sandbox.info.summary, /domain proxy/);
    const plain = await f.run(`curl -sS http://allowed.test:${f.port}/plain`);
    assert.equal(plain.exitCode, 0, plain.stderr);
    assert.equal(plain.stdout, `hello from allowed.test:${f.port}\n`);
    const tunnel = await f.run(`curl -sS --proxytunnel http://allowed.test:${f.port}/tunnel`);
    assert.equal(tunnel.exitCode, 0, tunnel.stderr);
    assert.match(tunnel.stdout, /hello from allowed\.test/);
    assert.deepEqual(f.hits, [`allowed.test:${f.port} /plain`, `allowed.test:${f.port} /tunnel`]);
    assert.equal(f.asked.length, 0, 'an allowed domain never asks');
    // Around the proxy there is no way out: the host's loopback is not this namespace's.
    const direct = await f.run(`curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:${f.port}/direct`);
    assert.notEqual(direct.exitCode, 0);
    assert.equal(f.hits.length, 2);
    assert.deepEqual(
      f.audit.map((e) => [e.type, e.domain, e.decision, e.source, e.method]),
      [
        ['network_decision', 'allowed.test', 'allow', 'allow-list', 'GET'],
        ['network_decision', 'allowed.test', 'allow', 'allow-list', 'CONNECT'],
      ],
    );
  } finally {
    f.done();
  }
});

test('an allowed name that is this machine (localhost, 127.0.0.1) is refused: no way around the loopback rule', {
  skip: !available && 'needs bwrap, socat and curl',
}, async () => {
  const f = await fixture('allow_session', ['localhost', '127.0.0.1']);
  try {
    for (const url of [`http://localhost:${f.port}/p`, `http://127.0.0.1:${f.port}/p`]) {
      const plain = await f.run(`curl -sS -i --noproxy '' --proxy "$HTTP_PROXY" ${url}`);
      assert.match(plain.stdout, /^HTTP\/1\.1 403 Forbidden/, plain.stderr);
      assert.match(plain.stdout, /an address of this machine \(127\.0\.0\.1\)/);
      const tunnel = await f.run(`curl -sS --noproxy '' --proxy "$HTTP_PROXY" --proxytunnel ${url}`);
      assert.notEqual(tunnel.exitCode, 0);
      assert.match(tunnel.stderr, /403/);
      assert.match(tunnel.denials?.[0]?.detail ?? '', /an address of this machine/);
    }
    assert.deepEqual(f.hits, [], 'the host server was never reached');
    assert.equal(f.asked.length, 0, 'nothing to ask: the answer is no');
  } finally {
    f.done();
  }
});

test('a new domain asks; deny gives the command a 403 with the reason and SANDBOX_DENIED names it', {
  skip: !available && 'needs bwrap, socat and curl',
}, async () => {
  const f = await fixture('deny');
  try {
    const first = await f.run(`curl -sS -i --fail-with-body http://denied.test:${f.port}/x`);
    assert.match(first.stdout, /^HTTP\/1\.1 403 Forbidden/);
    assert.match(
      first.stdout,
      /network access to denied\.test was refused: access to denied\.test was not approved/,
    );
    assert.deepEqual(first.denials, [
      {
        kind: 'network',
        target: `denied.test:${f.port}`,
        detail: 'access to denied.test was not approved',
      },
    ]);
    assert.equal(f.asked.length, 1);
    assert.equal(f.asked[0]?.kind, 'network');
    assert.match(f.asked[0]?.title ?? '', /denied\.test/);
    // A command that succeeds anyway is not made an error (the refusal is in the audit).
    const shrugged = await f.run(`curl -sS http://denied.test:${f.port}/z`);
    assert.equal(shrugged.exitCode, 0);
    assert.equal(shrugged.denials, undefined);
    // HTTPS-style tunnel: refused at CONNECT, and the user is not asked twice.
    const second = await f.run(`curl -sS --proxytunnel http://denied.test:${f.port}/y`);
    assert.notEqual(second.exitCode, 0);
    assert.match(second.stderr, /403/);
    assert.equal(f.asked.length, 1);
    assert.deepEqual(f.hits, []);
    assert.deepEqual(
      f.audit.map((e) => [e.domain, e.decision, e.source]),
      [
        ['denied.test', 'deny', 'user'],
        ['denied.test', 'deny', 'denied-before'],
        ['denied.test', 'deny', 'denied-before'],
      ],
    );
  } finally {
    f.done();
  }
});

test('"always" saves the domain for this workspace, outside it: a command cannot grant itself by writing .keel/network.json', {
  skip: !available && 'needs bwrap, socat and curl',
}, async () => {
  const f = await fixture('allow_session');
  try {
    const first = await f.run(`curl -sS http://new.test:${f.port}/a`);
    assert.equal(first.exitCode, 0, first.stderr);
    assert.equal(f.asked.length, 1);
    const file = path.join(workspaceStateHome(path.dirname(f.stateDir)), 'network.json');
    const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.deepEqual(saved, { allowedDomains: ['new.test'] });
    assert.ok(!fs.existsSync(path.join(f.stateDir, 'network.json')), 'nothing in the workspace');
    const tamper = await f.run(`echo '{"allowedDomains":["*"]}' > .keel/network.json`);
    assert.notEqual(tamper.exitCode, 0);
    assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), saved);
    const again = await f.run(`curl -sS http://new.test:${f.port}/b`);
    assert.equal(again.exitCode, 0, again.stderr);
    assert.equal(f.asked.length, 1, 'asked once');
    assert.equal(f.hits.length, 2);
  } finally {
    f.done();
  }
});

test('without socat there is no proxy: the sandbox has no network at all and says why', {
  skip: probeSandbox({ bwrapPath: 'bwrap' }).tier !== 'bwrap' && 'no bwrap',
}, async () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-proxy-none-')));
  const sandbox = createSandbox({ roots: [ws], settings: { socatPath: '/nonexistent/socat' } });
  try {
    assert.equal(sandbox.network.proxy, false);
    assert.match(sandbox.network.reason ?? '', /\/nonexistent\/socat is not installed/);
    assert.match(sandbox.info.summary, /no network/);
    const wrapped = sandbox.wrap(['true'], { cwd: ws });
    assert.ok(wrapped?.args.includes('--unshare-net'));
    assert.equal(wrapped?.env.HTTPS_PROXY, undefined);
    wrapped?.release();
  } finally {
    sandbox.dispose();
    fs.rmSync(ws, { recursive: true, force: true });
  }
});

test('a bridge that fails after the sandbox was made leaves no network, and the sandbox says why', {
  skip: probeSandbox({ bwrapPath: 'bwrap' }).tier !== 'bwrap' && 'no bwrap',
}, async () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-proxy-dying-')));
  // A "socat" that exists but dies at once: the bridge starts in the background and never listens.
  const socat = path.join(ws, 'socat');
  fs.writeFileSync(socat, '#!/bin/sh\necho "socat: cannot bind" >&2\nexit 1\n', { mode: 0o755 });
  const sandbox = createSandbox({ roots: [ws], settings: { socatPath: socat } });
  try {
    // Made without waiting for the bridge: the summary promises the proxy until a command asks.
    assert.match(sandbox.info.summary, /network only through Keel's domain proxy/);
    const wrapped = sandbox.wrap(['true'], { cwd: ws });
    assert.ok(wrapped?.args.includes('--unshare-net'), 'the command runs with no network at all');
    assert.equal(wrapped?.env.HTTPS_PROXY, undefined);
    wrapped?.release();
    assert.equal(sandbox.network.proxy, false);
    assert.match(sandbox.network.reason ?? '', /network bridge (exited|is gone)/);
    assert.match(sandbox.info.summary, /no network/);
  } finally {
    sandbox.dispose();
    fs.rmSync(ws, { recursive: true, force: true });
  }
});
