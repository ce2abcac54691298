import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { WEBVIEW_STRINGS } from '../../src/shared/webviewStrings.ts';

// The second locale (zh-cn) is complete: every %key% of package.json has an English and a Chinese text,
// and every string the extension passes to vscode.l10n.t (host code and the panel's table) has a Chinese
// one with the same {0} arguments. A string added in English only fails here.

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const read = (rel: string) =>
  JSON.parse(fs.readFileSync(path.join(ROOT, rel), 'utf8')) as Record<string, string>;

test('package.json: every %key% has an English and a Chinese text, and nothing else is listed', () => {
  const manifest = fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8');
  const keys = new Set([...manifest.matchAll(/"%([^%"]+)%"/g)].map((m) => m[1]!));
  assert.ok(keys.size > 60, `${keys.size} keys`);
  const en = read('package.nls.json');
  const zh = read('package.nls.zh-cn.json');
  assert.deepEqual(Object.keys(en).sort(), [...keys].sort());
  assert.deepEqual(Object.keys(zh).sort(), [...keys].sort());
  for (const key of keys) assert.ok(zh[key]!.trim().length > 0, key);
  // Commands keep their category; a title in Chinese.
  assert.equal(zh['keel.addSelectionToChat.title'], '将所选内容添加到聊天');
});

function l10nCalls(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const text = fs.readFileSync(path.join(entry.parentPath, entry.name), 'utf8');
    // Single-quoted, or double-quoted when the text holds an apostrophe (the formatter's choice).
    for (const m of text.matchAll(/l10n\.t\(\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")/g))
      out.push((m[1] ?? m[2]!).replace(/\\(['"])/g, '$1'));
  }
  return out;
}

test('every vscode.l10n.t string and every panel string has a Chinese text with the same arguments', () => {
  const zh = read('l10n/bundle.l10n.zh-cn.json');
  const used = new Set([...l10nCalls(path.join(ROOT, 'src', 'extension')), ...WEBVIEW_STRINGS]);
  // The approval dialog's buttons are translated by their English titles (approvalButtons.ts).
  for (const button of ['Allow once', 'Allow for this session', 'Deny', 'Cancel']) used.add(button);
  assert.ok(used.size > 25, `${used.size} strings`);
  const args = (s: string) => [...s.matchAll(/\{\d+\}/g)].map((m) => m[0]).sort();
  for (const s of used) {
    const t = zh[s];
    assert.ok(t, `no zh-cn text for ${JSON.stringify(s)}`);
    assert.deepEqual(args(t), args(s), s);
  }
});
