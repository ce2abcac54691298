import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, sessionIdFrom, tempWorkspace } from './helpers/cli.ts';
import { png } from './helpers/png.ts';

// The API's per-request image rules (more than 20 images: none over 2000 px a side; at most 100),
// through the built `keel run` against the emulator, which refuses such a request as the API does.
// The conversation is re-sent whole every turn, so one image that breaks the rule would fail every
// later request of the session. The attacker: a repository full of wide screenshots and a model
// told to Read them all (in parallel batches, so claims must count calls still running); and a user
// pasting a wide screenshot into a conversation that already holds 20 of them.

let emu: Emulator;
let home: string;
before(async () => {
  emu = await startEmulator({});
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-imglimits-home-'));
});
after(async () => {
  await emu.close();
  fs.rmSync(home, { recursive: true, force: true });
});

type Block = { type: string; text?: string; content?: Block[] | string; source?: { data?: string } };
type Body = { messages: { role: string; content: Block[] | string }[] };
const reads = (files: string[]): ScriptedReply => ({
  content: files.map((p) => ({ type: 'tool_use' as const, name: 'Read', input: { path: p } })),
});
const answer = (text: string): ScriptedReply => ({ content: [{ type: 'text', text }] });
const blocks = (body: unknown): Block[] =>
  (body as Body).messages.flatMap((m) => (typeof m.content === 'string' ? [] : m.content));
const imagesIn = (body: unknown): number =>
  blocks(body).reduce(
    (n, b) =>
      n +
      (b.type === 'image' ? 1 : 0) +
      (Array.isArray(b.content) ? b.content.filter((c) => c.type === 'image').length : 0),
    0,
  );
const resultTexts = (body: unknown): string[] =>
  blocks(body)
    .filter((b) => b.type === 'tool_result')
    .map((b) => (Array.isArray(b.content) ? (b.content[0]?.text ?? '') : String(b.content)));

/** A workspace with `count` wide screenshots (2400×8 px: small files, over the many-image side). */
function screenshots(count: number): { ws: string; files: string[] } {
  const ws = tempWorkspace({ 'README.md': '# shots\n' });
  fs.mkdirSync(path.join(ws, 'shots'));
  const files = Array.from({ length: count }, (_, i) => `shots/s${String(i).padStart(2, '0')}.png`);
  for (const f of files) fs.writeFileSync(path.join(ws, f), png(2400, 8));
  return { ws, files };
}

test('a model reading 22 wide screenshots in two parallel batches: 20 attached, the other 2 refused with the reason, every request accepted', async () => {
  const { ws, files } = screenshots(22);
  emu.setScenario({ replies: [reads(files.slice(0, 11)), reads(files.slice(11)), answer('Seen them.')] });
  const from = emu.requests.length;
  const run = await runKeel(
    ['run', '--workspace', ws, 'Look at every screenshot'],
    cliEnv(emu.url, { HOME: home }),
  );
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout.trim(), 'Seen them.');
  const sent = emu.requests.slice(from);
  assert.deepEqual(
    sent.map((r) => r.status),
    [200, 200, 200],
    'no request refused',
  );
  assert.equal(imagesIn(sent[2]!.body), 20, 'the last request carries 20 images');
  const refused = resultTexts(sent[2]!.body).filter((t) => /it was not attached/.test(t));
  assert.equal(refused.length, 2, resultTexts(sent[2]!.body).join('\n'));
  for (const text of refused)
    assert.match(
      text,
      /PNG image, 2400×8 px, .*; it was not attached: it is 2400×8 px, and with more than 20 images in the conversation the model takes images up to 2000×2000 px\./,
    );
});

test('a user attaching a wide screenshot to a conversation holding 20: sent without it, said so to the user and the model, the request accepted', async () => {
  const { ws, files } = screenshots(20);
  emu.setScenario({ replies: [reads(files), answer('Twenty seen.')] });
  const first = await runKeel(['run', '--workspace', ws, 'Look at them'], cliEnv(emu.url, { HOME: home }));
  assert.equal(first.code, 0, first.stderr);
  const id = sessionIdFrom(first.stderr);
  fs.writeFileSync(path.join(ws, 'mine.png'), png(2100, 10));
  emu.setScenario({ replies: [answer('I could not see your image.')] });
  const from = emu.requests.length;
  const next = await runKeel(
    ['run', '--workspace', ws, '--resume', id, '--image', path.join(ws, 'mine.png'), 'and this one?'],
    cliEnv(emu.url, { HOME: home }),
  );
  assert.equal(next.code, 0, next.stderr);
  assert.match(next.stderr, /Images not sent: it is 2100×10 px, and with more than 20 images/);
  const [request] = emu.requests.slice(from);
  assert.equal(request!.status, 200);
  assert.equal(imagesIn(request!.body), 20);
  const last = (request!.body as Body).messages.at(-1)!.content as Block[];
  const text = last.map((b) => b.text ?? '').join('');
  assert.match(text, /and this one\?\n\n\[The user attached an image; not sent: it is 2100×10 px/);
});
