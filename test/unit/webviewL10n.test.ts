import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { WEBVIEW_STRINGS } from '../../src/shared/webviewStrings.ts';

// The panel in zh-cn: the table the host hands the webview (chatHtml.ts: each WEBVIEW_STRINGS entry
// through vscode.l10n.t, here the shipped bundle), read by webview-ui/src/l10n.ts from #app. What
// the user sees of a denial, the run's notices: Chinese, with what was denied verbatim.

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const bundle = JSON.parse(
  fs.readFileSync(path.join(ROOT, 'l10n', 'bundle.l10n.zh-cn.json'), 'utf8'),
) as Record<string, string>;
const table = Object.fromEntries(WEBVIEW_STRINGS.map((s) => [s, bundle[s] ?? s]));
// The page the host writes: <div id="app" data-l10n="…">. Set before the panel's modules read it.
(globalThis as { document?: unknown }).document = {
  getElementById: (id: string) => (id === 'app' ? { dataset: { l10n: JSON.stringify(table) } } : null),
};
const { userFacingError } = await import('../../webview-ui/src/format.ts');
const { reduce } = await import('../../webview-ui/src/reducer.ts');
const { initialState } = await import('../../webview-ui/src/model.ts');

test('a denial card says in Chinese what you denied, the command verbatim', () => {
  // A command with the table's own placeholders in it: shown as typed, never substituted.
  const command = 'rm -rf "{0}" build && echo {1}';
  const bash = userFacingError({
    code: 'DENIED_BY_USER',
    message: `The user denied running: ${command}.`,
    suggestion: 'Do not retry this command; ask the user how to proceed.',
  });
  assert.deepEqual(bash, { label: '已拒绝', message: `你拒绝了运行：${command}。` });
  const edit = userFacingError({
    code: 'DENIED_BY_USER',
    message: 'The user declined the change to .github/workflows/ci.yml (a CI workflow).',
  });
  assert.equal(edit.message, '你拒绝了对 .github/workflows/ci.yml (a CI workflow) 的更改。');
  const memory = userFacingError({
    code: 'DENIED_BY_USER',
    message: 'Not saved: the user did not approve this memory change.',
  });
  assert.equal(memory.message, '未保存：你没有批准这项记忆更改。');
  assert.equal(userFacingError({ code: 'BLOCKED_BY_POLICY', message: 'x' }).label, '已阻止');
  // A code without a friendlier label stays the code.
  assert.equal(userFacingError({ code: 'TIMEOUT', message: 'x' }).label, 'TIMEOUT');
});

test("the run's own notices are in Chinese", () => {
  const event = (body: object, seq: number) => ({ ...body, sessionId: 's', seq, ts: seq }) as never;
  let state = reduce(initialState(), event({ type: 'agent_start', runId: 'r' }, 1));
  state = reduce(state, event({ type: 'agent_end', runId: 'r', status: 'aborted' }, 2));
  const notice = state.items.find((i) => i.kind === 'notice');
  assert.equal(notice?.kind === 'notice' ? notice.text : undefined, '已停止。');
});
