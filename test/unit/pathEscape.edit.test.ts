import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type { ApprovalRequest } from '../../src/agent/host.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { createReadLedger, sha256Hex } from '../../src/agent/safety/guards/readLedger.ts';
import { createEditTool } from '../../src/agent/tools/edit.ts';
import { createMultiEditTool } from '../../src/agent/tools/multiEdit.ts';
import { renderForModel, type ToolContext, type ToolResult } from '../../src/agent/tools/protocol.ts';
import { createWriteTool } from '../../src/agent/tools/write.ts';

// Every way out of the workspace, through every edit tool, must end in OUTSIDE_WORKSPACE with no
// byte written outside and no byte of an outside file in the result. The corpus is organised by
// class (relative, absolute, symlinked dir/file, dangling link, `..` after a link, URL/encoded,
// home, long, unicode) rather than being a list of known strings.

const SECRET = `TOPSECRET-${randomBytes(6).toString('hex')}`;
const tag = randomBytes(4).toString('hex');
const temps: string[] = [];
after(() => {
  for (const t of temps) fs.rmSync(t, { recursive: true, force: true });
  for (const stray of straysToCheck()) fs.rmSync(stray, { force: true });
});

function straysToCheck(): string[] {
  return [
    path.join(os.homedir(), `keel-escape-${tag}.txt`),
    path.join(os.tmpdir(), `keel-escape-${tag}.txt`),
    `/keel-escape-${tag}.txt`,
  ];
}

/** Every file and link under `dir` (not following links) with content hash and mode. */
function snapshot(dir: string, skip: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d)) {
      const full = path.join(d, name);
      if (full === skip) continue;
      const st = fs.lstatSync(full);
      if (st.isSymbolicLink()) out.set(full, `link:${fs.readlinkSync(full)}`);
      else if (st.isDirectory()) {
        out.set(full, `dir:${st.mode}`);
        walk(full);
      } else
        out.set(full, `file:${st.mode}:${createHash('sha256').update(fs.readFileSync(full)).digest('hex')}`);
    }
  };
  walk(dir);
  return out;
}

function world() {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-escape-')));
  temps.push(base);
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  fs.mkdirSync(ws);
  fs.mkdirSync(path.join(outside, 'dir'), { recursive: true });
  fs.mkdirSync(path.join(base, 'ws-evil'));
  fs.writeFileSync(path.join(outside, 'secret.txt'), `${SECRET}\nline two\n`);
  fs.writeFileSync(path.join(outside, 'dir', 'nested.txt'), `${SECRET} nested\n`);
  fs.writeFileSync(path.join(outside, 'ünïcode-新.txt'), `${SECRET} unicode\n`);
  fs.writeFileSync(path.join(outside, 'hard.txt'), `${SECRET} hard\n`);
  fs.writeFileSync(path.join(base, 'sibling.txt'), `${SECRET} sibling\n`);

  const link = (target: string, at: string) => {
    fs.mkdirSync(path.dirname(path.join(ws, at)), { recursive: true });
    fs.symlinkSync(target, path.join(ws, at));
  };
  link('../outside', 'linkdir');
  link(outside, 'absdir');
  link('../outside/secret.txt', 'linkfile');
  link(path.join(outside, 'secret.txt'), 'abslinkfile');
  link('../outside/new-dangling.txt', 'dangling');
  link(path.join(outside, 'abs-dangling.txt'), 'absdangling');
  link('../outside/newdir', 'danglingdir');
  link('chain2', 'chain1');
  link('../outside', 'chain2');
  link('../..', 'sub/up');
  link('../../../outside', 'a/b/deep');
  link('/', 'rootlink');
  link('linkfile', 'linktolink');
  fs.mkdirSync(path.join(ws, 'src'));
  fs.writeFileSync(path.join(ws, 'src', 'ok.ts'), 'inside\n');
  fs.linkSync(path.join(outside, 'hard.txt'), path.join(ws, 'hard.txt'));

  const asked: ApprovalRequest[] = [];
  // An approvals port that would say yes to anything: escaping must never even reach it.
  const host = createNodeHost({
    workspace: ws,
    approvals: {
      async ask(request) {
        asked.push(request);
        return 'allow_once';
      },
    },
  });
  const guard = createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir });
  const ledger = createReadLedger();
  // As if every outside file had been read: only the guard stands between the tools and them.
  for (const f of ['secret.txt', 'dir/nested.txt', 'ünïcode-新.txt', 'hard.txt']) {
    const p = path.join(outside, f);
    ledger.recordRead(p, sha256Hex(fs.readFileSync(p)));
  }
  ledger.recordRead(path.join(ws, 'hard.txt'), sha256Hex(fs.readFileSync(path.join(ws, 'hard.txt'))));
  const ctx: ToolContext = {
    host,
    sessionId: 's',
    toolUseId: 't',
    signal: new AbortController().signal,
    ledger,
    guard,
    audit: () => {},
    update: () => {},
  };
  return { base, ws, outside, host, guard, ledger, ctx, asked };
}

function corpus(base: string, outside: string): string[] {
  const rel = '../outside/secret.txt';
  return [
    // relative
    rel,
    `./${rel}`,
    `src/../../outside/secret.txt`,
    `src/./../${rel}`,
    ` ${rel} `,
    '../sibling.txt',
    '../ws-evil/new.txt',
    '..',
    `../keel-escape-${tag}.txt`,
    // absolute
    path.join(outside, 'secret.txt'),
    path.join(outside, 'brand-new.txt'),
    `${base}/ws/../outside/secret.txt`,
    `${base}//outside///secret.txt`,
    `/keel-escape-${tag}.txt`,
    path.join(os.tmpdir(), `keel-escape-${tag}.txt`),
    '/etc/passwd',
    // symlinked parent directories (relative, absolute, chained, deep, to /)
    'linkdir/secret.txt',
    'linkdir/brand-new.txt',
    'linkdir/dir/nested.txt',
    'absdir/secret.txt',
    'chain1/secret.txt',
    'chain1/new-in-chain.txt',
    'a/b/deep/secret.txt',
    'sub/up/outside/secret.txt',
    `rootlink${outside}/secret.txt`,
    `rootlink/keel-escape-${tag}.txt`,
    // symlinked files and dangling links as the write target
    'linkfile',
    'abslinkfile',
    'linktolink',
    'dangling',
    'absdangling',
    'danglingdir/new.txt',
    'linkdir',
    // `..` after a symlink component (lexically inside, really outside)
    'linkdir/../outside/secret.txt',
    'linkdir/../sibling.txt',
    'sub/up/ws/../outside/secret.txt',
    `linkdir/../../keel-escape-${tag}.txt`,
    `linkdir/${'x/../'.repeat(40)}secret.txt`,
    // URL / encoded forms
    `file://${outside}/secret.txt`,
    `file://${base}/ws/%2e%2e/outside/secret.txt`,
    `file://${base}/ws/..%2foutside/secret.txt`,
    `file://${base}/ws/linkdir/secret.txt`,
    `file://${encodeURI(path.join(outside, 'ünïcode-新.txt'))}`,
    // home
    `~/keel-escape-${tag}.txt`,
    '~/.bashrc',
    // long
    `${'a/'.repeat(200)}${'../'.repeat(201)}outside/secret.txt`,
    `${'deep-directory-name-'.repeat(10)}/${'../'.repeat(2)}outside/secret.txt`,
    `linkdir/${'n'.repeat(200)}/../secret.txt`,
    `linkdir/${'n'.repeat(300)}/../secret.txt`,
    `linkdir/${'n'.repeat(300)}`,
    `../outside/${'n'.repeat(300)}`,
    `${'../'.repeat(3000)}etc/passwd`,
    '../outside/',
    'linkdir/',
    // a NUL byte after an escape is still an escape
    `${rel}\0.ts`,
    'linkdir/secret.txt\0',
    // unicode
    '../outside/ünïcode-新.txt',
    '../outside/u\u0308ni\u0308code-新.txt',
    'linkdir/ünïcode-新.txt',
    'linkdir/новый-файл.txt',
    '../outside/\u202esecret.txt',
    // a missing (or file) component cancelled by `..` before a link: the link must still be followed
    'missing/../linkdir/secret.txt',
    'missing/../linkdir/brand-new.txt',
    'src/missing/../../linkdir/secret.txt',
    'src/ok.ts/../../linkdir/secret.txt',
    'missing/../danglingdir/new.txt',
    // readings other layers would give the same string
    '%2e%2e/outside/secret.txt',
    '%252e%252e/outside/secret.txt',
    '..%2foutside%2fsecret.txt',
    '..\\outside\\secret.txt',
    '\uff0e\uff0e/outside/secret.txt',
    '\u2024\u2024/outside/secret.txt',
    '.\u200b./outside/secret.txt',
    '.. /outside/secret.txt',
    '....//outside/secret.txt',
    'C:\\Windows\\win.ini',
    '\\\\server\\share\\x.txt',
    'FILE:///etc/passwd',
    `file://server${base}/ws/src/ok.ts`,
    '~root/.profile',
    '$HOME/.bashrc',
    '/proc/self/root/etc/passwd',
    `/proc/self/cwd/keel-escape-${tag}.txt`,
    '/dev/stdin',
  ];
}

type Attempt = (p: string, ctx: ToolContext) => Promise<ToolResult>;

const attempts: Record<string, Attempt> = {
  Edit: (p, ctx) => createEditTool().execute({ path: p, old_string: SECRET, new_string: 'pwned' }, ctx),
  'Edit(replace_all)': (p, ctx) =>
    createEditTool().execute({ path: p, old_string: 'line', new_string: 'pwned', replace_all: true }, ctx),
  MultiEdit: (p, ctx) =>
    createMultiEditTool().execute({ path: p, edits: [{ old_string: SECRET, new_string: 'pwned' }] }, ctx),
  Write: (p, ctx) => createWriteTool().execute({ path: p, content: 'pwned\n' }, ctx),
};

test('every escape through Edit, MultiEdit and Write ends in OUTSIDE_WORKSPACE, nothing outside changes', async () => {
  const w = world();
  const before = snapshot(w.base, w.ws);
  const wsBefore = snapshot(w.ws, path.join(w.ws, '.keel'));
  const failures: string[] = [];
  for (const candidate of corpus(w.base, w.outside)) {
    for (const [name, attempt] of Object.entries(attempts)) {
      const result = await attempt(candidate, w.ctx);
      const rendered = renderForModel(result) + JSON.stringify(result);
      if (result.error?.code !== 'OUTSIDE_WORKSPACE') {
        failures.push(`${name} ${JSON.stringify(candidate)} → ${result.status} ${result.error?.code ?? ''}`);
      }
      if (rendered.includes(SECRET))
        failures.push(`${name} ${JSON.stringify(candidate)} leaked outside content`);
    }
  }
  assert.deepEqual(failures, []);
  assert.deepEqual(snapshot(w.base, w.ws), before, 'something outside the workspace changed');
  assert.deepEqual(snapshot(w.ws, path.join(w.ws, '.keel')), wsBefore, 'the workspace changed');
  for (const stray of straysToCheck()) assert.equal(fs.existsSync(stray), false, `${stray} was created`);
  assert.deepEqual(w.asked, [], 'an escape reached the approval prompt');
});

test('forms that only look like escapes stay inside the workspace and never touch outside', async () => {
  const w = world();
  const before = snapshot(w.base, w.ws);
  for (const candidate of ['src/%2e%2e/lit.txt', 'src/a..b.txt', '..foo', 'src/..\\x.txt', 'a%20b.txt']) {
    for (const [name, attempt] of Object.entries(attempts)) {
      const result = await attempt(candidate, w.ctx);
      assert.ok(!renderForModel(result).includes(SECRET), `${name} ${candidate} leaked`);
      if (result.status === 'success') {
        const r = w.guard.resolve(candidate);
        assert.ok(
          r.ok && r.path.startsWith(`${w.ws}${path.sep}`),
          `${name} ${candidate} wrote at ${r.ok && r.path}`,
        );
      }
    }
  }
  assert.deepEqual(snapshot(w.base, w.ws), before);
});

test('a hard link to an outside file is replaced, not written through', async () => {
  const w = world();
  const before = fs.readFileSync(path.join(w.outside, 'hard.txt'));
  const result = await createWriteTool().execute({ path: 'hard.txt', content: 'replaced\n' }, w.ctx);
  assert.equal(result.status, 'success', renderForModel(result));
  assert.deepEqual(fs.readFileSync(path.join(w.outside, 'hard.txt')), before);
  assert.equal(fs.readFileSync(path.join(w.ws, 'hard.txt'), 'utf8'), 'replaced\n');
});

test('a parent swapped for an outside symlink while approval is pending is caught before writing', async () => {
  const w = world();
  fs.mkdirSync(path.join(w.ws, 'conf'));
  fs.writeFileSync(path.join(w.ws, 'conf', '.env'), 'A=1\n');
  fs.writeFileSync(path.join(w.outside, '.env'), `${SECRET}=1\n`);
  w.ledger.recordRead(path.join(w.outside, '.env'), sha256Hex(fs.readFileSync(path.join(w.outside, '.env'))));
  const { canonical } = (() => {
    const r = w.guard.resolve('conf/.env');
    assert.ok(r.ok);
    return { canonical: r.path };
  })();
  w.ledger.recordRead(canonical, sha256Hex(fs.readFileSync(canonical)));
  const host = {
    ...w.host,
    approvals: {
      async ask() {
        // The attacker's move: while the user looks at the dialog, conf/ becomes a link outside.
        fs.renameSync(path.join(w.ws, 'conf'), path.join(w.ws, 'conf-old'));
        fs.symlinkSync('../outside', path.join(w.ws, 'conf'));
        return 'allow_once' as const;
      },
    },
  };
  const before = snapshot(w.base, w.ws);
  const result = await createWriteTool().execute({ path: 'conf/.env', content: 'B=2\n' }, { ...w.ctx, host });
  assert.ok(
    result.error?.code === 'OUTSIDE_WORKSPACE' || result.error?.code === 'CONFLICT',
    renderForModel(result),
  );
  assert.deepEqual(snapshot(w.base, w.ws), before);
});
