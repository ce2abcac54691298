import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { createReadLedger, sha256Hex } from '../../src/agent/safety/guards/readLedger.ts';
import { createEditTool } from '../../src/agent/tools/edit.ts';
import { createWriteGate } from '../../src/agent/tools/editing/gate.ts';
import { createMultiEditTool } from '../../src/agent/tools/multiEdit.ts';
import { renderForModel, type ToolContext, type ToolResult } from '../../src/agent/tools/protocol.ts';
import { createWriteTool } from '../../src/agent/tools/write.ts';

// Property: whatever sequence of edits, writes, external modifications and aborts happens, the file
// on disk is always exactly what a simple independent model predicts: never corrupted (format, BOM,
// encoding, line endings, mode intact) and never missing an external change.

type Format = 'utf8' | 'utf8-bom' | 'utf16le-bom';

const temps: string[] = [];
after(() => {
  for (const t of temps) fs.rmSync(t, { recursive: true, force: true });
});

function encode(text: string, format: Format): Buffer {
  if (format === 'utf8') return Buffer.from(text, 'utf8');
  if (format === 'utf8-bom')
    return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')]);
  return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
}

function decode(bytes: Buffer, format: Format): string {
  if (format === 'utf8') return bytes.toString('utf8');
  if (format === 'utf8-bom') {
    assert.deepEqual([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf], 'UTF-8 BOM lost');
    return bytes.subarray(3).toString('utf8');
  }
  assert.deepEqual([...bytes.subarray(0, 2)], [0xff, 0xfe], 'UTF-16 BOM lost');
  return bytes.subarray(2).toString('utf16le');
}

function dominantEol(text: string): string | undefined {
  const crlf = (text.match(/\r\n/g) ?? []).length;
  const lf = (text.match(/\n/g) ?? []).length - crlf;
  if (crlf + lf === 0) return undefined;
  return crlf > lf ? '\r\n' : '\n';
}

const toEol = (s: string, eol: string | undefined) => (eol === undefined ? s : s.replace(/\r?\n/g, eol));

function occurrences(hay: string, needle: string, overlapping: boolean): number[] {
  const out: number[] = [];
  for (
    let i = hay.indexOf(needle);
    i !== -1;
    i = hay.indexOf(needle, i + (overlapping ? 1 : needle.length))
  ) {
    out.push(i);
  }
  return out;
}

const counts = new Map<string, number>();
const tally = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
after(() => {
  if (process.env.KEEL_FUZZ_STATS)
    console.log(
      [...counts]
        .sort()
        .map(([k, v]) => `${k}=${v}`)
        .join(' '),
    );
});

type Expectation = { kind: 'error' } | { kind: 'text'; text: string } | { kind: 'unknown' };

/** The spec of one exact edit, written independently of the implementation. */
function expectEdit(text: string, oldS: string, newS: string, all: boolean): Expectation {
  if (oldS === '' || oldS === newS) return { kind: 'error' };
  const at = occurrences(text, oldS, !all);
  if (at.length === 0) return { kind: 'unknown' };
  if (at.length > 1 && !all) return { kind: 'error' };
  const fileEol = dominantEol(text);
  let out = '';
  let cursor = 0;
  for (const i of at) {
    const span = text.slice(i, i + oldS.length);
    const eol = span.includes('\r\n') ? '\r\n' : span.includes('\n') ? '\n' : fileEol;
    out += text.slice(cursor, i) + toEol(newS, eol);
    cursor = i + oldS.length;
  }
  out += text.slice(cursor);
  return out === text ? { kind: 'error' } : { kind: 'text', text: out };
}

// ---------- generators ----------

const token = fc.constantFrom(
  'a',
  'b',
  'Z',
  ' ',
  '  ',
  '\t',
  'é',
  'ü',
  '新',
  '😀',
  '“',
  '”',
  '—',
  'ﬁ',
  '\u00a0',
  '{',
  '}',
  ';',
  'x = 1',
);
const shortLine = fc.array(token, { maxLength: 8 }).map((t) => t.join(''));
const longLine = fc
  .tuple(fc.constantFrom('x', 'ab ', 'é', '😀', '\t'), fc.integer({ min: 400, max: 2500 }))
  .map(([t, n]) => t.repeat(n));
const line = fc.oneof({ weight: 9, arbitrary: shortLine }, { weight: 1, arbitrary: longLine });
const eolKind = fc.constantFrom('lf', 'crlf', 'mixed');
const body = (kind: 'lf' | 'crlf' | 'mixed') =>
  fc
    .tuple(
      fc.array(line, { minLength: 0, maxLength: 14 }),
      fc.array(fc.boolean(), { maxLength: 14 }),
      fc.boolean(),
    )
    .map(([lines, crlfs, trailing]) => {
      let s = '';
      lines.forEach((l, i) => {
        const eol = kind === 'lf' ? '\n' : kind === 'crlf' ? '\r\n' : crlfs[i] ? '\r\n' : '\n';
        s += l + (i < lines.length - 1 || trailing ? eol : '');
      });
      return s;
    });
/** Text the model sends: LF or CRLF, never a lone CR. */
const modelText = fc
  .array(fc.oneof(token, fc.constant('\n'), fc.constant('\r\n')), { maxLength: 10 })
  .map((t) => t.join(''));

const pick = fc.tuple(fc.nat(), fc.nat({ max: 60 }));
const op = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'read' as const }) },
  fc.record({ kind: fc.constant('edit' as const), at: pick, text: modelText, all: fc.boolean() }),
  fc.record({ kind: fc.constant('missing' as const), text: modelText }),
  fc.record({
    kind: fc.constant('multi' as const),
    edits: fc.array(fc.record({ at: pick, text: modelText }), { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ kind: fc.constant('write' as const), text: modelText }),
  fc.record({ kind: fc.constant('external' as const), at: fc.nat(), text: shortLine }),
  fc.record({ kind: fc.constant('abortedEdit' as const), at: pick, text: modelText }),
  fc.record({
    kind: fc.constant('racingAbort' as const),
    at: pick,
    text: modelText,
    ticks: fc.nat({ max: 6 }),
  }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** A substring of `text` on code-point boundaries that never splits a CRLF pair. */
function choose(text: string, [start, len]: [number, number]): string {
  const cps = Array.from(text);
  if (cps.length === 0) return '';
  const offsets: number[] = [0];
  for (const cp of cps) offsets.push(offsets.at(-1)! + cp.length);
  let s = offsets[start % cps.length]!;
  let e = offsets[Math.min(cps.length, (start % cps.length) + 1 + len)]!;
  if (text[s] === '\n' && text[s - 1] === '\r') s--;
  if (text[e - 1] === '\r' && text[e] === '\n') e++;
  return text.slice(s, e);
}

// ---------- the property ----------

test('random edits, writes, external changes and aborts never corrupt a file or lose a change', async () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-fuzz-')));
  temps.push(base);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom<Format>('utf8', 'utf8-bom', 'utf16le-bom'),
      eolKind.chain((k) => fc.tuple(fc.constant(k), body(k))),
      fc.array(op, { minLength: 1, maxLength: 18 }),
      async (format, [kind, initial], ops) => {
        const ws = path.join(base, `run-${run++}`);
        fs.mkdirSync(ws);
        const host = createNodeHost({ workspace: ws, approvals: { ask: async () => 'deny' } });
        const guard = createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir });
        const ledger = createReadLedger();
        const gate = createWriteGate({ protectedPaths: { check: async () => ({ protected: false }) } });
        const edit = createEditTool({ gate });
        const multi = createMultiEditTool({ gate });
        const write = createWriteTool({ gate });
        const file = path.join(fs.realpathSync(ws), 'f.txt');
        const ctx = (signal = new AbortController().signal): ToolContext => ({
          host,
          sessionId: 's',
          toolUseId: 't',
          signal,
          ledger,
          guard,
          audit: () => {},
          update: () => {},
        });

        let text = initial; // the model of the file's content
        let seen: string | undefined; // content as of the last Read or Keel write
        let style: string | undefined = kind === 'mixed' ? 'mixed' : dominantEol(initial);
        fs.writeFileSync(file, encode(text, format));
        fs.chmodSync(file, 0o640);

        const check = (label: string) => {
          const bytes = fs.readFileSync(file);
          assert.deepEqual(bytes, encode(text, format), `${label}: disk differs from the model`);
          assert.equal(decode(bytes, format), text);
          // A file with an established line-ending style keeps it; one with no line break has none yet.
          const loneLf = /(^|[^\r])\n/.test(text);
          const crlf = text.includes('\r\n');
          if (style === '\r\n') assert.ok(!loneLf, `${label}: lone LF in a CRLF file`);
          if (style === '\n') assert.ok(!crlf, `${label}: CRLF in an LF file`);
          if (style !== 'mixed') style = loneLf && crlf ? 'mixed' : crlf ? '\r\n' : loneLf ? '\n' : undefined;
          assert.equal(fs.statSync(file).mode & 0o777, 0o640, `${label}: mode changed`);
          assert.deepEqual(fs.readdirSync(ws).sort(), ['.keel', 'f.txt'], `${label}: stray files`);
        };
        const settle = (label: string, result: ToolResult, expected: Expectation) => {
          if (seen === undefined) {
            assert.equal(
              result.error?.code,
              'NOT_READ',
              `${label}: expected NOT_READ, got ${renderForModel(result)}`,
            );
          } else if (seen !== text) {
            assert.equal(
              result.error?.code,
              'CONFLICT',
              `${label}: expected CONFLICT, got ${renderForModel(result)}`,
            );
          } else if (expected.kind === 'error') {
            assert.equal(result.status, 'error', `${label}: expected an error, got ${result.text}`);
          } else if (expected.kind === 'text') {
            assert.equal(result.status, 'success', `${label}: ${renderForModel(result)}`);
            text = expected.text;
          } else if (result.status === 'success') {
            text = decode(fs.readFileSync(file), format);
          }
          if (result.status === 'success') seen = text;
          if (process.env.KEEL_FUZZ_STATS)
            tally(`${label.split(' ')[2]}:${result.error?.code ?? result.status}`);
          check(label);
        };

        for (const [i, o] of (ops as Op[]).entries()) {
          const label = `op ${i} ${o.kind}`;
          switch (o.kind) {
            case 'read':
              ledger.recordRead(file, sha256Hex(fs.readFileSync(file)));
              seen = text;
              break;
            case 'external': {
              // Another program inserts a line (same format and line ending): must never be lost.
              const eol = dominantEol(text) ?? (kind === 'crlf' ? '\r\n' : '\n');
              const lines = text.split(eol);
              lines.splice(o.at % (lines.length + 1), 0, `EXTERNAL ${o.text}`);
              text = lines.join(eol);
              fs.writeFileSync(file, encode(text, format));
              check(label);
              break;
            }
            case 'edit': {
              const oldS = choose(text, o.at);
              const result = await edit.execute(
                { path: 'f.txt', old_string: oldS, new_string: o.text, replace_all: o.all },
                ctx(),
              );
              settle(label, result, expectEdit(text, oldS, o.text, o.all));
              break;
            }
            case 'missing': {
              const result = await edit.execute(
                { path: 'f.txt', old_string: 'NEVER-IN-FILE', new_string: o.text },
                ctx(),
              );
              if (seen === text) assert.equal(result.error?.code, 'NO_MATCH', label);
              settle(label, result, { kind: 'error' });
              break;
            }
            case 'multi': {
              const edits = o.edits.map((e) => ({ old_string: choose(text, e.at), new_string: e.text }));
              let expected: Expectation = { kind: 'text', text };
              for (const e of edits) {
                if (expected.kind !== 'text') break;
                expected = expectEdit(expected.text, e.old_string, e.new_string, false);
              }
              if (expected.kind === 'text' && expected.text === text) expected = { kind: 'error' };
              const result = await multi.execute({ path: 'f.txt', edits }, ctx());
              settle(label, result, expected);
              break;
            }
            case 'write': {
              const next = toEol(o.text, dominantEol(text));
              const result = await write.execute({ path: 'f.txt', content: o.text }, ctx());
              settle(label, result, next === text ? { kind: 'error' } : { kind: 'text', text: next });
              break;
            }
            case 'abortedEdit': {
              const controller = new AbortController();
              controller.abort();
              const oldS = choose(text, o.at);
              const result = await edit.execute(
                { path: 'f.txt', old_string: oldS, new_string: o.text },
                ctx(controller.signal),
              );
              assert.equal(result.status, 'error', label);
              check(label);
              break;
            }
            case 'racingAbort': {
              // Abort lands somewhere in the middle: the file is either untouched or fully edited.
              const controller = new AbortController();
              const oldS = choose(text, o.at);
              const expected = expectEdit(text, oldS, o.text, false);
              const pending = edit.execute(
                { path: 'f.txt', old_string: oldS, new_string: o.text },
                ctx(controller.signal),
              );
              for (let k = 0; k < o.ticks; k++) await new Promise((r) => setImmediate(r));
              controller.abort();
              const result = await pending;
              if (result.status === 'success') {
                assert.ok(seen === text && expected.kind !== 'error', `${label}: succeeded unexpectedly`);
                text = expected.kind === 'text' ? expected.text : decode(fs.readFileSync(file), format);
                seen = text;
              }
              check(label);
              break;
            }
          }
        }
        fs.rmSync(ws, { recursive: true, force: true });
      },
    ),
    { numRuns: Number(process.env.KEEL_FUZZ_RUNS ?? 60), verbose: 1 },
  );
});
