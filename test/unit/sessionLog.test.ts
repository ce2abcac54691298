// Session logs read line by line (a big log is never one string) and the history list's index:
// what a user sees in the history and on resume stays right when logs grow, break or disappear.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { loadSession, sessionLogPath } from '../../src/agent/session/log.ts';
import { INDEX_FILE, listSessions } from '../../src/agent/session/sessionIndex.ts';

const ts = 1_700_000_000_000;

function stateDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-sessionlog-'));
  fs.mkdirSync(path.join(dir, 'sessions'));
  return dir;
}

function header(id: string, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ type: 'session', version: 1, id, createdAt: ts, model: 'm', workspace: '/w', ...extra })}\n`;
}

let seq = 0;
function userLine(id: string, text: string): string {
  const message = { role: 'user', id: `u${++seq}`, ts, text };
  return `${JSON.stringify({ type: 'message_appended', message, sessionId: id, seq, ts })}\n`;
}
function toolLines(id: string, output: string): string {
  const result = { status: 'success', data: null, text: output, stats: { time_ms: 1 } };
  const end = { type: 'tool_end', toolUseId: `t${seq}`, name: 'Read', result, durationMs: 1 };
  const message = {
    role: 'tool_result',
    id: `r${seq}`,
    ts,
    toolUseId: `t${seq}`,
    toolName: 'Read',
    result,
    content: output,
    isError: false,
  };
  return (
    `${JSON.stringify({ ...end, sessionId: id, seq: ++seq, ts })}\n` +
    `${JSON.stringify({ type: 'message_appended', message, sessionId: id, seq: ++seq, ts })}\n`
  );
}

function write(dir: string, id: string, text: string, append = false): string {
  const file = sessionLogPath(dir, id);
  if (append) fs.appendFileSync(file, text);
  else fs.writeFileSync(file, text);
  return file;
}

test('a log with lines longer than the read buffer loads whole; a torn last line is set aside on repair', () => {
  const dir = stateDir();
  const big = 'y'.repeat(3 * 1024 * 1024 + 17); // spans several 1 MB reads
  const file = write(dir, 's1', header('s1') + userLine('s1', 'héllo ✓') + toolLines('s1', big));
  fs.appendFileSync(file, '{"type":"message_appended","mess'); // crash mid-write
  const loaded = loadSession(file, { repair: true });
  assert.equal(loaded.header.id, 's1');
  assert.equal(loaded.messages.length, 2);
  assert.equal(loaded.messages[0]?.role === 'user' && loaded.messages[0].text, 'héllo ✓');
  const result = loaded.messages[1];
  assert.equal(result?.role === 'tool_result' && result.result.text.length, big.length);
  assert.equal(loaded.tornLines, 1);
  assert.ok(fs.readFileSync(file, 'utf8').endsWith('\n'), 'the torn fragment is cut off');
  assert.equal(fs.readFileSync(`${file}.torn`, 'utf8'), '{"type":"message_appended","mess\n');
  assert.equal(loadSession(file).tornLines, 0);
});

test('a log without a valid header is a clear error, not a crash', () => {
  const dir = stateDir();
  const file = write(dir, 'bad', 'not json\n');
  assert.throws(() => loadSession(file), /has no valid header/);
  assert.throws(() => loadSession(path.join(dir, 'sessions', 'none.jsonl')), /No session log at/);
});

test('the history list: titles and counts, newest first, sub-agent logs left out', () => {
  const dir = stateDir();
  write(dir, 'a', header('a') + userLine('a', 'Fix the parser') + toolLines('a', 'out'));
  write(dir, 'b', header('b') + userLine('b', `Add ${'x'.repeat(100)}`));
  write(dir, 'child', header('child', { parent: 'a' }) + userLine('child', 'sub task'));
  write(dir, 'empty', header('empty'));
  const t = Date.now() / 1000;
  fs.utimesSync(sessionLogPath(dir, 'a'), t - 30, t - 30);
  fs.utimesSync(sessionLogPath(dir, 'empty'), t - 60, t - 60);
  const list = listSessions(dir);
  assert.deepEqual(
    list.map((s) => [s.id, s.title, s.messageCount]),
    [
      ['b', `Add ${'x'.repeat(76)}`, 1],
      ['a', 'Fix the parser', 2],
      ['empty', '(empty session)', 0],
    ],
  );
  assert.ok(fs.existsSync(path.join(dir, 'sessions', INDEX_FILE)), 'the index is written');
});

test('the index follows a log appended to after indexing, through a torn line', () => {
  const dir = stateDir();
  write(dir, 'a', header('a'));
  assert.deepEqual(
    listSessions(dir).map((s) => [s.title, s.messageCount]),
    [['(empty session)', 0]],
  );
  write(dir, 'a', userLine('a', 'First question'), true);
  fs.appendFileSync(sessionLogPath(dir, 'a'), '{"type":"message_appended","message":{"role":"us'); // mid-write
  assert.deepEqual(
    listSessions(dir).map((s) => [s.title, s.messageCount]),
    [['First question', 1]],
  );
  // The torn line completes; more is appended.
  fs.appendFileSync(
    sessionLogPath(dir, 'a'),
    `er","id":"u9","ts":1,"text":"second"},"sessionId":"a","seq":99,"ts":1}\n`,
  );
  write(dir, 'a', toolLines('a', 'output'), true);
  assert.deepEqual(
    listSessions(dir).map((s) => [s.title, s.messageCount]),
    [['First question', 3]],
  );
  // It agrees with reading the whole log.
  assert.equal(loadSession(sessionLogPath(dir, 'a')).messages.length, 3);
});

test('a missing or corrupt index is rebuilt with a clear note; deleted and replaced logs are not listed stale', () => {
  const dir = stateDir();
  write(dir, 'a', header('a') + userLine('a', 'alpha'));
  write(dir, 'b', header('b') + userLine('b', 'beta'));
  assert.equal(listSessions(dir).length, 2);
  const index = path.join(dir, 'sessions', INDEX_FILE);
  for (const garbage of ['{"version":1,"entr', '{"version":7,"entries":{}}', '[]']) {
    fs.writeFileSync(index, garbage);
    const notes: string[] = [];
    const list = listSessions(dir, { log: (m) => notes.push(m) });
    assert.deepEqual(list.map((s) => s.title).sort(), ['alpha', 'beta']);
    assert.match(notes.join('\n'), /session index .* (corrupt|not valid).*rebuilding/);
    assert.doesNotThrow(() => JSON.parse(fs.readFileSync(index, 'utf8')), 'rewritten whole');
  }
  fs.rmSync(sessionLogPath(dir, 'b'));
  assert.deepEqual(
    listSessions(dir).map((s) => s.title),
    ['alpha'],
  );
  assert.equal(Object.keys(JSON.parse(fs.readFileSync(index, 'utf8')).entries).length, 1);
  // Same file name, another session (longer, different header): read again from the start.
  write(dir, 'a', header('a2') + userLine('a2', 'gamma') + userLine('a2', 'delta'));
  assert.deepEqual(
    listSessions(dir).map((s) => [s.id, s.title, s.messageCount]),
    [['a2', 'gamma', 2]],
  );
  fs.rmSync(index);
  fs.mkdirSync(index); // unreadable as a file and cannot be replaced: still a full list, no throw
  const notes: string[] = [];
  assert.equal(listSessions(dir, { log: (m) => notes.push(m) }).length, 1);
  assert.ok(notes.length > 0);
});
