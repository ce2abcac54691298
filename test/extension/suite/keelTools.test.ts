import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { workspaceRoots } from '../../../src/extension/vscodeHost.ts';
import { waitFor } from './helpers.ts';

// Keel's read-only tools as VS Code language-model tools, called the way another agent in VS Code
// calls them: from another extension (the lm-provider fixture) with `vscode.lm.invokeTool`. They answer
// as Keel's own Read/Grep would, and the path guard holds for them: a path outside the open folders,
// or a link out of them, is refused and its content never comes back.

interface Invoker {
  invoke(name: string, input: unknown): Promise<string>;
}

describe("Keel's read-only tools for VS Code's agents (vscode.lm tools)", () => {
  let invoker: Invoker;
  let root: string;
  const made: string[] = [];
  before(async function () {
    this.timeout(60_000);
    const fixture = vscode.extensions.getExtension<Invoker>('keel-test.lm-provider');
    assert.ok(fixture);
    invoker = await fixture.activate();
    const keel = vscode.extensions.getExtension('keel-dev.keel');
    assert.ok(keel);
    await keel.activate();
    root = workspaceRoots()[0]!;
  });
  after(() => {
    for (const p of made) fs.rmSync(p, { recursive: true, force: true });
  });

  it('lists keel_read, keel_grep, keel_glob and keel_ls, and Read answers with numbered lines', async function () {
    this.timeout(60_000);
    await waitFor('the tools to be listed', () =>
      ['keel_read', 'keel_grep', 'keel_glob', 'keel_ls'].every((n) =>
        vscode.lm.tools.some((t) => t.name === n),
      )
        ? true
        : undefined,
    );
    const rel = `lmtool-${Date.now().toString(36)}.txt`;
    const file = path.join(root, rel);
    made.push(file);
    fs.writeFileSync(file, 'first line\nsecond NEEDLE_42 line\n');
    const read = await invoker.invoke('keel_read', { path: rel });
    assert.match(read, /1\tfirst line\n\s*2\tsecond NEEDLE_42 line/);
    const grep = await invoker.invoke('keel_grep', { pattern: 'NEEDLE_\\d+' });
    assert.match(grep, new RegExp(`^${rel.replace('.', '\\.')}$`, 'm'));
    const bad = await invoker.invoke('keel_read', { offset: 'x' });
    assert.match(bad, /INVALID_PARAM/);
  });

  it('refuses a path outside the open folders and a link out of them; the content never comes back', async function () {
    this.timeout(60_000);
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-lmtool-out-'));
    made.push(outside);
    const secret = path.join(outside, 'secret.txt');
    fs.writeFileSync(secret, 'OUTSIDE_SECRET_7\n');
    const link = path.join(root, `lmtool-link-${Date.now().toString(36)}`);
    made.push(link);
    fs.symlinkSync(secret, link);
    for (const p of [secret, path.relative(root, link), path.relative(root, secret)]) {
      const text = await invoker.invoke('keel_read', { path: p });
      assert.doesNotMatch(text, /OUTSIDE_SECRET_7/, `${p} must not be read`);
      assert.match(text, /OUTSIDE_WORKSPACE|ACCESS_DENIED/, text);
    }
  });
});
