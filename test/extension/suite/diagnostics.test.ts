import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Emulator } from '../../emulator/server.ts';
import { connectToEmulator, createHarness, type Harness, waitFor } from './helpers.ts';

// Diagnostics after edits, in the real extension with the built-in TypeScript server: the agent's
// Edit that breaks a type comes back with that error in its tool result (as the emulator received
// it), within the bounded wait; the Edit that fixes it reports none.

/** The tool_result texts of one request, in order. */
function toolResults(request: { body: unknown }): string[] {
  const messages = (request.body as { messages?: { content: unknown }[] }).messages ?? [];
  const out: string[] = [];
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const block of m.content as { type: string; content?: unknown }[]) {
      if (block.type !== 'tool_result') continue;
      out.push(typeof block.content === 'string' ? block.content : JSON.stringify(block.content));
    }
  }
  return out;
}

const prefixOf = (request: { body: unknown }) => {
  const body = request.body as { system?: unknown; tools?: unknown };
  return JSON.stringify([body.system, body.tools]);
};

describe('Editor context: diagnostics after edits', () => {
  let connection: Awaited<ReturnType<typeof connectToEmulator>>;
  let emulator: Emulator;
  let h: Harness;
  before(async () => {
    connection = await connectToEmulator();
    emulator = connection.emulator;
  });
  after(async () => {
    await connection.disconnect();
  });
  beforeEach(() => {
    h = createHarness();
  });
  afterEach(async () => {
    await waitFor('the run to end', () => !connection.api.controller.current?.running, 30_000);
    await vscode.commands.executeCommand('keel.acceptAllEdits');
    await h.dispose();
  });

  it('an Edit that introduces a type error returns it; the Edit that fixes it reports none', async function () {
    this.timeout(180_000);
    const ts = vscode.extensions.getExtension('vscode.typescript-language-features');
    assert.ok(ts, 'the built-in TypeScript extension ships with code-server');
    const p = h.file('typed.ts');
    const rel = path.relative(h.root, p);
    // An old error on line 1 that the agent does not touch: it must not be reported as new.
    fs.writeFileSync(p, 'export const old: string = 1;\nexport const x: number = 1;\n');
    // Test setup, not a retry: a cold TypeScript server can take longer than the bounded wait to
    // load its first project, so open the file and wait for its first diagnostics before the run.
    const uri = vscode.Uri.file(p);
    // TypeScript checks only documents open in a tab.
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: false });
    const coldStart = Date.now();
    await waitFor(
      'the TypeScript server to report the old error',
      () => vscode.languages.getDiagnostics(uri).some((d) => d.range.start.line === 0),
      120_000,
    );
    console.log(`[keel] TypeScript server's first diagnostics after ${Date.now() - coldStart} ms`);

    // When the error shows up, measured from the moment the agent's edit reaches the document.
    let edited: number | undefined;
    let reported: number | undefined;
    const changes: number[] = [];
    const watchers = [
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document.uri.fsPath !== p || e.contentChanges.length === 0) return;
        changes.push(Date.now());
        edited ??= Date.now();
      }),
      vscode.languages.onDidChangeDiagnostics(() => {
        if (reported !== undefined || edited === undefined) return;
        if (vscode.languages.getDiagnostics(uri).some((d) => d.range.start.line === 1)) reported = Date.now();
      }),
    ];
    emulator.setScenario({
      replies: [
        { content: [{ type: 'tool_use', name: 'Read', input: { path: rel } }] },
        {
          content: [
            {
              type: 'tool_use',
              name: 'Edit',
              input: { path: rel, old_string: 'x: number = 1;', new_string: 'x: number = "s";' },
            },
          ],
        },
        {
          content: [
            {
              type: 'tool_use',
              name: 'Edit',
              input: { path: rel, old_string: 'x: number = "s";', new_string: 'x: number = 2;' },
            },
          ],
        },
        { content: [{ type: 'text', text: 'Done.' }] },
      ],
      onExhausted: 'repeat_last',
    });
    const start = emulator.requests.length;
    const result = await connection.api.controller.submit('Change x', {
      idempotencyKey: `diag-${Date.now()}`,
    });
    assert.ok(result.ok && result.outcome, result.error);
    const outcome = await result.outcome;
    for (const w of watchers) w.dispose();
    assert.equal(outcome.status, 'finished', JSON.stringify(outcome));

    const sent = emulator.requests.slice(start);
    assert.equal(sent.length, 4);
    const results = toolResults(sent.at(-1)!).slice(-3);
    const [, broke, fixed] = results;
    assert.ok(broke && fixed, JSON.stringify(results));
    assert.match(broke, /New problems introduced by this edit:/, broke);
    assert.match(
      broke,
      new RegExp(
        `${rel.replace(/[.\\/]/g, '\\$&')}:2:14 error Type 'string' is not assignable to type 'number'\\. \\[ts 2322\\]`,
      ),
      broke,
    );
    assert.doesNotMatch(broke, /:1:\d+ error/, 'the old error on line 1 is not new');
    assert.doesNotMatch(fixed, /New problems/, fixed);
    // Not asserted: on a loaded machine the server's answer to the fix may come after the cap, and then
    // the result says nothing at all (also "none"); the count itself is covered by the unit tests.
    console.log(
      `[keel] fixing Edit ${/Problems fixed by this edit: 1\./.test(fixed) ? 'counted the fix' : 'reported nothing'}`,
    );
    assert.equal(fs.readFileSync(p, 'utf8'), 'export const old: string = 1;\nexport const x: number = 2;\n');
    // P1: the diagnostics went into tool results only; system prompt and tools stayed byte-identical.
    assert.equal(new Set(sent.map(prefixOf)).size, 1);
    assert.ok(edited !== undefined && reported !== undefined, 'the error was reported in VS Code');
    console.log(`[keel] the type error reached VS Code's diagnostics ${reported - edited} ms after the edit`);
    const [first, second] = changes;
    assert.ok(first !== undefined && second !== undefined, `${changes.length} content changes`);
    // Bounded: between the breaking Edit reaching the document and the fixing Edit reaching it lie
    // the first Edit's wait (2 s cap), one model round trip and the second Edit's checks.
    assert.ok(second - first < 5000, `${second - first} ms`);
    console.log(`[keel] breaking Edit applied → fixing Edit applied: ${second - first} ms`);
  });
});

describe('Editor context: @problems and @changes', () => {
  let connection: Awaited<ReturnType<typeof connectToEmulator>>;
  let emulator: Emulator;
  let h: Harness;
  let git: (...args: string[]) => string;
  before(async () => {
    connection = await connectToEmulator();
    emulator = connection.emulator;
  });
  after(async () => {
    await connection.disconnect();
  });
  beforeEach(() => {
    h = createHarness();
    git = (...args) => execFileSync('git', args, { cwd: h.root, encoding: 'utf8' });
  });
  afterEach(async () => {
    await waitFor('the run to end', () => !connection.api.controller.current?.running, 30_000);
    await h.dispose();
    fs.rmSync(path.join(h.root, '.git'), { recursive: true, force: true });
  });

  it('reach the request as reminders: the editor problems and the working-tree diff', async function () {
    this.timeout(180_000);
    // A repository with one committed file, then changed; and a TS file with a type error.
    git('init', '-q');
    const tracked = h.file('tracked.txt');
    fs.writeFileSync(tracked, 'committed line\n');
    git('add', path.relative(h.root, tracked));
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'base');
    fs.writeFileSync(tracked, 'committed line\nchanged in the working tree\n');
    const broken = h.file('broken.ts');
    fs.writeFileSync(broken, 'export const n: number = "nope";\n');
    const uri = vscode.Uri.file(broken);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: false });
    await waitFor(
      'the TypeScript error',
      () => vscode.languages.getDiagnostics(uri).length > 0 || undefined,
      120_000,
    );

    emulator.setScenario({
      replies: [{ content: [{ type: 'text', text: 'Seen.' }] }],
      onExhausted: 'repeat_last',
    });
    const start = emulator.requests.length;
    // As the panel sends it after @problems was chosen from the completion list.
    const result = await connection.api.controller.submit('What is wrong? @problems @changes', {
      mentions: ['problems'],
      idempotencyKey: `mentions-${Date.now()}`,
    });
    assert.ok(result.ok && result.outcome, result.error);
    assert.equal((await result.outcome).status, 'finished');
    const [sent] = emulator.requests.slice(start);
    assert.ok(sent);
    const messages = (sent.body as { messages: { role: string; content: unknown }[] }).messages;
    const last = JSON.stringify(messages);
    const rel = (p: string) => path.relative(h.root, p);
    assert.match(last, /The user mentioned @problems/);
    assert.ok(last.includes(`${rel(broken)}:1:14 error`) && last.includes('[ts 2322]'), last);
    assert.match(last, /The user mentioned @changes/);
    assert.ok(last.includes('+changed in the working tree'), last);
    assert.ok(last.includes(`- ${rel(broken)}`), 'the untracked file is listed');
    assert.ok(last.includes('What is wrong? @problems @changes'), 'the user text itself is unchanged');
    assert.ok(!last.includes('referenced these files'), 'a chosen @problems is not a file to read');
    // The system prompt and tools do not carry any of it (P1).
    const body = sent.body as { system?: unknown; tools?: unknown };
    assert.doesNotMatch(JSON.stringify([body.system, body.tools]), /changed in the working tree|nope/);
  });
});
