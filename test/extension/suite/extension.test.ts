import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { createAgentSession } from '../../../src/agent/session/session.ts';
import { createGrepTool } from '../../../src/agent/tools/grep.ts';
import { createModalApprovals } from '../../../src/extension/approvals.ts';
import { findRipgrep } from '../../../src/extension/ripgrep.ts';
import { type Emulator, startEmulator } from '../../emulator/server.ts';
import { createHarness, type Harness } from './helpers.ts';

// The extension as installed: manifest, activation, commands, workspace trust, ripgrep, and the
// agent hearing about a rejected hunk — the last two against the protocol emulator.

const EXTENSION_ID = 'keel-dev.keel';

interface KeelApi {
  readonly activationMs: number;
  readonly moduleLoadMs: number;
}

function toolNames(request: { body: unknown }): string[] {
  const body = request.body as { tools?: { name: string }[] };
  return (body.tools ?? []).map((t) => t.name).sort();
}

function requestText(request: { body: unknown }): string {
  return JSON.stringify((request.body as { messages?: unknown }).messages ?? []);
}

describe('Keel extension in VS Code', () => {
  it('activates quickly and registers its commands', async () => {
    const ext = vscode.extensions.getExtension<KeelApi>(EXTENSION_ID);
    assert.ok(ext, 'extension found');
    const api = await ext.activate();
    assert.equal(ext.isActive, true);
    assert.ok(api.activationMs < 1000, `activation took ${api.activationMs} ms`);
    console.log(
      `[keel] module load ${api.moduleLoadMs.toFixed(1)} ms + activate ${api.activationMs.toFixed(1)} ms in VS Code ${vscode.version}`,
    );
    const commands = await vscode.commands.getCommands(true);
    for (const id of [
      'keel.newChat',
      'keel.askAboutSelection',
      'keel.explainSelection',
      'keel.fixProblems',
      'keel.writeTests',
      'keel.reviewChanges',
      'keel.stop',
      'keel.acceptAllEdits',
      'keel.rejectAllEdits',
      'keel.setApiKey',
      'keel.showLog',
      'keel.openSessionLog',
    ]) {
      assert.ok(commands.includes(id), `${id} is registered`);
    }
  });

  it('declares limited support for untrusted workspaces and runs on the workspace side', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON as {
      capabilities: { untrustedWorkspaces: { supported: string } };
      extensionKind: string[];
    };
    assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
    assert.deepEqual(pkg.extensionKind, ['workspace']);
  });

  it('finds the ripgrep bundled with VS Code and it runs', () => {
    const rg = findRipgrep(vscode.env.appRoot, '/nonexistent');
    assert.ok(rg, `no rg under ${vscode.env.appRoot}`);
    assert.ok(rg.startsWith(vscode.env.appRoot), rg);
    assert.match(execFileSync(rg, ['--version'], { encoding: 'utf8' }), /ripgrep \d+/);
  });

  it('activates after startup (never during it), for views, commands and pending reviews', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)?.packageJSON as { activationEvents: string[] };
    // onStartupFinished: VS Code's Chat view runs a participant only with a model selected in its picker,
    // and it asks a vendor for models only once that vendor's extension is active. Without it, the first
    // `@keel` request of a user with only a Keel key fails ("Language model unavailable").
    assert.deepEqual(pkg.activationEvents, ['workspaceContains:.keel/review', 'onStartupFinished']);
  });

  it('without any ripgrep (the .vsix ships none), Grep answers with its plain scan and says so', async () => {
    assert.equal(findRipgrep('/nonexistent-app-root', '/nonexistent-extension'), undefined);
    const h = createHarness();
    try {
      assert.equal(h.host.ripgrepPath, undefined);
      const result = await createGrepTool().execute(
        {
          pattern: 'anything',
          path: h.dir,
          case_insensitive: false,
          output_mode: 'content',
          multiline: false,
        },
        h.context(),
      );
      assert.equal(result.status, 'success', result.text);
      assert.match(result.text, /ripgrep is not installed or not configured[^\n]*plain scan/);
      assert.match((result.data as { fallback?: string }).fallback ?? '', /ripgrep/);
    } finally {
      await h.dispose();
    }
  });

  it('approval policies from settings answer without a dialog', async () => {
    const approvals = createModalApprovals({ policyFor: (kind) => (kind === 'command' ? 'deny' : 'allow') });
    const request = { kind: 'command', title: 'Run command', detail: 'make deploy', risk: 'medium' } as const;
    assert.equal(await approvals.ask(request), 'deny');
    assert.equal(await approvals.ask({ ...request, kind: 'delete' }), 'allow_once');
  });
});

describe('Keel sessions against the emulator', () => {
  let emulator: Emulator;
  let h: Harness;
  beforeEach(async () => {
    h = createHarness();
    emulator = await startEmulator({ port: 0 });
  });
  afterEach(async () => {
    await emulator.close();
    await h.dispose();
  });

  const session = (overrides: { readOnly?: boolean; trusted?: boolean } = {}) =>
    createAgentSession({
      host:
        overrides.trusted === false
          ? { ...h.host, workspace: { ...h.host.workspace, isTrusted: () => false } }
          : h.host,
      model: 'claude-sonnet-4-6',
      apiKey: 'test-key',
      baseURL: emulator.url,
      maxTurns: 3,
    });

  it('an untrusted workspace offers the model only read-only tools', async () => {
    const untrusted = session({ trusted: false });
    await untrusted.prompt('hello');
    untrusted.dispose();
    const trusted = session();
    await trusted.prompt('hello');
    trusted.dispose();
    assert.equal(emulator.requests.length, 2);
    const [limited, full] = emulator.requests.map(toolNames);
    for (const writeTool of ['Bash', 'Edit', 'MultiEdit', 'Write']) {
      assert.ok(!limited!.includes(writeTool), `${writeTool} must not be offered when untrusted: ${limited}`);
    }
    for (const writeTool of ['Edit', 'Write']) {
      assert.ok(full!.includes(writeTool), `${writeTool} is offered when trusted: ${full}`);
    }
    assert.ok(limited!.includes('Read') && limited!.includes('Grep'));
  });

  it('a rejected hunk is told to the agent at its next turn', async () => {
    const p = h.file('told.txt');
    fs.writeFileSync(p, 'one\ntwo\n');
    await h.host.workspace.writeFile(p, new TextEncoder().encode('one\nTWO\n'));
    const [hunk] = await h.review.hunks(p);
    assert.ok(hunk);
    const s = session();
    // What the extension does with every rejection note.
    await h.review.reject(p, hunk.id);
    for (const note of h.rejections) s.notify(note.description, 'review');
    await s.prompt('carry on');
    s.dispose();
    const sent = requestText(emulator.requests.at(-1)!);
    assert.match(sent, /rejected your change to line 2 in t[^ ]*\/told\.txt/);
    assert.equal(fs.readFileSync(p, 'utf8'), 'one\ntwo\n');
    assert.ok(fs.existsSync(path.join(h.root, '.keel', 'sessions')), 'the session log lives under .keel/');
  });
});
