import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { SuiteError } from '../../src/agent/eval/schema.ts';
import { evalSuiteConsent } from '../../src/extension/evalConsent.ts';

// "Run Eval Suite…" in VS Code: what the modal says before a workspace suite runs (the decision and
// its text are plain functions; the modal itself is vscode.window.showWarningMessage).

function suiteIn(parent: string): string {
  const dir = path.join(parent, 'eval', 'mine');
  const write = (name: string, content: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
  };
  write('suite.json', { name: 'mine', defaults: { env: { LEVEL: '3' } } });
  write('fixture/a.txt', 'x\n');
  write('tasks/a.json', {
    id: 'a',
    prompt: 'x',
    fixture: 'fixture',
    approve: 'all',
    graders: [
      { type: 'command', run: 'npm test' },
      { type: 'command', run: 'npm run e2e', network: true },
      { type: 'file', path: 'a.txt', contains: 'x' },
    ],
  });
  return dir;
}

test('a workspace suite: the modal names the suite file, every grader command, a free-running agent and declared variables', () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-ws-')));
  try {
    const suite = suiteIn(ws);
    const consent = evalSuiteConsent(suite, [ws]);
    assert.equal(consent.fromWorkspace, true);
    assert.equal(consent.suiteFile, path.join(suite, 'suite.json'));
    assert.match(
      consent.detail,
      new RegExp(`Suite: ${consent.suiteFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    assert.match(consent.detail, /• a: npm test\n/);
    assert.match(consent.detail, /• a: npm run e2e {3}\(with network\)/);
    assert.match(consent.detail, /without asking in: a \(approve: all\)/);
    assert.match(consent.detail, /Variables the suite sets for its graders: LEVEL/);
    // A suite elsewhere (picked by the user outside any workspace folder) is not repository content.
    assert.equal(
      evalSuiteConsent(suite, [fs.mkdtempSync(path.join(os.tmpdir(), 'keel-other-'))]).fromWorkspace,
      false,
    );
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
});

test('a bad suite is refused before the modal (SuiteError)', () => {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-ws-')));
  try {
    const suite = suiteIn(ws);
    const task = JSON.parse(fs.readFileSync(path.join(suite, 'tasks', 'a.json'), 'utf8'));
    fs.writeFileSync(path.join(suite, 'tasks', 'a.json'), JSON.stringify({ ...task, fixture: '../../..' }));
    assert.throws(() => evalSuiteConsent(suite, [ws]), SuiteError);
  } finally {
    fs.rmSync(ws, { recursive: true, force: true });
  }
});
