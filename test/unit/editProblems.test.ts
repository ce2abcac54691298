import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type { DiagnosticsPort, Host, Problem } from '../../src/agent/host.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createReadLedger, sha256Hex } from '../../src/agent/safety/guards/readLedger.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { createEditTool } from '../../src/agent/tools/edit.ts';
import { createWriteGate } from '../../src/agent/tools/editing/gate.ts';
import { compareProblems, formatDelta, formatProblem } from '../../src/agent/tools/editing/problems.ts';
import type { ToolContext } from '../../src/agent/tools/protocol.ts';
import { createWriteTool } from '../../src/agent/tools/write.ts';

// Diagnostics after edits, the core half: only what the edit introduced, capped, into the result.

const err = (line: number, message: string, extra: Partial<Problem> = {}): Problem => ({
  line,
  column: 7,
  severity: 'error',
  message,
  source: 'ts',
  code: '2322',
  ...extra,
});

test('a new error is reported; problems that were there before are not', () => {
  const old = err(1, 'Cannot find name "y".', { code: '2304' });
  const added = err(3, "Type 'string' is not assignable to type 'number'.");
  const delta = compareProblems([old], [old, added]);
  assert.deepEqual(delta, { introduced: [added], fixed: 0 });
});

test('an old problem moved down by inserted lines is the same problem, not a new one', () => {
  const old = err(2, 'Unused variable.', { severity: 'warning', code: '6133' });
  const delta = compareProblems([old], [{ ...old, line: 5 }]);
  assert.deepEqual(delta, { introduced: [], fixed: 0 });
});

test('a fixed error reports nothing new and counts as fixed; duplicates are counted one by one', () => {
  const a = err(3, 'same message');
  const b = err(9, 'same message');
  assert.deepEqual(compareProblems([a], []), { introduced: [], fixed: 1 });
  // Two identical messages where there was one: exactly one is new (the one not at the old place).
  assert.deepEqual(compareProblems([a], [a, b]), { introduced: [b], fixed: 0 });
  assert.equal(formatDelta('a.ts', compareProblems([a], [])), 'Problems fixed by this edit: 1.');
  assert.equal(formatDelta('a.ts', compareProblems([a], [a])), '');
});

test('format: path:line:col severity message [source code], errors first, capped with a count', () => {
  assert.equal(
    formatProblem('src/a.ts', err(4, "Type 'string'\n  is not assignable.")),
    "src/a.ts:4:7 error Type 'string' is not assignable. [ts 2322]",
  );
  assert.equal(
    formatProblem('b.py', { line: 1, column: 1, severity: 'warning', message: 'x' }),
    'b.py:1:1 warning x',
  );
  const many = Array.from({ length: 13 }, (_, i) =>
    err(20 - i, `e${i}`, { severity: i === 12 ? 'error' : 'warning' }),
  );
  const text = formatDelta('a.ts', { introduced: many, fixed: 0 }, 10).split('\n');
  assert.equal(text[0], 'New problems introduced by this edit:');
  assert.equal(text.length, 1 + 10 + 1);
  assert.match(text[1]!, /^a\.ts:8:7 error e12/, 'the error comes before the warnings');
  assert.match(text[2]!, /^a\.ts:9:7 warning e11/, 'then by line');
  assert.equal(text.at(-1), '… and 3 more');
  assert.ok(formatProblem('a.ts', err(1, 'x'.repeat(1000))).length < 340, 'long messages are cut');
});

const temps: string[] = [];
after(() => {
  for (const t of temps) fs.rmSync(t, { recursive: true, force: true });
});

/** A host whose "language server" reports `next` for any file after a write. */
function setup(report: (text: string) => Problem[]) {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-problems-')));
  temps.push(ws);
  const node = createNodeHost({ workspace: ws, approvals: { ask: async () => 'allow_once' } });
  const calls: string[] = [];
  const diagnostics: DiagnosticsPort = {
    begin(p) {
      calls.push(`begin ${path.basename(p)}`);
      const baseline = fs.existsSync(p) ? report(fs.readFileSync(p, 'utf8')) : [];
      return {
        baseline,
        settle: async () => {
          calls.push('settle');
          return report(fs.readFileSync(p, 'utf8'));
        },
        dispose: () => calls.push('dispose'),
      };
    },
  };
  const host: Host = { ...node, diagnostics };
  const ledger = createReadLedger();
  const guard = createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir });
  const ctx: ToolContext = {
    host,
    sessionId: 's',
    toolUseId: 't',
    signal: new AbortController().signal,
    ledger,
    guard,
    audit: () => undefined,
    update: () => undefined,
  };
  const read = (rel: string) =>
    ledger.recordRead(path.join(ws, rel), sha256Hex(fs.readFileSync(path.join(ws, rel))));
  return { ws, ctx, calls, read };
}

const typeCheck = (text: string): Problem[] =>
  text
    .split('\n')
    .flatMap((line, i) =>
      /: number = "/.test(line) ? [err(i + 1, "Type 'string' is not assignable to type 'number'.")] : [],
    );

test('Edit: the error it introduces is appended to its result; the fixing Edit reports none', async () => {
  const { ws, ctx, calls, read } = setup(typeCheck);
  fs.writeFileSync(path.join(ws, 'a.ts'), 'const x: number = 1;\n');
  read('a.ts');
  const gate = createWriteGate();
  const edit = createEditTool({ gate });
  const broke = await edit.execute({ path: 'a.ts', old_string: '= 1;', new_string: '= "s";' }, ctx);
  assert.equal(broke.status, 'success', broke.text);
  assert.match(
    broke.text,
    /\n\nNew problems introduced by this edit:\na\.ts:1:7 error Type 'string' is not assignable to type 'number'\. \[ts 2322\]$/,
  );
  assert.equal(broke.stats.new_problems, 1);
  read('a.ts');
  const fixed = await edit.execute({ path: 'a.ts', old_string: '= "s";', new_string: '= 2;' }, ctx);
  assert.equal(fixed.status, 'success', fixed.text);
  assert.doesNotMatch(fixed.text, /New problems/);
  assert.match(fixed.text, /Problems fixed by this edit: 1\.$/);
  assert.deepEqual(calls, ['begin a.ts', 'settle', 'begin a.ts', 'settle']);
});

test('Write of a new file: its problems are all new; a failed edit never waits for diagnostics', async () => {
  const { ctx, calls } = setup(typeCheck);
  const write = createWriteTool({ gate: createWriteGate() });
  const created = await write.execute({ path: 'b.ts', content: 'let y: number = "no";\n' }, ctx);
  assert.match(created.text, /New problems introduced by this edit:\nb\.ts:1:7 error/);
  calls.length = 0;
  const refused = await createEditTool().execute({ path: 'b.ts', old_string: 'zzz', new_string: 'q' }, ctx);
  assert.equal(refused.status, 'error');
  assert.deepEqual(calls, [], 'no write, no watch');
});

test('a host without diagnostics (the CLI) leaves edit results as they were', async () => {
  const { ctx } = setup(typeCheck);
  const { diagnostics: _, ...bare } = ctx.host;
  const write = createWriteTool({ gate: createWriteGate() });
  const r = await write.execute({ path: 'c.ts', content: 'let y: number = "no";\n' }, { ...ctx, host: bare });
  assert.equal(r.text, 'Created c.ts: created (1 line) (+1 −0 lines).');
});
