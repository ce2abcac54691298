import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

// The core must stay host-agnostic: nothing under src/agent may import 'vscode'.
const IMPORT_VSCODE =
  /(from\s+['"]vscode['"]|\bimport\s+['"]vscode['"]|require\(\s*['"]vscode['"]\s*\)|import\(\s*['"]vscode['"]\s*\))/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? sourceFiles(full) : /\.(ts|js|mjs|cjs)$/.test(name) ? [full] : [];
  });
}

test('no file under src/agent imports vscode', () => {
  const files = sourceFiles('src/agent');
  assert.ok(files.length > 5, 'expected the core sources to be found');
  const offenders = files.filter((f) => IMPORT_VSCODE.test(readFileSync(f, 'utf8')));
  assert.deepEqual(offenders, []);
});

test('the purity check recognises every import form', () => {
  for (const line of [
    "import * as vscode from 'vscode';",
    'const v = require("vscode");',
    "await import('vscode')",
    "import 'vscode';",
    "export { window } from 'vscode';",
  ]) {
    assert.match(line, IMPORT_VSCODE);
  }
  assert.doesNotMatch("import { x } from './vscode-like.ts';", IMPORT_VSCODE);
});
