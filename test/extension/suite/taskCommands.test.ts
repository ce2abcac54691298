import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { KeelApi } from '../../../src/extension/extension.ts';
import type { Emulator } from '../../emulator/server.ts';
import { connectToEmulator, createHarness, type Harness, waitFor } from './helpers.ts';

// Keel's task commands, end to end through the installed extension: the command builds the prompt
// from what VS Code knows (diagnostics, git status) and the emulator receives it.

function lastRequestText(emulator: Emulator): string {
  const last = emulator.requests.at(-1);
  assert.ok(last, 'the model was called');
  return JSON.stringify((last.body as { messages?: unknown }).messages ?? []);
}

describe('Task commands against the emulator', () => {
  let emulator: Emulator;
  let api: KeelApi;
  let h: Harness;
  let disconnect: () => Promise<void>;

  before(async () => {
    ({ emulator, api, disconnect } = await connectToEmulator());
  });
  after(async () => {
    await disconnect();
  });
  beforeEach(() => {
    h = createHarness();
    emulator.setScenario({ replies: [{ content: [{ type: 'text', text: 'On it.' }] }] });
  });
  afterEach(async () => {
    // One run at a time: the next command must start a run, not steer this one.
    await waitFor('the run to end', () => !api.controller.current?.running, 30_000);
    await h.dispose();
  });

  const runCommand = async (id: string) => {
    const before = emulator.requests.length;
    await vscode.commands.executeCommand(id);
    await waitFor(`${id} to reach the model`, () => emulator.requests.length > before, 30_000);
    return lastRequestText(emulator);
  };

  it('Fix Problems in This File sends the file, each problem with its line, and no hints', async () => {
    const p = h.file('broken.ts');
    fs.writeFileSync(p, 'export const a = 1;\nexport const n: number = "two";\nexport const c = 3;\n');
    const uri = vscode.Uri.file(p);
    const diagnostics = vscode.languages.createDiagnosticCollection('keel-test');
    try {
      const error = new vscode.Diagnostic(
        new vscode.Range(1, 13, 1, 14),
        "Type 'string' is not assignable to type 'number'.",
        vscode.DiagnosticSeverity.Error,
      );
      error.source = 'ts';
      error.code = 2322;
      const warning = new vscode.Diagnostic(
        new vscode.Range(2, 0, 2, 6),
        'Prefer a named constant.',
        vscode.DiagnosticSeverity.Warning,
      );
      const hint = new vscode.Diagnostic(
        new vscode.Range(0, 0, 0, 6),
        'A mere hint.',
        vscode.DiagnosticSeverity.Hint,
      );
      diagnostics.set(uri, [error, warning, hint]);
      await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
      const sent = await runCommand('keel.fixProblems');
      const rel = path.relative(h.root, p);
      assert.ok(sent.includes(`Fix the problems VS Code reports in ${rel}`), sent);
      assert.match(sent, /2:14 error: Type 'string' is not assignable to type 'number'\. \[ts 2322\]/);
      assert.match(sent, /3:1 warning: Prefer a named constant\./);
      assert.doesNotMatch(sent, /A mere hint/);
    } finally {
      diagnostics.dispose();
    }
  });

  it('Review Uncommitted Changes sends the git status of the workspace', async () => {
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=Keel Test', '-c', 'user.email=test@keel.invalid', ...args], {
        cwd: h.root,
        encoding: 'utf8',
      });
    const readme = path.join(h.root, 'README.md');
    const original = fs.readFileSync(readme, 'utf8');
    fs.writeFileSync(path.join(h.root, '.gitignore'), '.keel/\n.vscode/\nt*/\n');
    try {
      git('init', '-q');
      git('add', 'README.md', '.gitignore');
      git('commit', '-qm', 'initial');
      fs.writeFileSync(readme, `${original}A change to review.\n`);
      fs.writeFileSync(path.join(h.root, 'added.txt'), 'new\n');
      const sent = await runCommand('keel.reviewChanges');
      assert.match(sent, /Review the uncommitted changes in this repository/);
      assert.match(sent, / M README\.md/);
      assert.match(sent, /\?\? added\.txt/);
    } finally {
      fs.writeFileSync(readme, original);
      fs.rmSync(path.join(h.root, 'added.txt'), { force: true });
      fs.rmSync(path.join(h.root, '.gitignore'), { force: true });
      fs.rmSync(path.join(h.root, '.git'), { recursive: true, force: true });
    }
  });
});
