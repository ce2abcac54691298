import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { findExecutable, probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// Hole 3 end to end, through the BUILT `keel tool Bash` (run `npm run build` first): a repository's
// `.npmrc` names the host's loopback in IPv4-mapped hex as its registry, which used to put it on the
// network allow-list, and a script in the repository then asks Keel's proxy for it (a hostile script
// ignores NO_PROXY). The loopback server must see nothing; the script gets the 403.

const available =
  probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap' && findExecutable('socat') !== undefined;

let victim: http.Server;
let port: number;
const hits: string[] = [];
let home: string;

before(async () => {
  victim = http.createServer((req, res) => {
    hits.push(`${req.headers.host} ${req.url}`);
    res.end('LOOPBACK-SECRET\n');
  });
  await new Promise<void>((r) => victim.listen(0, '127.0.0.1', r));
  port = (victim.address() as AddressInfo).port;
  home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-proxy-cli-home-')));
});
after(() => {
  victim.close();
  fs.rmSync(home, { recursive: true, force: true });
});

// Straight to the proxy named in HTTP_PROXY, whatever NO_PROXY says.
const FETCH_JS = `const proxy = new URL(process.env.HTTP_PROXY);
require('http').get({ host: proxy.hostname, port: proxy.port, path: process.argv[2] }, (r) => {
  let body = '';
  r.on('data', (c) => (body += c));
  r.on('end', () => { console.log(r.statusCode, body); process.exit(r.statusCode === 200 ? 0 : 1); });
}).on('error', (e) => { console.error(e.message); process.exit(2); });
`;

test('a workspace .npmrc naming [::ffff:7f00:1] as registry does not open the host loopback to sandboxed commands', {
  skip: !available && 'needs bubblewrap and socat',
}, async () => {
  const ws = tempWorkspace({
    '.npmrc': `registry=http://[::ffff:7f00:1]:${port}/\n@meta:registry=http://[::ffff:a9fe:a9fe]/\n`,
    'fetch.js': FETCH_JS,
  });
  // Even approved (the user ran `keel trust --yes`), a registry at an address of this machine stays off.
  const trusted = await runKeel(
    ['trust', '--workspace', ws, '--yes'],
    cliEnv('http://127.0.0.1:9', { HOME: home }),
  );
  assert.equal(trusted.code, 0, trusted.stderr);
  for (const url of [
    `http://[::ffff:7f00:1]:${port}/-/whoami`,
    'http://[::ffff:a9fe:a9fe]/latest/meta-data/',
  ]) {
    const run = await runKeel(
      [
        'tool',
        'Bash',
        JSON.stringify({ command: `node fetch.js ${url}` }),
        '--workspace',
        ws,
        '--approve',
        'never',
      ],
      cliEnv('http://127.0.0.1:9', { HOME: home }),
    );
    const result = JSON.parse(run.stdout) as {
      data: { stdout: string; sandboxed: boolean };
      error?: { code: string; message: string };
    };
    assert.equal(result.data.sandboxed, true, run.stdout);
    assert.equal(result.error?.code, 'SANDBOX_DENIED', run.stdout);
    assert.match(result.data.stdout, /^403 Keel sandbox: network access to ::ffff:\w+:\w+ was refused/);
    assert.doesNotMatch(result.data.stdout, /LOOPBACK-SECRET/);
  }
  assert.deepEqual(hits, [], 'the loopback server saw no request');
  const audit = fs
    .readFileSync(path.join(ws, '.keel', 'audit.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const refused = audit
    .filter((e) => e.type === 'network_allowlist_refused')
    .map((e) => [e.domain, e.reason]);
  assert.ok(
    refused.some(
      ([d, r]) => d === '::ffff:7f00:1' && /an address of this machine \(127\.0\.0\.1/.test(String(r)),
    ),
    JSON.stringify(refused),
  );
  assert.ok(refused.some(([d, r]) => d === '::ffff:a9fe:a9fe' && /cloud metadata/.test(String(r))));
  // Nothing was "allowed" from the allow-list: neither address is on it any more.
  assert.ok(!audit.some((e) => e.type === 'network_decision' && e.decision === 'allow'));
});
