import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type { ApprovalDecision, ApprovalRequest } from '../../src/agent/host.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { classifyStatic, createProtectedPaths } from '../../src/agent/safety/paths/protectedPaths.ts';
import { createReadLedger, sha256Hex } from '../../src/agent/safety/guards/readLedger.ts';
import { createEditTool } from '../../src/agent/tools/edit.ts';
import { createWriteGate } from '../../src/agent/tools/editing/gate.ts';
import { createMultiEditTool } from '../../src/agent/tools/multiEdit.ts';
import type { AuditEntry, ToolContext, ToolResult } from '../../src/agent/tools/protocol.ts';
import { renderForModel } from '../../src/agent/tools/protocol.ts';
import { createWriteTool } from '../../src/agent/tools/write.ts';

const temps: string[] = [];
after(() => {
  for (const t of temps) fs.rmSync(t, { recursive: true, force: true });
});

function setup(options: { decisions?: ApprovalDecision[]; git?: boolean } = {}) {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-edit-')));
  temps.push(base);
  const ws = path.join(base, 'ws');
  fs.mkdirSync(ws);
  if (options.git) execFileSync('git', ['init', '-q'], { cwd: ws });
  const asked: ApprovalRequest[] = [];
  const decisions = [...(options.decisions ?? [])];
  const host = createNodeHost({
    workspace: ws,
    approvals: {
      async ask(request) {
        asked.push(request);
        return decisions.shift() ?? 'deny';
      },
    },
  });
  const guard = createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir });
  const ledger = createReadLedger();
  const audits: AuditEntry[] = [];
  const gate = createWriteGate();
  const tools = {
    edit: createEditTool({ gate }),
    multi: createMultiEditTool({ gate }),
    write: createWriteTool({ gate }),
  };
  const ctx = (signal: AbortSignal = new AbortController().signal): ToolContext => ({
    host,
    sessionId: 'session-1',
    toolUseId: 'tool-1',
    signal,
    ledger,
    guard,
    audit: (e) => audits.push(e),
    update: () => {},
  });
  const abs = (rel: string) => path.join(ws, rel);
  const put = (rel: string, content: string | Uint8Array, mode?: number) => {
    fs.mkdirSync(path.dirname(abs(rel)), { recursive: true });
    fs.writeFileSync(abs(rel), content);
    if (mode !== undefined) fs.chmodSync(abs(rel), mode);
  };
  /** What the Read tool does: record the hash of the full bytes under the canonical path. */
  const read = (rel: string) => {
    const r = guard.resolve(rel);
    assert.ok(r.ok);
    ledger.recordRead(r.path, sha256Hex(fs.readFileSync(r.path)));
  };
  const bytes = (rel: string) => fs.readFileSync(abs(rel));
  const text = (rel: string) => fs.readFileSync(abs(rel), 'utf8');
  const edit = (
    input: { path: string; old_string: string; new_string: string; replace_all?: boolean },
    s?: AbortSignal,
  ) => tools.edit.execute(input, ctx(s));
  const multi = (input: {
    path: string;
    edits: { old_string: string; new_string: string; replace_all?: boolean }[];
  }) => tools.multi.execute(input, ctx());
  const write = (input: { path: string; content: string }, s?: AbortSignal) =>
    tools.write.execute(input, ctx(s));
  return { ws, base, host, asked, audits, put, read, bytes, text, edit, multi, write, abs, ledger, guard };
}

function errorCode(result: ToolResult): string | undefined {
  return result.error?.code;
}

test('Edit refuses a file that was not Read in this session and leaves it alone', async () => {
  const t = setup();
  t.put('a.ts', 'const a = 1;\n');
  const result = await t.edit({ path: 'a.ts', old_string: 'a = 1', new_string: 'a = 2' });
  assert.equal(errorCode(result), 'NOT_READ');
  assert.match(result.error!.suggestion, /Read a\.ts/);
  assert.equal(t.text('a.ts'), 'const a = 1;\n');
});

test('a change since the Read is a CONFLICT even when size and mtime are unchanged', async () => {
  const t = setup();
  t.put('a.ts', 'const a = 1;\n');
  t.read('a.ts');
  const { mtime, atime } = fs.statSync(t.abs('a.ts'));
  fs.writeFileSync(t.abs('a.ts'), 'const b = 1;\n');
  fs.utimesSync(t.abs('a.ts'), atime, mtime);
  const result = await t.edit({ path: 'a.ts', old_string: 'b = 1', new_string: 'b = 2' });
  assert.equal(errorCode(result), 'CONFLICT');
  assert.match(result.error!.suggestion, /Read it again/);
  assert.equal(t.text('a.ts'), 'const b = 1;\n');
  t.read('a.ts');
  const retry = await t.edit({ path: 'a.ts', old_string: 'b = 1', new_string: 'b = 2' });
  assert.equal(retry.status, 'success');
  assert.equal(t.text('a.ts'), 'const b = 2;\n');
});

test('a unique match is replaced; result names the line and carries a diff for UIs', async () => {
  const t = setup();
  t.put('src/a.ts', 'one\ntwo\nthree\nfour\n');
  t.read('src/a.ts');
  const result = await t.edit({ path: 'src/a.ts', old_string: 'three', new_string: 'THREE\nTHREE-B' });
  assert.equal(result.status, 'success');
  assert.equal(t.text('src/a.ts'), 'one\ntwo\nTHREE\nTHREE-B\nfour\n');
  assert.match(result.text, /^Edited src\/a\.ts: 1 replacement at line 3 \(\+2 −1 lines\)\./);
  const ui = result.ui as { diff: string; firstChangedLine: number; path: string };
  assert.equal(ui.firstChangedLine, 3);
  assert.equal(ui.path, 'src/a.ts');
  assert.match(ui.diff, /^--- a\/src\/a\.ts\n\+\+\+ b\/src\/a\.ts\n@@ -1,4 \+1,5 @@/);
  assert.match(ui.diff, /\n-three\n\+THREE\n\+THREE-B\n/);
  // Keel's own write counts as read: a second edit needs no re-read.
  const second = await t.edit({ path: 'src/a.ts', old_string: 'one', new_string: 'ONE' });
  assert.equal(second.status, 'success');
  assert.equal(t.text('src/a.ts'), 'ONE\ntwo\nTHREE\nTHREE-B\nfour\n');
  // No temp files are left next to the file (atomic write via temp + rename).
  assert.deepEqual(fs.readdirSync(t.abs('src')), ['a.ts']);
});

test('an ambiguous match lists every candidate line; replace_all replaces them all', async () => {
  const t = setup();
  t.put('a.py', 'x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n');
  t.read('a.py');
  const result = await t.edit({ path: 'a.py', old_string: 'x = 1', new_string: 'x = 9' });
  assert.equal(errorCode(result), 'AMBIGUOUS_MATCH');
  assert.match(result.error!.message, /3 places.*lines 1, 3, 5/);
  assert.match(result.error!.suggestion, /replace_all/);
  assert.equal(t.text('a.py'), 'x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n');
  const all = await t.edit({ path: 'a.py', old_string: 'x = 1', new_string: 'x = 9', replace_all: true });
  assert.equal(all.status, 'success');
  assert.match(all.text, /3 replacements at lines 1, 3, 5/);
  assert.equal((all.data as { replacements: number }).replacements, 3);
  assert.equal(t.text('a.py'), 'x = 9\ny = 2\nx = 9\nz = 3\nx = 9\n');
});

test('NO_MATCH shows the most similar region with line numbers on a 10k-line file (its cost: npm run bench rails)', async () => {
  const t = setup();
  const lines = Array.from({ length: 10_000 }, (_, i) => `const value${i} = compute(${i}, "item-${i}");`);
  lines[7341] = 'function parseConfig(input: string, strict = false) {';
  lines[7342] = '  return JSON.parse(input);';
  t.put('big.ts', lines.join('\n'));
  t.read('big.ts');
  const result = await t.edit({
    path: 'big.ts',
    old_string: 'function parseConfig(input: string, strict = true) {\n  return JSON.parse(input);',
    new_string: 'x',
  });
  assert.equal(errorCode(result), 'NO_MATCH');
  assert.match(result.error!.message, /lines 7342-7343/);
  assert.match(result.error!.message, /7342\tfunction parseConfig\(input: string, strict = false\) \{/);
  assert.match(renderForModel(result), /^Error \[NO_MATCH\]/);
  // Line-number prefixes copied from Read output get a specific hint.
  const numbered = await t.edit({
    path: 'big.ts',
    old_string: '  7343\t  return JSON.parse(input);',
    new_string: 'x',
  });
  assert.equal(errorCode(numbered), 'NO_MATCH');
  assert.match(numbered.error!.suggestion, /line-number prefixes/);
});

test('tolerant match (smart quotes, dashes, tabs vs spaces, trailing spaces, NFKC) replaces only that span', async () => {
  const t = setup();
  const original = [
    'header “keep” — untouched   ',
    '\tif (name === “admin”) {   ',
    '\t\treturn ‘root’ – ok;',
    '\t}',
    'ﬁnal “keep” too\t',
    '',
  ].join('\n');
  t.put('t.js', original);
  t.read('t.js');
  const result = await t.edit({
    path: 't.js',
    old_string: '    if (name === "admin") {\n        return \'root\' - ok;',
    new_string: '    if (name === "root") {\n        return \'admin\';',
  });
  assert.equal(result.status, 'success', result.text);
  assert.match(result.text, /normalising/);
  const expected = [
    'header “keep” — untouched   ',
    '    if (name === "root") {\n        return \'admin\';',
    '\t}',
    'ﬁnal “keep” too\t',
    '',
  ].join('\n');
  assert.equal(t.text('t.js'), expected);
  t.read('t.js');
  const nfkc = await t.edit({ path: 't.js', old_string: 'final "keep" too', new_string: 'last' });
  assert.equal(nfkc.status, 'success', nfkc.text);
  assert.equal(t.text('t.js'), expected.replace('ﬁnal “keep” too', 'last'));
});

test('MultiEdit applies every edit or none', async () => {
  const t = setup();
  t.put('m.ts', 'alpha\nbeta\ngamma\n');
  t.read('m.ts');
  const bad = await t.multi({
    path: 'm.ts',
    edits: [
      { old_string: 'alpha', new_string: 'ALPHA' },
      { old_string: 'delta', new_string: 'DELTA' },
    ],
  });
  assert.equal(errorCode(bad), 'NO_MATCH');
  assert.match(bad.error!.message, /edit 2 of 2/);
  assert.equal(t.text('m.ts'), 'alpha\nbeta\ngamma\n');
  const good = await t.multi({
    path: 'm.ts',
    edits: [
      { old_string: 'alpha', new_string: 'ALPHA' },
      { old_string: 'ALPHA\nbeta', new_string: 'ALPHA\nBETA' },
      { old_string: 'gamma', new_string: 'GAMMA' },
    ],
  });
  assert.equal(good.status, 'success', good.text);
  assert.equal(t.text('m.ts'), 'ALPHA\nBETA\nGAMMA\n');
  assert.match(good.text, /3 edits, 3 replacements/);
});

test('no-op edits are rejected without touching the file', async () => {
  const t = setup();
  t.put('n.txt', 'same\n');
  t.read('n.txt');
  const mtime = fs.statSync(t.abs('n.txt')).mtimeMs;
  const same = await t.edit({ path: 'n.txt', old_string: 'same', new_string: 'same' });
  assert.equal(errorCode(same), 'INVALID_PARAM');
  const undo = await t.multi({
    path: 'n.txt',
    edits: [
      { old_string: 'same', new_string: 'other' },
      { old_string: 'other', new_string: 'same' },
    ],
  });
  assert.equal(errorCode(undo), 'INVALID_PARAM');
  const rewrite = await t.write({ path: 'n.txt', content: 'same\n' });
  assert.equal(errorCode(rewrite), 'INVALID_PARAM');
  const empty = await t.edit({ path: 'n.txt', old_string: '', new_string: 'x' });
  assert.equal(errorCode(empty), 'INVALID_PARAM');
  assert.match(empty.error!.suggestion, /Write/);
  assert.equal(fs.statSync(t.abs('n.txt')).mtimeMs, mtime);
  const missing = await t.edit({ path: 'nope.txt', old_string: 'a', new_string: 'b' });
  assert.equal(errorCode(missing), 'NOT_FOUND');
});

test('CRLF, BOM, UTF-16, Latin-1 and the file mode survive an edit', async () => {
  const t = setup();
  t.put('crlf.txt', '\ufeffone\r\ntwo\r\nthree\r\n', 0o755);
  t.read('crlf.txt');
  const r1 = await t.edit({ path: 'crlf.txt', old_string: 'one\ntwo', new_string: 'one\ntwo\nTWO-B' });
  assert.equal(r1.status, 'success', r1.text);
  assert.deepEqual(t.bytes('crlf.txt'), Buffer.from('\ufeffone\r\ntwo\r\nTWO-B\r\nthree\r\n'));
  assert.equal(fs.statSync(t.abs('crlf.txt')).mode & 0o777, 0o755);

  t.put('lf.txt', 'a\nb\n');
  t.read('lf.txt');
  await t.edit({ path: 'lf.txt', old_string: 'a', new_string: 'x\r\ny' });
  assert.equal(t.text('lf.txt'), 'x\ny\nb\n');

  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('héllo\r\nwörld\r\n', 'utf16le')]);
  t.put('u16.txt', utf16);
  t.read('u16.txt');
  const r2 = await t.edit({ path: 'u16.txt', old_string: 'wörld', new_string: 'wörld ✓' });
  assert.equal(r2.status, 'success', r2.text);
  assert.deepEqual(
    t.bytes('u16.txt'),
    Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('héllo\r\nwörld ✓\r\n', 'utf16le')]),
  );

  const latin1 = Buffer.from('caf\xe9 = 1\nna\xefve = 2\n', 'latin1');
  t.put('l1.txt', latin1);
  t.read('l1.txt');
  const r3 = await t.edit({ path: 'l1.txt', old_string: 've = 2', new_string: 've = 3' });
  assert.equal(r3.status, 'success', r3.text);
  assert.deepEqual(t.bytes('l1.txt'), Buffer.from('caf\xe9 = 1\nna\xefve = 3\n', 'latin1'));
  const r4 = await t.edit({ path: 'l1.txt', old_string: 've = 3', new_string: 've = ✓' });
  assert.equal(errorCode(r4), 'INVALID_PARAM');

  t.put('bin.dat', Buffer.from([0x00, 0x01, 0x02, 0x41]));
  t.read('bin.dat');
  assert.equal(errorCode(await t.edit({ path: 'bin.dat', old_string: 'A', new_string: 'B' })), 'BINARY_FILE');
});

test('Write creates new files (with parents) without a Read, but overwriting needs one', async () => {
  const t = setup();
  const created = await t.write({ path: 'deep/new/dir/file.md', content: '# Title\n\nBody\n' });
  assert.equal(created.status, 'success', created.text);
  assert.equal(t.text('deep/new/dir/file.md'), '# Title\n\nBody\n');
  assert.match(created.text, /^Created deep\/new\/dir\/file\.md: created \(3 lines\)/);
  assert.equal((created.ui as { firstChangedLine: number }).firstChangedLine, 1);
  const change = t.audits.find((a) => a.type === 'file_change');
  assert.deepEqual(
    { ...change },
    {
      type: 'file_change',
      path: 'deep/new/dir/file.md',
      action: 'create',
      bytes_before: 0,
      bytes_after: 14,
      tool: 'Write',
    },
  );

  t.put('old.txt', '\ufefffirst\r\nsecond\r\n', 0o600);
  const unread = await t.write({ path: 'old.txt', content: 'replaced\n' });
  assert.equal(errorCode(unread), 'NOT_READ');
  assert.equal(t.text('old.txt'), '\ufefffirst\r\nsecond\r\n');
  t.read('old.txt');
  const overwrite = await t.write({ path: 'old.txt', content: 'replaced\nlines\n' });
  assert.equal(overwrite.status, 'success', overwrite.text);
  assert.deepEqual(t.bytes('old.txt'), Buffer.from('\ufeffreplaced\r\nlines\r\n'));
  assert.equal(fs.statSync(t.abs('old.txt')).mode & 0o777, 0o600);
  // Writing a directory path is refused.
  assert.equal(errorCode(await t.write({ path: 'deep', content: 'x' })), 'INVALID_PARAM');
});

test('an abort before the write leaves the file untouched', async () => {
  const t = setup();
  t.put('a.txt', 'keep me\n');
  t.read('a.txt');
  const controller = new AbortController();
  controller.abort();
  const result = await t.edit({ path: 'a.txt', old_string: 'keep', new_string: 'lose' }, controller.signal);
  assert.equal(errorCode(result), 'ABORTED');
  assert.equal(t.text('a.txt'), 'keep me\n');
  const created = await t.write({ path: 'b.txt', content: 'x' }, controller.signal);
  assert.equal(errorCode(created), 'ABORTED');
  assert.equal(fs.existsSync(t.abs('b.txt')), false);
});

test('a symlink inside the workspace is edited through: the target changes, the link stays', async () => {
  const t = setup();
  t.put('real/target.txt', 'v1\n');
  fs.symlinkSync('real/target.txt', t.abs('alias.txt'));
  t.read('alias.txt');
  const result = await t.edit({ path: 'alias.txt', old_string: 'v1', new_string: 'v2' });
  assert.equal(result.status, 'success', result.text);
  assert.equal(fs.lstatSync(t.abs('alias.txt')).isSymbolicLink(), true);
  assert.equal(t.text('real/target.txt'), 'v2\n');
  // Both spellings share one ledger entry: the target reads as already read.
  const again = await t.edit({ path: 'real/target.txt', old_string: 'v2', new_string: 'v3' });
  assert.equal(again.status, 'success', again.text);
});

test('protected files ask first; deny leaves them untouched and is audited', async () => {
  const t = setup({ decisions: ['deny', 'allow_session', 'allow_once'] });
  t.put('.git/config', '[core]\n');
  t.read('.git/config');
  const denied = await t.edit({
    path: '.git/config',
    old_string: '[core]',
    new_string: '[core]\n\tbare = true',
  });
  assert.equal(errorCode(denied), 'DENIED_BY_USER');
  assert.ok(denied.error!.suggestion.length > 0);
  assert.equal(t.text('.git/config'), '[core]\n');
  assert.equal(t.asked.length, 1);
  assert.equal(t.asked[0]!.kind, 'protected_write');
  assert.equal(t.asked[0]!.risk, 'high');
  assert.match(t.asked[0]!.detail, /\.git\/config/);
  assert.deepEqual(
    t.audits.map((a) => [a.type, a['decision'] ?? null]),
    [
      ['approval_request', null],
      ['approval_decision', 'deny'],
    ],
  );

  t.put('package-lock.json', '{"lockfileVersion": 3}\n');
  t.read('package-lock.json');
  const allowed = await t.edit({ path: 'package-lock.json', old_string: '3', new_string: '2' });
  assert.equal(allowed.status, 'success', allowed.text);
  // allow_session: the same file is not asked about again in this session.
  const again = await t.edit({ path: 'package-lock.json', old_string: '2', new_string: '1' });
  assert.equal(again.status, 'success', again.text);
  assert.equal(t.asked.length, 2);

  const env = await t.write({ path: '.env', content: 'TOKEN=x\n' });
  assert.equal(env.status, 'success', env.text);
  assert.equal(t.asked.length, 3);

  // Keel's own notes are the agent's to write; its logs are not.
  const memory = await t.write({ path: '.keel/memory/MEMORY.md', content: '- note\n' });
  assert.equal(memory.status, 'success', memory.text);
  assert.equal(t.asked.length, 3);
  const log = await t.write({ path: '.keel/sessions/x.jsonl', content: '{}\n' });
  assert.equal(errorCode(log), 'DENIED_BY_USER');
  assert.equal(fs.existsSync(t.abs('.keel/sessions/x.jsonl')), false);
});

test('protected-path rules: classes, exceptions, and git-ignored files', async () => {
  const scope = { roots: ['/w'], stateDir: '/w/.keel' };
  const reason = (p: string) => {
    const v = classifyStatic(p, scope);
    return v?.protected ? v.reason : v ? 'free' : 'ask-git';
  };
  assert.equal(reason('/w/.git/HEAD'), 'vcs');
  assert.equal(reason('/w/sub/.GIT/config'), 'vcs');
  assert.equal(reason('/w/.keel/audit.jsonl'), 'keel_state');
  assert.equal(reason('/w/.keel/memory/MEMORY.md'), 'free');
  assert.equal(reason('/w/.keel/todo.json'), 'free');
  assert.equal(reason('/w/.keel/progress.md'), 'free');
  assert.equal(reason('/w/app/Cargo.lock'), 'lockfile');
  assert.equal(reason('/w/yarn.lock'), 'lockfile');
  assert.equal(reason('/w/poetry.lock'), 'lockfile');
  assert.equal(reason('/w/.env.production'), 'secret');
  assert.equal(reason('/w/.env.example'), 'ask-git');
  assert.equal(reason('/w/src/index.ts'), 'ask-git');

  const t = setup({ git: true });
  t.put('.gitignore', 'dist/\n*.log\n');
  const checker = createProtectedPaths({ roots: t.guard.roots, stateDir: t.guard.stateDir });
  const check = async (rel: string) => (await checker.check(path.join(t.ws, rel))).protected;
  assert.equal(await check('dist/bundle.js'), true);
  assert.equal(await check('debug.log'), true);
  assert.equal(await check('src/index.ts'), false);

  const plain = setup();
  const outsideGit = createProtectedPaths({ roots: plain.guard.roots, stateDir: plain.guard.stateDir });
  assert.equal((await outsideGit.check(path.join(plain.ws, 'dist/bundle.js'))).protected, false);

  // Through the tool: creating a git-ignored file asks.
  const asked = setup({ git: true, decisions: ['deny'] });
  asked.put('.gitignore', 'build/\n');
  const result = await asked.write({ path: 'build/out.js', content: 'x' });
  assert.equal(errorCode(result), 'DENIED_BY_USER');
  assert.equal(asked.asked[0]!.risk, 'medium');
  assert.equal(fs.existsSync(asked.abs('build/out.js')), false);
});

test('tool definitions are compact and say when not to use them', () => {
  for (const tool of [createEditTool(), createMultiEditTool(), createWriteTool()]) {
    const words = tool.description.split(/\s+/).length;
    assert.ok(words >= 40 && words <= 130, `${tool.name}: ${words} words`);
    assert.match(tool.description, /Do not use/);
    assert.match(tool.description, /Example/);
    assert.equal(tool.readOnly, false);
  }
});
