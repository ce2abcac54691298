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

// safety/ is below tools/: tools import safety checks, safety never imports a tool (or the loop).
const IMPORT_UPWARD = /(?:from|import)\s*\(?\s*['"](?:\.\.\/)+(?:tools|loop|session)(?:\/|\.ts)/;

test('src/agent/safety imports nothing from tools, the loop or the session (one direction)', () => {
  const files = sourceFiles('src/agent/safety');
  assert.ok(files.length > 20, 'expected the safety sources to be found');
  const offenders = files.filter((f) => IMPORT_UPWARD.test(readFileSync(f, 'utf8')));
  assert.deepEqual(offenders, []);
  assert.match("import type { ToolError } from '../../tools/protocol.ts';", IMPORT_UPWARD);
  assert.doesNotMatch("import { canonicalize } from '../paths/pathGuard.ts';", IMPORT_UPWARD);
});

test('src/agent/safety is grouped in sub-folders with no file over 400 lines', () => {
  const files = sourceFiles('src/agent/safety');
  const long = files
    .map((f) => ({ f, lines: readFileSync(f, 'utf8').split('\n').length }))
    .filter((x) => x.lines > 400);
  assert.deepEqual(long, []);
  for (const folder of ['shell', 'rules', 'paths', 'guards'])
    assert.ok(
      files.some((f) => f.includes(join('safety', folder))),
      `expected safety/${folder}/`,
    );
});
