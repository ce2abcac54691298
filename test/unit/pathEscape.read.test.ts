import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { rgPath } from '@vscode/ripgrep';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { createGlobTool } from '../../src/agent/tools/glob.ts';
import { createGrepTool } from '../../src/agent/tools/grep.ts';
import { createLsTool } from '../../src/agent/tools/ls.ts';
import type {
  AnyToolDefinition,
  ToolContext,
  ToolDefinition,
  ToolResult,
} from '../../src/agent/tools/protocol.ts';
import { renderForModel } from '../../src/agent/tools/protocol.ts';
import { createReadTool } from '../../src/agent/tools/read.ts';

// Every way out of the workspace, through every read-only tool. The outside tree holds a secret; no
// result (text, data, error) may ever contain it.

const SECRET = 'KEEL-SECRET-7f3a9c-do-not-leak';
let base = '';
let ws = '';
let outside = '';
const reads: string[] = [];

function ctx(): ToolContext {
  const host = createNodeHost({ workspace: ws, approvals: { ask: async () => 'deny' }, ripgrepPath: rgPath });
  return {
    host,
    sessionId: 's',
    toolUseId: 'toolu_escape',
    signal: new AbortController().signal,
    ledger: {
      recordRead: (p) => void reads.push(p),
      lastHash: () => undefined,
      recordWrite: () => {},
      forget: () => {},
    },
    guard: createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir }),
    audit: () => {},
    update: () => {},
  };
}

async function call<I, D>(tool: ToolDefinition<I, D>, input: unknown): Promise<ToolResult<D>> {
  return tool.execute(tool.inputSchema.parse(input), ctx());
}

function assertNoLeak(result: ToolResult): void {
  const everything = `${JSON.stringify(result)}\n${renderForModel(result)}`;
  assert.ok(!everything.includes(SECRET), `secret leaked: ${everything.slice(0, 300)}`);
  assert.ok(!everything.includes('outside-only-name'), 'a name from the outside tree leaked');
}

before(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-escape-')));
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
  fs.mkdirSync(path.join(outside, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(outside, 'secret.txt'), `${SECRET}\n`);
  fs.writeFileSync(path.join(outside, 'sub', 'outside-only-name.txt'), `${SECRET}\n`);
  fs.writeFileSync(path.join(ws, 'src', 'ok.txt'), 'fine\n');
  fs.writeFileSync(path.join(ws, 'src', 'ünïcödé 文件.txt'), 'unicode inside\n');
  fs.symlinkSync(outside, path.join(ws, 'link-dir'));
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'link-file'));
  fs.symlinkSync(path.join(outside, 'missing.txt'), path.join(ws, 'dangling'));
  fs.symlinkSync('../../outside/sub', path.join(ws, 'src', 'relative-link'));
  fs.symlinkSync(path.join(ws, 'loop-b'), path.join(ws, 'loop-a'));
  fs.symlinkSync(path.join(ws, 'loop-a'), path.join(ws, 'loop-b'));
  fs.symlinkSync('/proc/self/root', path.join(ws, 'proc-link'));
});
after(() => fs.rmSync(base, { recursive: true, force: true }));

const tools: ReadonlyArray<readonly [string, AnyToolDefinition, (p: string) => unknown]> = [
  ['Read', createReadTool() as AnyToolDefinition, (p) => ({ path: p })],
  ['LS', createLsTool() as AnyToolDefinition, (p) => ({ path: p })],
  ['Glob', createGlobTool() as AnyToolDefinition, (p) => ({ pattern: '**/*', path: p })],
  [
    'Grep',
    createGrepTool() as AnyToolDefinition,
    (p) => ({ pattern: 'KEEL', path: p, output_mode: 'content' }),
  ],
];

// [description, path (computed lazily: the temp dir exists only after `before`), accepted codes]
const attempts: ReadonlyArray<readonly [string, () => string, readonly string[]]> = [
  ['../ to a sibling dir', () => '../outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['../ to the sibling dir itself', () => '../outside', ['OUTSIDE_WORKSPACE']],
  ['deep ../ chain', () => `src/${'../'.repeat(40)}${outside.slice(1)}/secret.txt`, ['OUTSIDE_WORKSPACE']],
  ['absolute outside path', () => path.join(outside, 'secret.txt'), ['OUTSIDE_WORKSPACE']],
  ['/etc/passwd', () => '/etc/passwd', ['OUTSIDE_WORKSPACE']],
  ['symlink to an outside dir', () => 'link-dir', ['OUTSIDE_WORKSPACE']],
  ['file through a symlinked outside dir', () => 'link-dir/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['relative symlink to outside', () => 'src/relative-link', ['OUTSIDE_WORKSPACE']],
  ['symlink to an outside file', () => 'link-file', ['OUTSIDE_WORKSPACE']],
  ['dangling symlink to outside', () => 'dangling', ['OUTSIDE_WORKSPACE']],
  ['home dir', () => '~/', ['OUTSIDE_WORKSPACE']],
  ['file under home', () => '~/.bashrc', ['OUTSIDE_WORKSPACE']],
  ['file:// URL', () => 'file:///etc/passwd', ['OUTSIDE_WORKSPACE']],
  ['file:// URL to the secret', () => `file://${outside}/secret.txt`, ['OUTSIDE_WORKSPACE']],
  [
    'percent-encoded ../ in a file URL',
    () => `file://${ws}/%2e%2e/outside/secret.txt`,
    ['OUTSIDE_WORKSPACE'],
  ],
  ['unicode name outside', () => '../outside/ünï/文件.txt', ['OUTSIDE_WORKSPACE']],
  ['NUL byte', () => 'src/ok.txt\0../../outside/secret.txt', ['INVALID_PARAM']],
  ['NUL byte in a file URL', () => 'file:///etc/passwd%00.txt', ['INVALID_PARAM', 'OUTSIDE_WORKSPACE']],
  ['over-long component', () => `src/${'a'.repeat(300)}`, ['INVALID_PARAM']],
  ['over-long path', () => 'a/'.repeat(3000), ['INVALID_PARAM']],
  ['symlink loop', () => 'loop-a', ['INVALID_PARAM']],
  [
    'missing dir cancelled by .. before a link',
    () => 'missing/../link-dir/secret.txt',
    ['OUTSIDE_WORKSPACE'],
  ],
  [
    'missing dir cancelled by .. before a link (dir)',
    () => 'src/missing/../../link-dir',
    ['OUTSIDE_WORKSPACE'],
  ],
  ['file component cancelled by ..', () => 'src/ok.txt/../../link-dir', ['OUTSIDE_WORKSPACE']],
  ['/proc/self/root', () => `/proc/self/root${outside}/secret.txt`, ['OUTSIDE_WORKSPACE']],
  ['/proc/self/cwd', () => '/proc/self/cwd/package.json', ['OUTSIDE_WORKSPACE']],
  ['/dev/stdin', () => '/dev/stdin', ['OUTSIDE_WORKSPACE']],
  ['symlink to /proc/self/root', () => 'proc-link/etc/passwd', ['OUTSIDE_WORKSPACE']],
  ['backslash separators', () => '..\\outside\\secret.txt', ['OUTSIDE_WORKSPACE']],
  ['percent-encoded dots', () => '%2e%2e/outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['double-encoded dots', () => '%252e%252e/outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['overlong UTF-8 dots', () => '%c0%ae%c0%ae/outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['fullwidth dots', () => '\uff0e\uff0e/outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['one-dot leaders', () => '\u2024\u2024/outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['zero-width space between dots', () => '.\u200b./outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['trailing space on ..', () => '.. /outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['dot filter bypass ....//', () => '....//outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['newline after ..', () => '..\n/outside/secret.txt', ['OUTSIDE_WORKSPACE']],
  ['NUL after an escape', () => '../outside/secret.txt\0.txt', ['OUTSIDE_WORKSPACE']],
  ['Windows drive', () => 'C:\\Windows\\win.ini', ['OUTSIDE_WORKSPACE']],
  ['UNC share', () => '\\\\server\\share\\x', ['OUTSIDE_WORKSPACE']],
  ['upper-case FILE URL', () => 'FILE:///etc/passwd', ['OUTSIDE_WORKSPACE']],
  ['file URL with a host', () => `file://server${ws}/src/ok.txt`, ['OUTSIDE_WORKSPACE']],
  ['~user', () => '~root/.bashrc', ['OUTSIDE_WORKSPACE']],
  ['$HOME', () => '$HOME/.bashrc', ['OUTSIDE_WORKSPACE']],
  [
    'many ../ after a long valid prefix',
    () => `${'a/'.repeat(200)}${'../'.repeat(201)}outside/secret.txt`,
    ['OUTSIDE_WORKSPACE'],
  ],
  ['4096+ chars then out', () => `${'x'.repeat(5000)}/../../outside/secret.txt`, ['OUTSIDE_WORKSPACE']],
];

for (const [toolName, tool, input] of tools) {
  describe(`${toolName} stays inside the workspace`, () => {
    for (const [what, makePath, codes] of attempts) {
      test(what, async () => {
        const before = reads.length;
        const r = await call(tool, input(makePath()));
        assert.equal(r.status, 'error', `expected an error, got: ${r.text.slice(0, 200)}`);
        assert.ok(codes.includes(r.error?.code ?? ''), `code ${r.error?.code}: ${r.error?.message}`);
        assertNoLeak(r);
        assert.equal(reads.length, before, 'nothing may be recorded as read');
      });
    }
  });
}

describe('walking the workspace never follows links out', () => {
  test('Glob over everything lists no outside file and no escaping link', async () => {
    const r = await call(createGlobTool(), { pattern: '**/*' });
    assert.equal(r.status, 'success');
    assert.deepEqual(r.data.files, ['src/ok.txt', 'src/ünïcödé 文件.txt']);
    assertNoLeak(r);
  });

  test('Glob static patterns through a symlinked dir end in OUTSIDE_WORKSPACE', async () => {
    for (const pattern of [
      'link-dir/secret.txt',
      'link-dir/*',
      'link-dir/**',
      'src/relative-link/*.txt',
      'link-file',
    ]) {
      const r = await call(createGlobTool(), { pattern });
      assert.equal(r.status, 'error', pattern);
      assert.equal(r.error?.code, 'OUTSIDE_WORKSPACE', pattern);
      assertNoLeak(r);
    }
  });

  test('Glob patterns that climb out are refused as escapes', async () => {
    for (const pattern of [
      '../outside/*',
      '../**',
      `${outside}/*`,
      '{..,src}/*',
      '{src,{x,..}}/**',
      'src/../../outside/*',
      '**/../../*',
      '~/*',
      '@(..)/*',
      '[.][.]/*',
      '\\.\\./*',
      '..\\*',
      '%2e%2e/*',
      '\uff0e\uff0e/*',
      '{/etc,src}/*',
      'C:/*',
      'file:///etc/*',
    ]) {
      const r = await call(createGlobTool(), { pattern });
      assert.equal(r.error?.code, 'OUTSIDE_WORKSPACE', pattern);
      assertNoLeak(r);
    }
    // One level up from a subfolder stays inside: not an escape, but still not how Glob is used.
    const up = await call(createGlobTool(), { pattern: '../*', path: 'src' });
    assert.equal(up.error?.code, 'INVALID_PARAM');
  });

  test('Grep glob filters that name a place outside are refused as escapes', async () => {
    for (const glob of ['../**', '!../x', `${outside}/**`, '{..,x}/**', '~/*', '..\\**', 'C:\\*']) {
      const r = await call(createGrepTool(), { pattern: 'KEEL', glob, output_mode: 'content' });
      assert.equal(r.error?.code, 'OUTSIDE_WORKSPACE', glob);
      assertNoLeak(r);
    }
    // Option-looking filters are values, never flags (no --follow smuggled in).
    for (const glob of ['--follow', '-L', '--pre=cat']) {
      const r = await call(createGrepTool(), { pattern: SECRET.slice(0, 10), glob, output_mode: 'content' });
      assertNoLeak(r);
    }
  });

  test('Grep over the whole workspace does not search through links', async () => {
    const r = await call(createGrepTool(), { pattern: SECRET.slice(0, 10), output_mode: 'content' });
    assert.equal(r.status, 'success');
    assert.deepEqual(r.data.files, []);
    assertNoLeak(r);
  });

  test('LS shows escaping links as not followed, never their contents', async () => {
    const r = await call(createLsTool(), { depth: 5 });
    assert.equal(r.status, 'success');
    assert.match(r.text, /^link-dir -> \(points outside the workspace; not followed\)$/m);
    assert.match(r.text, /^dangling -> \(points outside the workspace; not followed\)$/m);
    assertNoLeak(r);
  });

  test('in-workspace unicode names work normally', async () => {
    const r = await call(createReadTool(), { path: 'src/ünïcödé 文件.txt' });
    assert.equal(r.status, 'success');
    assert.equal(r.text, '     1\tunicode inside');
    const g = await call(createGrepTool(), { pattern: 'unicode', output_mode: 'files_with_matches' });
    assert.deepEqual(g.data.files, ['src/ünïcödé 文件.txt']);
  });
});
