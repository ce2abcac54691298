// The chat panel in a real browser (Debian's Chromium via playwright-core), outside VS Code: the
// bundle is built with esbuild into a temp dir and served on loopback behind the same CSP the host
// uses; harness/fakehost.js stands in for acquireVsCodeApi. Covers what the Node tests cannot: the
// DOM, sanitizing, keyboard use, windowing under load, reload catch-up, CSP cleanliness.
// Screenshots (dark / light / high contrast) go to $KEEL_SCREENSHOTS or a temp dir (not committed).
// Run: node --test webview-ui/test/panel.browser.test.mjs   (skips when Chromium is missing)
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}`;

let out;
let server;
let baseUrl;
let browser;
let page;
let seq = 0;
const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
const ev = (body, sessionId = 's1') => ({ ...body, sessionId, seq: ++seq, ts: 1_700_000_000_000 + seq });
const send = (message) => page.evaluate((m) => window.postMessage(m, '*'), message);
const posted = () => page.evaluate(() => window.__posted);
const lastPosted = async () => (await posted()).at(-1);

function serve(roots) {
  const types = { '.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html', '.ttf': 'font/ttf' };
  const srv = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    for (const [prefix, dir] of roots) {
      if (!path.startsWith(prefix)) continue;
      const file = join(dir, path.slice(prefix.length) || 'index.html');
      if (file.startsWith(dir) && existsSync(file)) {
        res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
        res.end(readFileSync(file));
        return;
      }
    }
    res.writeHead(404);
    res.end();
  });
  return new Promise((ok) => srv.listen(0, '127.0.0.1', () => ok(srv)));
}

const md =
  'Here is the fix:\n\n```ts\nconst x = 1;\n```\n\n<img src="http://203.0.113.1/x.png" onerror="alert(1)"> **bold** [evil](javascript:alert(1))';
const todos = [
  { id: '1', content: 'Reproduce the failure', status: 'completed' },
  { id: '2', content: 'Fix add()', status: 'in_progress' },
  { id: '3', content: 'Run the tests', status: 'pending' },
];
const editInput = { path: 'src/a.ts', old_string: 'a + b + 1', new_string: 'a + b' };
function runEvents() {
  return [
    ev({ type: 'agent_start', runId: 'r1', prompt: 'fix' }),
    ev({
      type: 'user_message',
      message: {
        id: 'u1',
        ts: 1,
        role: 'user',
        text: 'Fix the failing test in @src/a.ts',
        mentions: ['src/a.ts'],
      },
      queued: false,
    }),
    ev({ type: 'message_start', messageId: 'm1', model: 'claude-sonnet-4-5' }),
    ev({
      type: 'message_delta',
      messageId: 'm1',
      blockIndex: 0,
      kind: 'thinking',
      delta: 'The test expects 2.',
    }),
    ev({ type: 'message_delta', messageId: 'm1', blockIndex: 1, kind: 'text', delta: md }),
    ev({
      type: 'message_end',
      message: {
        id: 'm1',
        ts: 1,
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        stopReason: 'tool_use',
        usage,
        content: [
          { type: 'thinking', thinking: 'The test expects 2.', signature: 's' },
          { type: 'text', text: md },
          { type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'npm test -- --grep add' } },
          { type: 'tool_use', id: 't2', name: 'Edit', input: editInput },
        ],
      },
    }),
    ev({
      type: 'model_call',
      record: {
        stage: 0,
        message_count: 2,
        est_tokens: 41000,
        prefix_hash: 'h',
        cache_read: 36000,
        cache_write: 2000,
        input: 3000,
        output: 300,
        latency_ms: 900,
        ttft_ms: 300,
        model: 'claude-sonnet-4-5',
        cost_usd: 0.0213,
        context_window: 200000,
        ok: true,
      },
    }),
    ev({ type: 'tool_start', toolUseId: 't1', name: 'Bash', input: { command: 'npm test -- --grep add' } }),
    ev({ type: 'tool_update', toolUseId: 't1', text: '> keel@0.1.0 test\n  1) adds two numbers\n' }),
    ev({
      type: 'tool_end',
      toolUseId: 't1',
      name: 'Bash',
      durationMs: 2310,
      result: {
        status: 'error',
        data: null,
        text: 'denied',
        error: {
          code: 'DENIED_BY_USER',
          // What the Bash tool tells the model (src/agent/tools/bash.ts).
          message: 'The user denied running: npm test -- --grep add',
          suggestion:
            'Do not retry this command or a variant of it. Use a dedicated tool if one fits, or explain to the user what you wanted to run and why.',
        },
        stats: { time_ms: 2310 },
      },
    }),
    ev({ type: 'tool_start', toolUseId: 't2', name: 'Edit', input: editInput }),
    ev({
      type: 'tool_end',
      toolUseId: 't2',
      name: 'Edit',
      durationMs: 14,
      result: {
        status: 'success',
        data: null,
        text: 'Edited src/a.ts',
        stats: { time_ms: 14 },
        ui: {
          diff: '--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,3 +1,3 @@\n export function add(a, b) {\n-  return a + b + 1;\n+  return a + b;\n }\n',
        },
      },
    }),
    ev({ type: 'todo', todos }),
    ev({ type: 'tool_start', toolUseId: 't3', name: 'Bash', input: { command: 'npm test' } }),
    ev({ type: 'tool_update', toolUseId: 't3', text: 'running 12 tests\nok 1\nok 2\n' }),
  ];
}

/** A fresh panel (nothing saved) showing the run; `ratings` as the host sends them for a reopened chat. */
async function openPanel(theme, ratings) {
  await page.goto(`${baseUrl}/index.html?theme=${theme}`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForFunction(() => window.__posted.length > 0);
  seq = 0;
  const events = runEvents();
  await send({
    type: 'snapshot',
    sessionId: 's1',
    replace: true,
    events,
    todos,
    running: true,
    model: 'claude-sonnet-4-5',
    contextWindow: 200000,
    ...(ratings ? { ratings } : {}),
  });
  await send({
    type: 'review',
    files: [{ path: 'src/a.ts', hunks: [{ id: 'h1', startLine: 2, added: 1, removed: 1 }] }],
  });
  await page.locator('.tool-card[data-tool="Bash"][data-status="running"]').waitFor();
}

before(async () => {
  if (skip) return;
  out = mkdtempSync(join(tmpdir(), 'keel-webview-'));
  await esbuild.build({
    absWorkingDir: root,
    bundle: true,
    entryPoints: { webview: 'webview-ui/src/main.ts', 'webview-style': 'webview-ui/src/styles.css' },
    outdir: out,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    logLevel: 'warning',
  });
  const dist = join(out, 'dist');
  mkdirSync(dist);
  for (const [from, to] of [
    ['webview.js', 'webview.js'],
    ['webview-style.css', 'webview.css'],
  ]) {
    await import('node:fs').then((fs) => fs.renameSync(join(out, from), join(dist, to)));
  }
  server = await serve([
    ['/dist/', `${dist}/`],
    ['/codicons/', join(root, 'node_modules/@vscode/codicons/dist/')],
    ['/', join(here, 'harness/')],
  ]);
  baseUrl = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 420, height: 800 } });
  page.on('pageerror', (error) => {
    throw error;
  });
});

after(async () => {
  await browser?.close();
  server?.close();
  if (out) rmSync(out, { recursive: true, force: true });
});

test('the panel says ready, then renders messages, cards, errors and diffs from a snapshot', {
  skip,
}, async () => {
  await page.goto(`${baseUrl}/index.html?theme=dark`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForFunction(() => window.__posted.length > 0);
  assert.deepEqual(await posted(), [{ type: 'ready', afterSeq: 0 }]);
  await openPanel('dark');
  const assistant = page.locator('.msg.assistant');
  assert.equal(await assistant.count(), 1);
  assert.equal(await assistant.locator('strong').textContent(), 'bold');
  // Raw HTML is shown as text, never as elements; javascript: links are not links.
  assert.equal(await page.locator('.msg.assistant img, .msg.assistant a').count(), 0);
  assert.match(await assistant.textContent(), /<img src=/);
  assert.equal(await page.locator('details.thinking').getAttribute('open'), null);
  const denied = page.locator('.tool-card[data-tool="Bash"][data-status="error"]');
  // The denial is told to the user as theirs; the instructions meant for the model are not shown.
  assert.equal(await denied.locator('.error-code').textContent(), 'Denied');
  assert.match(await denied.locator('.error-message').textContent(), /^You denied running: npm test/);
  assert.doesNotMatch(await denied.textContent(), /Do not retry|the user|variant of it/i);
  assert.equal(await denied.locator('.error-suggestion').count(), 0);
  assert.match(await page.locator('.tool-card[data-status="running"] .tool-stream').textContent(), /ok 2/);
  assert.equal(
    await page.locator('.tool-card[data-tool="Edit"] .diff-add').textContent(),
    '+  return a + b;',
  );
  assert.match(await page.locator('.meter').textContent(), /41K \/ 200K \(21%\).*cache 88%.*\$0\.02/);
  assert.match(await page.locator('.todos').textContent(), /Plan \(1\/3\)/);
  const violations = await page.evaluate(() => window.__violations);
  assert.deepEqual(violations, []);
});

test('controls post typed messages: reject, accept all, insert code, expand on demand', {
  skip,
}, async () => {
  await page.locator('.tool-card[data-tool="Edit"]').getByRole('button', { name: 'Reject' }).click();
  assert.deepEqual(await lastPosted(), { type: 'reject', path: 'src/a.ts' });
  await page.getByRole('button', { name: 'Accept all' }).click();
  assert.deepEqual(await lastPosted(), { type: 'acceptAll' });
  await page.getByRole('button', { name: 'Insert at cursor' }).click();
  assert.deepEqual(await lastPosted(), { type: 'insertCode', code: 'const x = 1;\n' });
  const denied = page.locator('.tool-card[data-tool="Bash"][data-status="error"]');
  assert.equal(await denied.locator('.tool-result').count(), 0, 'results are rendered only when expanded');
  await denied.locator('summary').click();
  assert.equal(await denied.locator('.tool-result').textContent(), 'denied');
  await page.getByRole('button', { name: 'Stop' }).click();
  assert.deepEqual(await lastPosted(), { type: 'stop' });
});

test('👍/👎 on a finished answer: posts a typed rating, 👎 takes an optional note, the choice stays shown', {
  skip,
}, async () => {
  await openPanel('dark');
  const answer = page.locator('.msg.assistant[data-id="m1"]');
  const row = answer.locator('.msg-feedback');
  assert.equal(await row.count(), 1, 'the finished answer has the rating buttons');
  await answer.hover();
  await row.getByRole('button', { name: 'Bad answer' }).click();
  assert.deepEqual(await lastPosted(), { type: 'feedback', messageId: 'm1', rating: 'down' });
  assert.equal(await row.getByRole('button', { name: 'Bad answer' }).getAttribute('aria-pressed'), 'true');
  assert.equal(await row.getByRole('button', { name: 'Good answer' }).getAttribute('aria-pressed'), 'false');
  const note = row.getByRole('textbox', { name: 'What went wrong (optional)' });
  await note.fill('  It edited the wrong file  ');
  await note.press('Enter');
  assert.deepEqual(await lastPosted(), {
    type: 'feedback',
    messageId: 'm1',
    rating: 'down',
    note: 'It edited the wrong file',
  });
  assert.equal(await note.count(), 0, 'the note form goes once sent');
  assert.match(await row.locator('.feedback-status').textContent(), /Noted, with your note/);
  await row.getByRole('button', { name: 'Good answer' }).click();
  assert.deepEqual(await lastPosted(), { type: 'feedback', messageId: 'm1', rating: 'up' });
  assert.equal(await row.getByRole('button', { name: 'Good answer' }).getAttribute('aria-pressed'), 'true');
  assert.equal(await row.getByRole('button', { name: 'Bad answer' }).getAttribute('aria-pressed'), 'false');
  // An answer still streaming has nothing to rate yet.
  await send({
    type: 'event',
    event: ev({ type: 'message_start', messageId: 'm9', model: 'claude-sonnet-4-5' }),
  });
  await send({
    type: 'event',
    event: ev({ type: 'message_delta', messageId: 'm9', blockIndex: 0, kind: 'text', delta: 'Working on' }),
  });
  await page.locator('.msg.assistant[data-id="m9"]').waitFor();
  assert.equal(await page.locator('.msg.assistant[data-id="m9"] .msg-feedback').count(), 0);
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
});

test('a reopened chat shows how its answers were rated; a rating clicked since survives a reload', {
  skip,
}, async () => {
  await openPanel('dark', { m1: 'down' });
  const row = page.locator('.msg.assistant[data-id="m1"] .msg-feedback');
  await row.waitFor();
  assert.equal(await row.getByRole('button', { name: 'Bad answer' }).getAttribute('aria-pressed'), 'true');
  assert.equal(await row.getByRole('button', { name: 'Good answer' }).getAttribute('aria-pressed'), 'false');
  assert.equal(await row.locator('.feedback-status').textContent(), 'Noted.');
  assert.equal(await row.locator('.feedback-note').count(), 0, 'no note form for an earlier rating');
  await page.locator('.msg.assistant[data-id="m1"]').hover();
  await row.getByRole('button', { name: 'Good answer' }).click();
  // The webview goes away and comes back (VS Code reload): its saved view keeps the new rating.
  await page.reload();
  const again = page.locator('.msg.assistant[data-id="m1"] .msg-feedback');
  await again.waitFor();
  assert.equal(await again.getByRole('button', { name: 'Good answer' }).getAttribute('aria-pressed'), 'true');
  assert.equal(await again.locator('.feedback-status').textContent(), 'Thanks for the feedback.');
  assert.deepEqual(await page.evaluate(() => window.__violations), []);
});

test('a SANDBOX_DENIED card says what was blocked and offers "Run outside the sandbox…"', {
  skip,
}, async () => {
  await send({
    type: 'event',
    event: ev({ type: 'tool_start', toolUseId: 'sbx1', name: 'Bash', input: { command: 'python3 key.py' } }),
  });
  const message =
    'The OS sandbox stopped part of this command.\n<sandbox-denied>\n- refused: read /home/u/.ssh/id_ed25519 (hidden by the secrets deny list (/home/u/.ssh))\n</sandbox-denied>';
  await send({
    type: 'event',
    event: ev({
      type: 'tool_end',
      toolUseId: 'sbx1',
      name: 'Bash',
      durationMs: 40,
      result: {
        status: 'error',
        data: { command: 'python3 key.py' },
        text: message,
        error: { code: 'SANDBOX_DENIED', message, suggestion: 'Keep the work inside the workspace.' },
        stats: { time_ms: 40 },
      },
    }),
  });
  const card = page.locator('.tool-card[data-id="sbx1"]');
  await card.waitFor();
  assert.equal(await card.locator('.error-code').textContent(), 'SANDBOX_DENIED');
  assert.match(
    await card.locator('.error-message').textContent(),
    /refused: read \/home\/u\/\.ssh\/id_ed25519/,
  );
  await card.getByRole('button', { name: 'Run outside the sandbox…' }).click();
  assert.deepEqual(await lastPosted(), { type: 'runOutsideSandbox', toolUseId: 'sbx1' });
  // Other failures offer no such button.
  const denied = page.locator('.tool-card[data-tool="Bash"][data-status="error"]').first();
  assert.equal(await denied.getByRole('button', { name: 'Run outside the sandbox…' }).count(), 0);
});

test('an edit card says what became of its hunks once they are accepted or rejected', { skip }, async () => {
  await openPanel('dark');
  const card = page.locator('.tool-card[data-tool="Edit"]');
  assert.equal(await card.getAttribute('data-review'), 'pending');
  assert.match(await card.locator('.review-state').textContent(), /1 change to review/);
  // The user rejects the hunk (in the editor's CodeLens, say): nothing pending, one rejected.
  await send({ type: 'review', files: [], settled: [{ path: 'src/a.ts', accepted: 0, rejected: 1 }] });
  await page.waitForFunction(
    () => document.querySelector('.tool-card[data-tool="Edit"]')?.getAttribute('data-review') === 'rejected',
  );
  assert.match(await card.locator('.review-state').textContent(), /Rejected/);
  assert.equal(await card.getByRole('button', { name: 'Accept' }).count(), 0);
  await card.getByRole('button', { name: 'Open diff' }).click();
  assert.deepEqual(await lastPosted(), { type: 'openDiff', path: 'src/a.ts' });
  await send({ type: 'review', files: [], settled: [{ path: 'src/a.ts', accepted: 2, rejected: 1 }] });
  await page.waitForFunction(
    () => document.querySelector('.tool-card[data-tool="Edit"]')?.getAttribute('data-review') === 'mixed',
  );
  assert.match(await card.locator('.review-state').textContent(), /2 accepted, 1 rejected/);
});

test('the review bar stays on one line in a narrow side bar', { skip }, async () => {
  await page.setViewportSize({ width: 300, height: 800 });
  try {
    await openPanel('dark');
    const head = page.locator('.review .review-head');
    await head.waitFor();
    const rows = await head.evaluate((el) =>
      Array.from(el.children).map((c) =>
        Math.round(c.getBoundingClientRect().top + c.getBoundingClientRect().height / 2),
      ),
    );
    assert.equal(rows.length, 3);
    assert.ok(Math.max(...rows) - Math.min(...rows) <= 2, `label and buttons on one row: ${rows}`);
    assert.match(await head.textContent(), /1 change to review.*Accept all.*Reject all/);
  } finally {
    await page.setViewportSize({ width: 420, height: 800 });
  }
});

test('a selection prompt shows its code as a code block, not as raw ``` fences', { skip }, async () => {
  await openPanel('dark');
  await send({
    type: 'event',
    event: ev({
      type: 'user_message',
      message: {
        id: 'u-sel',
        ts: 2,
        role: 'user',
        text: 'Explain this:\n```typescript\nconst x = <b>1</b>;\n```\nThanks',
        mentions: [],
      },
      queued: false,
    }),
  });
  const bubble = page.locator('.msg.user').last();
  await bubble.locator('.code-block pre code').waitFor();
  assert.equal(await bubble.locator('.code-block pre code').textContent(), 'const x = <b>1</b>;');
  assert.equal(await bubble.locator('.code-block').getAttribute('data-lang'), 'typescript');
  assert.doesNotMatch(await bubble.locator('.msg-text').textContent(), /```/);
  assert.equal(await bubble.locator('b').count(), 0, 'code stays text');
});

test('file references in an answer are links that ask the host to open the file at the line', {
  skip,
}, async () => {
  await openPanel('dark');
  const text = [
    'The greeting is built in `src/greet.js:3`; the caller is src/app.ts:12:5.',
    'See [the test](test/greet.test.js#L2), [the docs](https://example.com/docs) and `console.log`.',
    '```js\nconst where = "src/greet.js:3";\n```',
  ].join('\n\n');
  await send({ type: 'event', event: ev({ type: 'message_start', messageId: 'm-links', model: 'm' }) });
  await send({
    type: 'event',
    event: ev({
      type: 'message_end',
      message: {
        id: 'm-links',
        ts: 1,
        role: 'assistant',
        model: 'm',
        stopReason: 'end_turn',
        usage,
        content: [{ type: 'text', text }],
      },
    }),
  });
  const answer = page.locator('.msg[data-id="m-links"]');
  await answer.locator('.file-link').first().waitFor();
  const links = answer.locator('.file-link');
  assert.deepEqual(await links.allTextContents(), ['src/greet.js:3', 'src/app.ts:12:5', 'the test']);
  // The web link stays a web link; identifiers and code blocks are not links.
  assert.equal(await answer.locator('a[href="https://example.com/docs"]').count(), 1);
  assert.equal(await answer.locator('pre .file-link').count(), 0);
  const before = (await posted()).length;
  await links.nth(0).click();
  await links.nth(2).focus();
  await page.keyboard.press('Enter');
  await links.nth(1).click();
  const opened = (await posted()).slice(before);
  assert.deepEqual(opened, [
    { type: 'openFile', path: 'src/greet.js', line: 3 },
    { type: 'openFile', path: 'test/greet.test.js', line: 2 },
    { type: 'openFile', path: 'src/app.ts', line: 12, column: 5 },
  ]);
  assert.equal(await links.nth(0).getAttribute('role'), 'link');
  assert.equal(await links.nth(0).getAttribute('title'), 'Open src/greet.js at line 3');
});

test('keyboard only: @ completion, Enter sends once with a key, the message shows as queued', {
  skip,
}, async () => {
  const input = page.getByRole('textbox', { name: 'Message Keel' });
  await input.focus();
  await input.pressSequentially('also check @sr');
  await page.waitForFunction(() => window.__posted.at(-1)?.type === 'requestFileCompletions');
  assert.deepEqual(await lastPosted(), { type: 'requestFileCompletions', query: 'sr' });
  await send({ type: 'fileCompletions', query: 'sr', items: ['src/a.ts', 'src/app.ts'] });
  await page.getByRole('option').first().waitFor();
  await input.press('ArrowDown');
  await input.press('Enter');
  assert.equal(await input.inputValue(), 'also check @src/app.ts ');
  await input.press('Enter');
  await input.press('Enter');
  const submits = (await posted()).filter((m) => m.type === 'submit');
  assert.equal(submits.length, 1);
  assert.equal(submits[0].text, 'also check @src/app.ts');
  assert.deepEqual(submits[0].mentions, ['src/app.ts']);
  assert.match(submits[0].idempotencyKey, /^[0-9a-f-]{36}$/);
  await send({ type: 'submitResult', idempotencyKey: submits[0].idempotencyKey, ok: true });
  await page.locator('.queued-msg[data-state="queued"]').waitFor();
  await send({
    type: 'event',
    event: ev({
      type: 'user_message',
      message: { id: 'u2', ts: 1, role: 'user', text: 'also check @src/app.ts', steering: true },
      queued: false,
    }),
  });
  await page.locator('.msg.user[data-id="u2"]').waitFor();
  assert.equal(await page.locator('.queued-msg').count(), 0);
  // Tab from the input reaches Stop (enabled while running), then Send; both are buttons.
  await input.fill('second');
  await input.focus();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Stop');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Send');
  await page.keyboard.press('Enter');
  assert.equal((await lastPosted()).text, 'second');
});

test('a message the host has not received is posted again with its key; one it never receives, or refuses, comes back into the input', {
  skip,
}, async () => {
  await openPanel('dark');
  const input = page.getByRole('textbox', { name: 'Message Keel' });
  const submitsOf = async (key) =>
    (await posted()).filter((m) => m.type === 'submit' && m.idempotencyKey === key).length;
  await input.fill('first try');
  await input.press('Enter');
  const key = (await lastPosted()).idempotencyKey;
  // Saved before it was posted: a webview that goes away right now resends it.
  assert.ok(
    await page.evaluate(() =>
      (JSON.parse(sessionStorage.getItem('state')).unsent ?? []).some((u) => u.text === 'first try'),
    ),
  );
  await page.waitForFunction(
    (k) => window.__posted.filter((m) => m.type === 'submit' && m.idempotencyKey === k).length >= 2,
    key,
    { timeout: 6000 },
  );
  // Received: no more re-posting, and it stays shown until the transcript has it.
  await send({ type: 'submitReceived', idempotencyKey: key });
  const sent = await submitsOf(key);
  await page.waitForTimeout(3000);
  assert.equal(await submitsOf(key), sent);
  assert.equal(await page.locator('.queued-msg', { hasText: 'first try' }).count(), 1);
  // Never received: back in the input after a few attempts, with a notice.
  await input.fill('lost in transit');
  await input.press('Enter');
  const lost = (await lastPosted()).idempotencyKey;
  await page.locator('.queued-msg', { hasText: 'lost in transit' }).waitFor();
  await page.waitForFunction(() => document.querySelector('textarea').value === 'lost in transit', null, {
    timeout: 15_000,
  });
  assert.equal(await submitsOf(lost), 4);
  assert.equal(await page.locator('.queued-msg', { hasText: 'lost in transit' }).count(), 0);
  assert.match(await page.locator('.banner').textContent(), /did not receive your message/);
  // Refused (no API key): the text comes back too, not only an error.
  await input.fill('no key yet');
  await input.press('Enter');
  const refused = (await lastPosted()).idempotencyKey;
  assert.equal(await input.inputValue(), '');
  await send({ type: 'submitReceived', idempotencyKey: refused });
  await send({
    type: 'submitResult',
    idempotencyKey: refused,
    ok: false,
    error: 'No Anthropic API key is set.',
  });
  await page.waitForFunction(() => document.querySelector('textarea').value === 'no key yet');
  // The input and the banner are painted by separate renders: wait for the banner's own paint.
  await page.locator('.banner', { hasText: 'No Anthropic API key' }).waitFor({ timeout: 5000 });
});

test('live deltas stream in; a reload repaints from saved state and asks only for newer events', {
  skip,
}, async () => {
  await send({
    type: 'event',
    event: ev({ type: 'message_start', messageId: 'm9', model: 'claude-sonnet-4-5' }),
  });
  for (const delta of ['Streaming ', 'answer.']) {
    await send({
      type: 'event',
      event: ev({ type: 'message_delta', messageId: 'm9', blockIndex: 0, kind: 'text', delta }),
    });
  }
  await page.waitForFunction(
    () => document.querySelector('.msg[data-id="m9"] .markdown')?.textContent?.trim() === 'Streaming answer.',
  );
  // Garbage from the host is ignored, not rendered.
  await send({ type: 'event', event: { type: 'turn_start', seq: 'x' } });
  await page.evaluate(() => window.dispatchEvent(new Event('pagehide')));
  const lastSeq = seq;
  await page.reload();
  await page.waitForFunction(() => window.__posted.length > 0);
  assert.deepEqual((await posted())[0], { type: 'ready', afterSeq: lastSeq, sessionId: 's1' });
  assert.equal(
    await page.locator('.msg[data-id="m9"]').count(),
    1,
    'transcript visible before the host answers',
  );
  // The saved view said "running"; only the host may say so after a reload.
  assert.equal(await page.locator('#composer-hint').textContent(), '');
  await send({
    type: 'snapshot',
    sessionId: 's1',
    replace: false,
    events: [
      ev({ type: 'message_delta', messageId: 'm9', blockIndex: 0, kind: 'text', delta: ' Caught up.' }),
    ],
    todos,
    running: true,
    model: 'claude-sonnet-4-5',
    contextWindow: 200000,
  });
  await page.waitForFunction(() =>
    /Caught up\./.test(document.querySelector('.msg[data-id="m9"]')?.textContent ?? ''),
  );
});

test('a message sent just before the webview went away is resent with its key, once, after catch-up', {
  skip,
}, async () => {
  await openPanel('dark');
  const input = page.getByRole('textbox', { name: 'Message Keel' });
  await input.fill('do not lose me');
  await input.press('Enter');
  const first = (await posted()).filter((m) => m.type === 'submit').at(-1);
  assert.equal(first.text, 'do not lose me');
  // The panel is hidden (webview disposed) before the host acknowledged the message.
  await page.evaluate(() => window.dispatchEvent(new Event('pagehide')));
  await page.reload();
  await page.waitForFunction(() => window.__posted.length > 0);
  assert.equal((await posted()).filter((m) => m.type === 'submit').length, 0, 'nothing before catch-up');
  await page.locator('.queued-msg[data-state="sending"]', { hasText: 'do not lose me' }).waitFor();
  await send({ type: 'sessions', items: [] });
  await page.waitForFunction(() => window.__posted.some((m) => m.type === 'submit'));
  const resent = (await posted()).filter((m) => m.type === 'submit' && m.text === 'do not lose me');
  assert.equal(resent.length, 1);
  assert.equal(resent[0].text, 'do not lose me');
  assert.equal(resent[0].idempotencyKey, first.idempotencyKey, 'same key: the host runs it once');
});

test('a restored transcript opens at its newest message and keeps following until the user scrolls up', {
  skip,
}, async () => {
  await page.goto(`${baseUrl}/index.html?theme=dark`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForFunction(() => window.__posted.length > 0);
  seq = 0;
  const events = [];
  for (let i = 0; i < 60; i++) {
    events.push(
      ev({
        type: 'user_message',
        message: { id: `q${i}`, ts: 1, role: 'user', text: `Question ${i}\n\nwith a second paragraph` },
        queued: false,
      }),
    );
  }
  await send({
    type: 'snapshot',
    sessionId: 's1',
    replace: true,
    events,
    todos: [],
    running: false,
    model: 'claude-sonnet-4-5',
    contextWindow: 200000,
  });
  const atBottom = () =>
    page.evaluate(() => {
      const t = document.querySelector('.transcript');
      return t.scrollHeight > t.clientHeight * 2 && t.scrollTop + t.clientHeight >= t.scrollHeight - 48;
    });
  await page.waitForFunction(() => document.querySelector('.msg[data-id="q59"]'));
  // Content arriving in bursts right after the jump (before its scroll event), and a footer that
  // grows (a pending review), must not stop the following.
  const burst = [];
  for (let i = 60; i < 64; i++)
    burst.push({
      type: 'event',
      event: ev({
        type: 'user_message',
        message: { id: `q${i}`, ts: 1, role: 'user', text: `Question ${i}\n\nmore\n\nand more` },
        queued: false,
      }),
    });
  await page.evaluate(async (messages) => {
    for (const m of messages) {
      window.postMessage(m, '*');
      await new Promise((r) => setTimeout(r, 5));
    }
  }, burst);
  await send({
    type: 'review',
    files: [
      { path: 'src/a.ts', hunks: [{ id: 'h1', startLine: 2, added: 1, removed: 1 }] },
      { path: 'src/b.ts', hunks: [{ id: 'h2', startLine: 5, added: 3, removed: 0 }] },
    ],
  });
  await page.waitForFunction(() => document.querySelector('.msg[data-id="q63"]'));
  await page.waitForTimeout(300);
  assert.equal(await atBottom(), true, 'the newest message is in view');
  // The user scrolls up: new output no longer yanks the view down.
  await page.evaluate(() => {
    const t = document.querySelector('.transcript');
    t.scrollTop = t.scrollTop - 600;
  });
  await page.waitForTimeout(100);
  await send({
    type: 'event',
    event: ev({
      type: 'user_message',
      message: { id: 'q64', ts: 1, role: 'user', text: 'Question 64' },
      queued: false,
    }),
  });
  await page.waitForFunction(() => document.querySelector('.msg[data-id="q64"]'));
  await page.waitForTimeout(100);
  assert.equal(await atBottom(), false, 'reading older messages is not interrupted');
});

test('sending while scrolled up brings the view down to the new message and its answer', {
  skip,
}, async () => {
  // Continues the previous test: the user has scrolled up to read older messages.
  const atBottom = () =>
    page.evaluate(() => {
      const t = document.querySelector('.transcript');
      return t.scrollTop + t.clientHeight >= t.scrollHeight - 48;
    });
  assert.equal(await atBottom(), false, 'the view starts scrolled up');
  const input = page.getByRole('textbox', { name: 'Message Keel' });
  await input.fill('Question 65');
  await input.press('Enter');
  await send({
    type: 'event',
    event: ev({
      type: 'user_message',
      message: { id: 'q65', ts: 1, role: 'user', text: 'Question 65' },
      queued: false,
    }),
  });
  await page.waitForFunction(() => document.querySelector('.msg[data-id="q65"]'));
  await page.waitForTimeout(150);
  assert.equal(await atBottom(), true, 'the message just sent is in view');
});

test('thousands of events: snapshot and live deltas stay fast, only a screenful is in the DOM', {
  skip,
}, async () => {
  await openPanel('dark');
  const timing = await page.evaluate(async () => {
    const events = [];
    let s = 0;
    const e = (b) => ({ ...b, sessionId: 'big', seq: ++s, ts: 1 });
    for (let i = 0; i < 2500; i++) {
      events.push(
        e({
          type: 'user_message',
          message: { id: `u${i}`, ts: 1, role: 'user', text: `question ${i}` },
          queued: false,
        }),
      );
      events.push(e({ type: 'message_start', messageId: `a${i}`, model: 'm' }));
      events.push(
        e({
          type: 'message_delta',
          messageId: `a${i}`,
          blockIndex: 0,
          kind: 'text',
          delta: `answer **${i}**`,
        }),
      );
      events.push(e({ type: 'tool_start', toolUseId: `t${i}`, name: 'Read', input: { path: `f${i}.ts` } }));
      const result = { status: 'success', data: null, text: 'x'.repeat(2000), stats: { time_ms: 3 } };
      events.push(e({ type: 'tool_end', toolUseId: `t${i}`, name: 'Read', durationMs: 3, result }));
    }
    const waitFor = (pred) =>
      new Promise((ok, fail) => {
        const deadline = performance.now() + 20_000;
        const poll = () =>
          pred()
            ? ok()
            : performance.now() > deadline
              ? fail(new Error('timed out'))
              : requestAnimationFrame(poll);
        poll();
      });
    const t0 = performance.now();
    const snapshot = {
      type: 'snapshot',
      sessionId: 'big',
      replace: true,
      events,
      todos: [],
      running: true,
      model: 'm',
      contextWindow: 200000,
    };
    window.postMessage(snapshot, '*');
    await waitFor(() => document.querySelector('.msg.user[data-id="u2499"]'));
    const snapshotMs = performance.now() - t0;
    const t1 = performance.now();
    for (let i = 0; i < 500; i++) {
      const delta = {
        type: 'message_delta',
        messageId: 'a2499',
        blockIndex: 0,
        kind: 'text',
        delta: ' more',
        sessionId: 'big',
        seq: ++s,
        ts: 1,
      };
      window.postMessage({ type: 'event', event: delta }, '*');
    }
    await waitFor(
      () => document.querySelector('.msg[data-id="a2499"]')?.textContent?.match(/more/g)?.length === 500,
    );
    return {
      snapshotMs,
      liveMs: performance.now() - t1,
      domItems: document.querySelectorAll('.items > *').length,
    };
  });
  assert.ok(timing.snapshotMs < 3000, `12,500-event snapshot took ${timing.snapshotMs.toFixed(0)} ms`);
  assert.ok(timing.liveMs < 3000, `500 live deltas took ${timing.liveMs.toFixed(0)} ms`);
  assert.ok(timing.domItems < 120, `${timing.domItems} of 7,500 items are in the DOM`);
  assert.ok(timing.domItems > 5);
});

/** 5,000 events of a real-looking session: prompts, long Markdown replies, tool cards, Edit diffs. */
function longSession(sessionId, runs) {
  const out = [];
  let s = 0;
  const e = (b) => ({ ...b, sessionId, seq: ++s, ts: 1_700_000_000_000 + s });
  for (let r = 1; out.length < runs; r++) {
    out.push(e({ type: 'agent_start', runId: `run${r}`, prompt: `Question ${r}` }));
    const user = { id: `q${r}`, ts: 1, role: 'user', text: `Question ${r}: make step ${r} work` };
    out.push(e({ type: 'user_message', message: user, queued: false }));
    for (let k = 0; k < 3; k++) {
      const id = `r${r}_${k}`;
      const text = `## Step ${r}.${k}\n\nReading **the file** now.\n\n- one\n- two\n\n\`\`\`ts\nconst v${r} = ${k};\n\`\`\`\n`;
      const input = { path: `src/f${r}.ts`, old_string: 'a', new_string: 'b' };
      out.push(e({ type: 'message_start', messageId: `m${id}`, model: 'm' }));
      out.push(
        e({
          type: 'message_end',
          message: {
            id: `m${id}`,
            ts: 1,
            role: 'assistant',
            model: 'm',
            stopReason: 'tool_use',
            usage,
            content: [
              { type: 'text', text },
              { type: 'tool_use', id: `t${id}`, name: 'Edit', input },
            ],
          },
        }),
      );
      out.push(e({ type: 'tool_start', toolUseId: `t${id}`, name: 'Edit', input }));
      const diff = `--- a/src/f${r}.ts\n+++ b/src/f${r}.ts\n@@ -1,2 +1,2 @@\n-a\n+b\n ctx\n`;
      const result = { status: 'success', data: null, text: 'Edited', stats: { time_ms: 3 }, ui: { diff } };
      out.push(e({ type: 'tool_end', toolUseId: `t${id}`, name: 'Edit', durationMs: 3, result }));
    }
    out.push(e({ type: 'agent_end', runId: `run${r}`, status: 'finished', finalText: '' }));
  }
  return out;
}

async function restoreLong(count) {
  await page.goto(`${baseUrl}/index.html?theme=dark`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForFunction(() => window.__posted.length > 0);
  const events = longSession('long', count);
  await send({
    type: 'snapshot',
    sessionId: 'long',
    replace: true,
    events,
    todos: [],
    running: true,
    model: 'm',
    contextWindow: 200000,
  });
  return events;
}

const inView = (selector) =>
  page.evaluate((sel) => {
    const el = document.querySelector(sel);
    const t = document.querySelector('.transcript').getBoundingClientRect();
    if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.height > 0 && r.bottom > t.top && r.top < t.bottom;
  }, selector);

test('a 5,000-event session opens at its last message; scrolling up all the way reaches the first', {
  skip,
}, async () => {
  const events = await restoreLong(5000);
  const last = events.findLast((e) => e.type === 'user_message').message.id;
  await page.waitForFunction((id) => document.querySelector(`.msg.user[data-id="${id}"]`), last);
  await page.waitForTimeout(200);
  assert.equal(
    await inView(`.tool-card[data-id="tr${last.slice(1)}_2"]`),
    true,
    'the newest card is in view',
  );
  assert.ok((await page.locator('.items > *').count()) < 100, 'only what is near the viewport is rendered');
  // The user scrolls up, a wheel-sized step per frame, until the top.
  const steps = await page.evaluate(async () => {
    const t = document.querySelector('.transcript');
    let n = 0;
    while (t.scrollTop > 0 && n < 10_000) {
      t.scrollTop -= 600;
      n++;
      await new Promise((ok) => requestAnimationFrame(ok));
    }
    await new Promise((ok) => requestAnimationFrame(ok));
    return n;
  });
  assert.ok(steps > 20, 'the scrollbar spans the whole conversation');
  await page.waitForTimeout(100);
  assert.equal(await inView('.msg.user[data-id="q1"]'), true, 'the first question is shown at the top');
  assert.match(await page.locator('.msg.user[data-id="q1"]').textContent(), /Question 1: make step 1 work/);
  // And back down with the keyboard: End reaches the newest message again.
  await page.locator('.transcript').focus();
  await page.keyboard.press('End');
  await page.waitForTimeout(300);
  assert.equal(await inView(`.tool-card[data-id="tr${last.slice(1)}_2"]`), true);
});

test('while the user reads older messages, a streaming answer and new cards do not move the view', {
  skip,
}, async () => {
  const events = await restoreLong(5000);
  let s = events.at(-1).seq;
  const e = (b) => ({ ...b, sessionId: 'long', seq: ++s, ts: 1 });
  await page.waitForTimeout(200);
  // Scroll up a few screens, the way a reader does.
  for (let i = 0; i < 6; i++) {
    await page.evaluate(() => {
      document.querySelector('.transcript').scrollTop -= 500;
    });
    await page.waitForTimeout(30);
  }
  await page.waitForTimeout(200);
  const anchor = await page.evaluate(() => {
    const t = document.querySelector('.transcript').getBoundingClientRect();
    const el = Array.from(document.querySelectorAll('.items > [data-id]')).find(
      (x) => x.getBoundingClientRect().top >= t.top && x.getBoundingClientRect().height > 0,
    );
    return { id: el.dataset.id, top: el.getBoundingClientRect().top };
  });
  await send({ type: 'event', event: e({ type: 'message_start', messageId: 'live', model: 'm' }) });
  for (let i = 0; i < 40; i++) {
    await send({
      type: 'event',
      event: e({
        type: 'message_delta',
        messageId: 'live',
        blockIndex: 0,
        kind: 'text',
        delta: i % 8 === 7 ? `\n\nparagraph ${i}\n\n` : `word${i} `,
      }),
    });
  }
  await send({
    type: 'event',
    event: e({ type: 'tool_start', toolUseId: 'tlive', name: 'Bash', input: { command: 'npm test' } }),
  });
  await page.waitForFunction(() => document.querySelector('.transcript').dataset !== undefined);
  await page.waitForTimeout(300);
  const now = await page.evaluate((id) => {
    const el = document.querySelector(`[data-id="${id}"]`);
    return el ? el.getBoundingClientRect().top : null;
  }, anchor.id);
  assert.notEqual(now, null, 'what the user was reading is still there');
  assert.ok(Math.abs(now - anchor.top) <= 2, `the view moved by ${now - anchor.top} px`);
  // Back at the bottom, following resumes and the live answer is shown.
  await page.evaluate(() => {
    const t = document.querySelector('.transcript');
    t.scrollTop = t.scrollHeight;
  });
  await page.waitForTimeout(200);
  await send({
    type: 'event',
    event: e({ type: 'message_delta', messageId: 'live', blockIndex: 0, kind: 'text', delta: ' the end.' }),
  });
  await page.waitForTimeout(300);
  assert.equal(await inView('.tool-card[data-id="tlive"]'), true, 'the newest output is in view');
  assert.match(await page.locator('.msg[data-id="live"]').textContent(), /word0 .*the end\./s);
});

test('an expanded card stays expanded after it scrolled out of view and back', { skip }, async () => {
  await restoreLong(300);
  await page.waitForTimeout(200);
  const card = page.locator('.tool-card').last();
  const id = await card.getAttribute('data-id');
  await card.locator('summary').first().click();
  assert.equal(await card.locator('details').first().getAttribute('open'), '');
  await page.evaluate(() => {
    document.querySelector('.transcript').scrollTop = 0;
  });
  await page.waitForTimeout(300);
  assert.equal(await page.locator(`.tool-card[data-id="${id}"]`).count(), 0, 'scrolled out of the DOM');
  await page.evaluate(() => {
    const t = document.querySelector('.transcript');
    t.scrollTop = t.scrollHeight;
  });
  await page.waitForTimeout(300);
  assert.equal(await page.locator(`.tool-card[data-id="${id}"] details`).first().getAttribute('open'), '');
});

test('screenshots in dark, light and high-contrast themes', { skip }, async () => {
  const dir = process.env['KEEL_SCREENSHOTS'] ?? mkdtempSync(join(tmpdir(), 'keel-shots-'));
  mkdirSync(dir, { recursive: true });
  for (const theme of ['dark', 'light', 'high-contrast']) {
    await openPanel(theme);
    await page.waitForTimeout(100);
    const path = join(dir, `panel-${theme}.png`);
    await page.screenshot({ path });
    assert.ok(readFileSync(path).length > 10_000);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
  }
  console.log(`screenshots: ${dir}`);
});

test('in demo mode the panel says so and shows no cost', { skip }, async () => {
  await page.goto(`${baseUrl}/index.html?theme=dark&demo=1`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.waitForFunction(() => window.__posted.length > 0);
  seq = 0;
  await send({
    type: 'snapshot',
    sessionId: 's-demo',
    replace: true,
    events: runEvents(),
    todos,
    running: false,
    model: 'claude-sonnet-4-5',
    contextWindow: 200000,
  });
  assert.match(await page.locator('.demo-badge').textContent(), /DEMO/);
  const meter = await page.locator('.meter').textContent();
  assert.match(meter, /demo/);
  assert.doesNotMatch(meter, /\$/, 'no cost in demo mode');
  await page.goto(`${baseUrl}/index.html?theme=dark`);
  await page.waitForFunction(() => window.__posted.length > 0);
  assert.equal(await page.locator('.demo-badge').count(), 0, 'no badge outside demo mode');
});

test("the effort picker shows the chat's level and posts a change; a session reset is a divider and the run goes on", {
  skip,
}, async () => {
  await openPanel('dark');
  const picker = page.getByRole('combobox', { name: 'Thinking effort' });
  assert.equal(await picker.inputValue(), 'medium', 'the default before the host says otherwise');
  await send({ type: 'effort', effort: 'high' });
  assert.equal(await picker.inputValue(), 'high', "the host's level for this chat");
  await picker.selectOption('off');
  assert.deepEqual(await lastPosted(), { type: 'setEffort', effort: 'off' });
  await picker.selectOption('max');
  assert.deepEqual(await lastPosted(), { type: 'setEffort', effort: 'max' });
  // A host message with a level that does not exist is refused by the protocol check, not shown.
  await send({ type: 'effort', effort: 'extreme' });
  assert.equal(await picker.inputValue(), 'max');
  await send({ type: 'event', event: ev({ type: 'effort_change', effort: 'max' }) });
  await page.getByText('Thinking: max effort from now on in this chat.').waitFor();

  // The session is reset mid-run: a line across the chat, and the new session's events go on below it.
  const before = (await posted()).length;
  await send({
    type: 'event',
    event: ev({
      type: 'session_reset',
      oldSessionId: 's1',
      newSessionId: 's2',
      reason: 'driven past 3 compactions',
      compactions: 4,
      logPath: '/w/.keel/sessions/s2.jsonl',
    }),
  });
  const divider = page.getByRole('separator');
  await divider.waitFor();
  assert.match(await divider.textContent(), /Session reset \(driven past 3 compactions\)/);
  await send({
    type: 'event',
    event: ev({ type: 'notice', level: 'info', text: 'still going after the reset' }, 's2'),
  });
  await page.getByText('still going after the reset').waitFor();
  const asked = (await posted()).slice(before).filter((m) => m.type === 'ready');
  assert.deepEqual(asked, [], 'no resync: the new session is the same chat');
});
