import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';

// A two-folder workspace through the built CLI (`keel run --add-dir`), the real SDK against the
// emulator: Read, Edit and Bash in the second folder by its name, checkpoints that restore both, and
// a hostile second folder that tries to reach outside both.

let emu: Emulator;
before(async () => {
  emu = await startEmulator({});
});
after(async () => {
  await emu.close();
});

const call = (name: string, input: unknown): ScriptedReply => ({
  content: [{ type: 'tool_use', name, input }],
});
const say = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });

/** Every tool result the model was sent in the last request, in order. */
function toolResults(): { text: string; error: boolean }[] {
  const body = emu.requests.at(-1)?.body as {
    messages: { role: string; content: string | { type: string; content?: unknown; is_error?: boolean }[] }[];
  };
  const out: { text: string; error: boolean }[] = [];
  for (const m of body.messages) {
    if (typeof m.content === 'string') continue;
    for (const b of m.content)
      if (b.type === 'tool_result') out.push({ text: JSON.stringify(b.content), error: b.is_error === true });
  }
  return out;
}

function systemText(): string {
  const body = emu.requests.at(-1)?.body as { system: { text: string }[] };
  return body.system.map((s) => s.text).join('\n');
}

async function run(ws: string, extra: string[], text: string, replies: ScriptedReply[]) {
  emu.setScenario({ replies });
  const r = await runKeel(['run', '--workspace', ws, '--approve', 'all', ...extra, text], cliEnv(emu.url));
  return r;
}

const readText = (p: string) => fs.readFileSync(p, 'utf8');

describe('multi-root workspace (keel run --add-dir)', () => {
  test('Read, Edit and Bash reach the second folder by its name; restore puts back both folders', async () => {
    const first = tempWorkspace({ 'b.txt': 'first folder b\n', 'a.txt': 'alpha\n' });
    const second = tempWorkspace({ 'b.txt': 'second folder b\n' });
    const name = path.basename(second);
    // In the OS sandbox (required: no silent fallback): both folders are writable binds.
    const r = await run(first, ['--add-dir', second, '--sandbox', 'required'], 'work in both', [
      call('Read', { path: `${name}/b.txt` }),
      call('Read', { path: 'b.txt' }),
      call('Edit', { path: `${name}/b.txt`, old_string: 'second folder b', new_string: 'SECOND EDITED' }),
      call('Read', { path: 'a.txt' }),
      call('Edit', { path: 'a.txt', old_string: 'alpha', new_string: 'ALPHA' }),
      call('Bash', { command: 'printf "made by a command\\n" > made.txt && pwd', cwd: name }),
      call('Bash', { command: 'printf "first made\\n" > first-made.txt' }),
      say('done'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`workspace folders: ${first}, ${second}`));
    const results = toolResults();
    assert.equal(results.length, 7);
    assert.ok(
      results.every((x) => !x.error),
      JSON.stringify(results),
    );
    assert.match(results[0]!.text, /second folder b/);
    assert.doesNotMatch(results[0]!.text, /first folder b/);
    assert.match(results[1]!.text, /first folder b/);
    assert.match(results[2]!.text, new RegExp(`Edited ${name}/b.txt`), 'shown as <folderName>/<rel>');
    assert.match(results[5]!.text, new RegExp(second), 'the command ran in the second folder');
    // The model is told the folders and the name that reaches each, once, in the system prompt.
    assert.match(
      systemText(),
      new RegExp(`# Workspace folders\\n- ${first} \\(first[^\\n]*\\n- ${second} \\(as "${name}/`),
    );
    assert.equal(readText(path.join(second, 'b.txt')), 'SECOND EDITED\n');
    assert.equal(readText(path.join(second, 'made.txt')), 'made by a command\n');
    assert.equal(readText(path.join(first, 'a.txt')), 'ALPHA\n');
    assert.equal(readText(path.join(first, 'first-made.txt')), 'first made\n');
    assert.ok(!fs.existsSync(path.join(first, 'made.txt')));

    const id = sessionIdFrom(r.stderr);
    // Without the second folder named, its records are skipped (never written outside the folders given).
    const narrow = await runKeel(
      ['restore', id, '--before-prompt', '1', '--workspace', first, '--json', '--dry-run'],
      cliEnv(emu.url),
    );
    const narrowPlan = JSON.parse(narrow.stdout) as {
      files: { path: string }[];
      skipped: { path: string; reason: string }[];
    };
    assert.deepEqual(narrowPlan.files.map((f) => f.path).sort(), ['a.txt', 'first-made.txt']);
    assert.deepEqual(narrowPlan.skipped.map((f) => f.path).sort(), [
      path.join(second, 'b.txt'),
      path.join(second, 'made.txt'),
    ]);

    // A record naming a file outside both folders (forged into the checkpoint log) is skipped even
    // with --add-dir: only the folders given can be written.
    const elsewhere = tempWorkspace({});
    const forgedTarget = path.join(elsewhere, 'planted.txt');
    const changes = path.join(first, '.keel', 'checkpoints', id, 'changes.jsonl');
    const blobOf = (JSON.parse(fs.readFileSync(changes, 'utf8').split('\n')[0]!) as { before: unknown })
      .before;
    fs.appendFileSync(
      changes,
      `${JSON.stringify({ seq: 999, prompt: 1, path: forgedTarget, by: 'tool', before: blobOf, after: { kind: 'absent' }, ts: Date.now() })}\n`,
    );
    const restored = await runKeel(
      ['restore', id, '--before-prompt', '1', '--workspace', first, '--add-dir', second, '--json'],
      cliEnv(emu.url),
    );
    assert.equal(restored.code, 1, restored.stderr + restored.stdout);
    const report = JSON.parse(restored.stdout) as { skipped: { path: string; reason: string }[] };
    assert.deepEqual(
      report.skipped.map((x) => x.path),
      [forgedTarget],
    );
    assert.match(report.skipped[0]!.reason, /outside every workspace folder given/);
    assert.ok(!fs.existsSync(forgedTarget), 'nothing written outside the folders');
    assert.equal(readText(path.join(second, 'b.txt')), 'second folder b\n');
    assert.ok(!fs.existsSync(path.join(second, 'made.txt')), 'the command’s file in folder 2 is removed');
    assert.equal(readText(path.join(first, 'a.txt')), 'alpha\n');
    assert.ok(!fs.existsSync(path.join(first, 'first-made.txt')));
  });

  test('a hostile second folder cannot reach outside both folders', async () => {
    const outside = tempWorkspace({ 'secret.txt': 'outside secret\n' });
    const first = tempWorkspace({ 'a.txt': 'alpha\n' });
    const second = tempWorkspace({ 'x.txt': 'x\n' });
    fs.symlinkSync(outside, path.join(second, 'escape'));
    const name = path.basename(second);
    const r = await run(first, ['--add-dir', second, '--sandbox', 'required'], 'attack', [
      call('Read', { path: `${name}/../../etc/passwd` }),
      call('Read', { path: `${name}/escape/secret.txt` }),
      call('Write', { path: `${name}/escape/planted.txt`, content: 'pwned\n' }),
      call('Bash', { command: 'pwd', cwd: `${name}/..` }),
      call('Bash', { command: 'pwd', cwd: `${name}/escape` }),
      // A command run in folder 2 writes beside it and through its link: the sandbox stops both.
      call('Bash', {
        command: 'printf x > ../escaped.txt; printf x > escape/planted-by-command.txt',
        cwd: name,
      }),
      say('done'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const results = toolResults();
    assert.equal(results.length, 6);
    assert.ok(!fs.existsSync(path.join(path.dirname(second), 'escaped.txt')), results[5]!.text);
    assert.ok(!fs.existsSync(path.join(outside, 'planted-by-command.txt')), results[5]!.text);
    for (const x of results.slice(0, 5)) {
      assert.ok(x.error, x.text);
      assert.match(x.text, /outside the workspace/);
    }
    assert.doesNotMatch(JSON.stringify(results), /outside secret/);
    assert.ok(!fs.existsSync(path.join(outside, 'planted.txt')));
  });

  test('a first-folder subfolder named like the second folder: the folder name wins, ./name reaches the subfolder', async () => {
    const second = tempWorkspace({ 'same.txt': 'in the second folder\n' });
    const name = path.basename(second);
    const first = tempWorkspace({ [`${name}/same.txt`]: 'in the first folder subfolder\n' });
    const r = await run(first, ['--add-dir', second], 'ambiguous', [
      call('Read', { path: `${name}/same.txt` }),
      call('Read', { path: `./${name}/same.txt` }),
      say('done'),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const [byName, dotted] = toolResults();
    assert.match(byName!.text, /in the second folder/);
    assert.match(dotted!.text, /in the first folder subfolder/);
  });

  test('--add-dir is checked: missing, a file, the root, the workspace again', async () => {
    const first = tempWorkspace({ 'f.txt': 'file\n' });
    for (const [dir, why] of [
      [path.join(first, 'nope'), /no such folder/],
      [path.join(first, 'f.txt'), /not a folder/],
      ['/', /refusing \/ as a workspace folder/],
      [first, /already a workspace folder/],
    ] as const) {
      const r = await runKeel(['run', '--workspace', first, '--add-dir', dir, 'hi'], cliEnv(emu.url));
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, why);
    }
  });
});
