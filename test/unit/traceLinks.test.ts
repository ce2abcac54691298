import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { buildTrace } from '../../src/agent/trace/html.ts';
import { TRACE_LINK_SCRIPT } from '../../src/agent/trace/traceLinks.ts';
import { parseTraceOpen } from '../../src/extension/traceOpen.ts';
import { cliEnv, runKeel, tempWorkspace } from './helpers/cli.ts';

// File links on the trace page: what the page's own finder (the shipped script) links, which plain
// paths the trace marks as existing files, what the VS Code side accepts from the page, and the page
// itself in Chromium — vscode:// links on disk, {type:'open'} messages in a webview, and log text that
// looks like markup staying text.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HOSTILE =
  '<img src=x onerror="window.__pwned=1">:1 and <a href="javascript:window.__pwned=2">src/a.ts:2</a>';

type Segment = { text: string; path?: string; line?: number };
const traceSegments: (text: string, files: ReadonlySet<string>) => Segment[] = new Function(
  `${TRACE_LINK_SCRIPT}\nreturn traceSegments;`,
)();
const links = (text: string, files: string[] = []) =>
  traceSegments(text, new Set(files)).flatMap((s) => (s.path ? [[s.path, s.line]] : []));

const temps: string[] = [];
after(() => {
  for (const t of temps) fs.rmSync(t, { recursive: true, force: true });
});

test('path:line is a link wherever it appears; the pieces always join back to the text', () => {
  const text =
    'src/a.ts:12:5: error TS2322 (see ./lib/b.js:3 and /abs/c.py:40).\nnode_modules/x/index.d.ts:7\nREADME.md:1,';
  assert.deepEqual(links(text), [
    ['src/a.ts', 12],
    ['./lib/b.js', 3],
    ['/abs/c.py', 40],
    ['node_modules/x/index.d.ts', 7],
    ['README.md', 1],
  ]);
  for (const sample of [text, '', 'no paths here', HOSTILE, 'a.ts:1a.ts:2']) {
    assert.equal(
      traceSegments(sample, new Set())
        .map((s) => s.text)
        .join(''),
      sample,
    );
  }
});

test('not links: times, ports, URLs, versions, error codes, line 0 made 1, too many digits', () => {
  assert.deepEqual(links('at 10:30, localhost:8080, Error:12, v1.2:3, TS2322:1'), []);
  assert.deepEqual(links('https://example.com/src/a.ts:10 and file:///x/a.ts:3'), []);
  assert.deepEqual(links('src/a.ts:12345678'), []);
  assert.deepEqual(links('src/a.ts:0'), [['src/a.ts', 1]]);
});

test('a plain path is a link only when it is a known workspace file', () => {
  const files = ['src/a.ts', 'Makefile'];
  assert.deepEqual(links('Read src/a.ts, then Makefile and src/b.ts', files), [
    ['src/a.ts', undefined],
    ['Makefile', undefined],
  ]);
  assert.deepEqual(links('{"path": "./src/a.ts"}', files), [['./src/a.ts', undefined]]);
  assert.deepEqual(links('xsrc/a.ts src/a.tsx', files), []);
});

test('log text that looks like markup: only [\\w./@+-] characters can be a link target', () => {
  const found = traceSegments(HOSTILE, new Set(['x']));
  for (const s of found) if (s.path) assert.match(s.path, /^[\w./@+-]+$/, s.path);
  assert.deepEqual(
    found.flatMap((s) => (s.path ? [s.path] : [])),
    ['x', 'src/a.ts'],
  );
});

function writeLog(workspace: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-trace-links-'));
  temps.push(dir);
  const file = path.join(dir, 's.jsonl');
  let seq = 0;
  const ev = (body: Record<string, unknown>) =>
    JSON.stringify({ ...body, sessionId: 's1', seq: ++seq, ts: 1000 + seq });
  const result = (text: string) => ({ status: 'success', data: null, text, stats: { time_ms: 1 } });
  fs.writeFileSync(
    file,
    `${[
      JSON.stringify({ type: 'session', version: 1, id: 's1', createdAt: 1, model: 'm', workspace }),
      ev({
        type: 'tool_start',
        toolUseId: 'toolu_1',
        name: 'Read',
        input: { path: 'src/a.ts', other: 'src/missing.ts', up: '../outside.ts', link: 'link.ts' },
      }),
      ev({
        type: 'tool_end',
        toolUseId: 'toolu_1',
        name: 'Read',
        result: result('src/a.ts:2: b'),
        durationMs: 1,
      }),
      ev({ type: 'tool_start', toolUseId: 'toolu_2', name: 'Bash', input: { command: 'cat notes.txt' } }),
      ev({ type: 'tool_end', toolUseId: 'toolu_2', name: 'Bash', result: result(HOSTILE), durationMs: 1 }),
    ].join('\n')}\n`,
  );
  return file;
}

test('the trace lists the files tool inputs name that exist inside the workspace (symlinks resolved)', async () => {
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-outside-'));
  temps.push(outside);
  fs.writeFileSync(path.join(outside, 'secret.ts'), 'x\n');
  const ws = tempWorkspace({ 'src/a.ts': 'a\nb\n', 'notes.txt': 'n\n' });
  fs.symlinkSync(path.join(outside, 'secret.ts'), path.join(ws, 'link.ts'));
  const data = await buildTrace(writeLog(ws));
  assert.deepEqual(data.files, ['notes.txt', 'src/a.ts']);
});

test('the VS Code side takes {type:"open", path, line} and nothing else', () => {
  assert.deepEqual(parseTraceOpen({ type: 'open', path: 'src/a.ts', line: 3 }), {
    type: 'open',
    path: 'src/a.ts',
    line: 3,
  });
  assert.deepEqual(parseTraceOpen({ type: 'open', path: '/w/a.ts' }), { type: 'open', path: '/w/a.ts' });
  for (const bad of [
    { type: 'run', path: 'a.ts' },
    { type: 'open', path: '' },
    { type: 'open', path: 'a.ts', line: 0 },
    { type: 'open', path: 'a.ts', line: 1.5 },
    { type: 'open', path: 'a.ts', line: '3' },
    { type: 'open', path: 'a.ts', command: 'workbench.action.terminal.new' },
    { type: 'open', path: 'x'.repeat(5000) },
    'open a.ts',
    null,
  ])
    assert.equal(parseTraceOpen(bad), undefined, JSON.stringify(bad).slice(0, 80));
});

test('the page in Chromium: vscode:// links on disk, open messages in a webview, hostile text stays text', {
  skip: fs.existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}`,
}, async () => {
  const ws = tempWorkspace({ 'src/a.ts': 'a\nb\n', 'notes.txt': 'n\n' });
  const out = path.join(path.dirname(writeLog(ws)), 'trace.html');
  const run = await runKeel(['trace', writeLog(ws), '--html', out], cliEnv('http://127.0.0.1:9'));
  assert.equal(run.code, 0, run.stderr);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    for (const webview of [false, true]) {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(String(e)));
      await page.route(/^(?!file:)/, (route) => route.abort());
      if (webview)
        // A string, not a function: the test's compiled functions carry helpers the page does not have.
        await page.addInitScript(
          'window.__sent = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__sent.push(m) });',
        );
      await page.goto(pathToFileURL(out).href);
      await page.waitForSelector('.row.tool');
      for (const summary of await page.locator('.row.tool summary').all()) await summary.click();
      // Each section is built on its toggle event: wait for all four (two inputs, two results).
      await page.waitForFunction(() => document.querySelectorAll('.row.tool pre').length === 4);
      const anchors = await page.$$eval('a.file', (as) =>
        as.map((a) => ({ text: a.textContent, href: a.getAttribute('href') })),
      );
      const hrefOf = (text: string) => anchors.filter((a) => a.text === text).map((a) => a.href);
      if (!webview) {
        // The input's plain path (a file that exists), the result's path:line, notes.txt in a command.
        assert.deepEqual(hrefOf('src/a.ts'), [`vscode://file${ws}/src/a.ts`]);
        assert.deepEqual(hrefOf('src/a.ts:2'), [
          `vscode://file${ws}/src/a.ts:2`,
          `vscode://file${ws}/src/a.ts:2`,
        ]);
        assert.deepEqual(hrefOf('notes.txt'), [`vscode://file${ws}/notes.txt`]);
        assert.deepEqual(hrefOf('src/missing.ts'), [], 'a file that does not exist is not linked');
      } else {
        assert.ok(
          anchors.every((a) => a.href === '#'),
          'no real target in the webview',
        );
        await page.locator('a.file', { hasText: 'src/a.ts:2' }).first().click();
        await page.locator('a.file', { hasText: /^notes\.txt$/ }).click();
        assert.deepEqual(await page.evaluate(() => (window as unknown as { __sent: unknown[] }).__sent), [
          { type: 'open', path: 'src/a.ts', line: 2 },
          { type: 'open', path: 'notes.txt' },
        ]);
      }
      // The hostile result: text in a <pre>, no element made of it, nothing ran.
      const pres = await page.$$eval('.row.tool pre', (ps) => ps.map((p) => p.textContent));
      assert.ok(pres.includes(HOSTILE));
      assert.equal(await page.locator('.row.tool img').count(), 0);
      assert.equal(await page.locator('.row.tool a:not(.file)').count(), 0);
      if (webview) await page.locator('.row.tool a.file', { hasText: 'src/a.ts:2' }).last().click();
      assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
      assert.deepEqual(problems, []);
      await page.close();
    }
  } finally {
    await browser.close();
  }
});
