import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { rgPath } from '@vscode/ripgrep';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { createGrepTool, type GrepData } from '../../src/agent/tools/grep.ts';
import { scanGrep } from '../../src/agent/tools/grepScan.ts';
import type { ToolContext, ToolResult } from '../../src/agent/tools/protocol.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// Grep without ripgrep answers with a plain scan (seed 001 ch.3), the same answers as ripgrep gives,
// and results come newest file first. Attacker cases: a catastrophic regex is stopped by the timeout
// (the matcher runs in a worker), and the scan never follows a link out of the workspace.

const temps: string[] = [];
after(() => {
  for (const t of temps) fs.rmSync(t, { recursive: true, force: true });
});

function workspace(files: Record<string, string | Buffer>): string {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-grepscan-')));
  temps.push(root);
  let t = 1_700_000_000;
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(root, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
    fs.utimesSync(abs, t, t); // each file newer than the one before, by a whole second
    t += 1;
  }
  return root;
}

function ctx(root: string, rg: string | null): ToolContext {
  const host = createNodeHost({
    workspace: root,
    approvals: { ask: async () => 'deny' },
    ...(rg ? { ripgrepPath: rg } : {}),
  });
  const reads = new Map<string, string>();
  return {
    host,
    sessionId: 's1',
    toolUseId: 'toolu_1',
    signal: new AbortController().signal,
    ledger: {
      recordRead: (p, h) => void reads.set(p, h),
      lastHash: (p) => reads.get(p),
      recordWrite: (p, h) => void reads.set(p, h),
      forget: (p) => void reads.delete(p),
    },
    guard: createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir }),
    audit: () => {},
    update: () => {},
  };
}

const grep = createGrepTool();
const call = (root: string, input: unknown, rg: string | null): Promise<ToolResult<GrepData>> =>
  grep.execute(grep.inputSchema.parse(input), ctx(root, rg));

describe('Grep plain scan', () => {
  const tree = {
    '.gitignore': 'ignored/\n',
    'src/old.ts': 'export function load() {}\n// nothing\nconst x = LOAD;\n',
    'src/mid.ts': 'import y from "z";\nfunction load() {}\nconst a = load();\n',
    'docs/new.md': 'load the docs\nthen\nreload them\n',
    'ignored/z.ts': 'function load() {}\n',
    '.git/config': 'load = true\n',
    'bin/blob.bin': Buffer.from([0x6c, 0x6f, 0x61, 0x64, 0, 1, 2]),
    '.config/settings.json': '{"load": true}\n',
  };

  test('answers what ripgrep answers, for every mode and option; newest files first', async () => {
    const root = workspace(tree);
    const inputs = [
      { pattern: 'load' },
      { pattern: 'load', output_mode: 'count', case_insensitive: true },
      { pattern: 'load\\(', output_mode: 'content', context: 1, glob: '*.ts' },
      { pattern: 'load', output_mode: 'content', glob: '!*.ts' },
      { pattern: '(?<=function )load', output_mode: 'content' },
      { pattern: 'docs\\nthen', multiline: true, output_mode: 'content' },
      { pattern: 'load', path: 'src', head_limit: 1 },
      { pattern: 'zebra' },
    ];
    for (const input of inputs) {
      const viaRg = await call(root, input, rgPath);
      const viaScan = await call(root, input, null);
      const { fallback, ...data } = viaScan.data;
      assert.ok(fallback, 'the scan says it answered');
      assert.deepEqual(data, viaRg.data, JSON.stringify(input));
      assert.equal(viaScan.status, viaRg.status);
    }
    const r = await call(root, { pattern: 'load' }, null);
    assert.deepEqual(r.data.files, ['.config/settings.json', 'docs/new.md', 'src/mid.ts', 'src/old.ts']);
    assert.match(
      r.text,
      /ripgrep is not installed or not configured: a plain scan with a JavaScript regex answered/,
    );
  });

  test('a ripgrep that cannot start falls back too; a bad regex is INVALID_PARAM', async () => {
    const root = workspace(tree);
    const r = await call(root, { pattern: 'load' }, path.join(root, 'no-such-rg'));
    assert.equal(r.status, 'success');
    assert.match(r.data.fallback ?? '', /ripgrep could not be started/);
    const bad = await call(root, { pattern: 'load(' }, null);
    assert.equal(bad.error?.code, 'INVALID_PARAM');
  });

  test('attacker: a catastrophic regex on a crafted line is stopped by the timeout, the process stays free', async () => {
    const root = workspace({ 'evil.txt': `${'a'.repeat(40)}!\n` });
    const started = Date.now();
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    const run = await scanGrep({
      target: root,
      isFile: false,
      root,
      pattern: '(a+)+$',
      caseInsensitive: false,
      multiline: false,
      mode: 'files_with_matches',
      context: 0,
      noIgnore: false,
      signal: new AbortController().signal,
      timeoutMs: 600,
      maxLines: 100,
      maxLineBytes: 2048,
    });
    clearInterval(ticker);
    assert.equal(run.stoppedBy, 'timeout');
    assert.ok(Date.now() - started < 5000);
    assert.ok(ticks >= 10, `the event loop kept running (${ticks} ticks)`);
  });
});

test('attacker, through the built CLI without ripgrep: the scan never follows a link out of the workspace, nor into .git or ignored files', async () => {
  const outside = tempWorkspace({ 'secret.txt': 'API_KEY=hunter2 TOKEN\n' });
  const ws = tempWorkspace({
    '.gitignore': 'private/\n',
    'src/app.ts': '// TOKEN handling\n',
    'private/keys.txt': 'TOKEN=abc\n',
    '.git/config': '[credential] TOKEN\n',
  });
  fs.symlinkSync(outside, path.join(ws, 'linked-dir'));
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(ws, 'linked-file.txt'));
  const run = await runKeel(
    ['tool', 'Grep', JSON.stringify({ pattern: 'TOKEN', output_mode: 'content' }), '--workspace', ws],
    cliEnv('http://127.0.0.1:9', { KEEL_RIPGREP_PATH: '' }),
  );
  assert.equal(run.code, 0, run.stderr);
  const result = JSON.parse(run.stdout) as { status: string; text: string; data: GrepData };
  assert.equal(result.status, 'success');
  assert.deepEqual(result.data.files, ['src/app.ts']);
  assert.match(result.text, /plain scan/);
  assert.doesNotMatch(result.text, /hunter2|abc|credential/);
});
