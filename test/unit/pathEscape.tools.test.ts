import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { rgPath } from '@vscode/ripgrep';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { createReadLedger } from '../../src/agent/safety/guards/readLedger.ts';
import { discoverSkills } from '../../src/agent/skills/discover.ts';
import { createGlobTool } from '../../src/agent/tools/glob.ts';
import { createGrepTool } from '../../src/agent/tools/grep.ts';
import { createLsTool } from '../../src/agent/tools/ls.ts';
import { createMemorySearchTool } from '../../src/agent/tools/memorySearch.ts';
import {
  type AnyToolDefinition,
  renderForModel,
  type ToolContext,
  type ToolResult,
} from '../../src/agent/tools/protocol.ts';
import { createReadTool } from '../../src/agent/tools/read.ts';
import { createSkillTool } from '../../src/agent/tools/skill.ts';
import { createWriteTool } from '../../src/agent/tools/write.ts';

// The tools whose inputs are not (only) a `path`: Skill names and files, MemorySearch's own files, and
// the workspace's own links out (.keel, skill folders, .gitignore). Nothing outside may show up.

const SECRET = `KEEL-TOOLS-SECRET-${randomBytes(6).toString('hex')}`;
const temps: string[] = [];
after(() => {
  for (const t of temps) fs.rmSync(t, { recursive: true, force: true });
});

function world() {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-escape-tools-')));
  temps.push(base);
  const ws = path.join(base, 'ws');
  const out = path.join(base, 'outside');
  const put = (p: string, text: string) => {
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, text);
  };
  const link = (target: string, at: string) => {
    fs.mkdirSync(path.dirname(path.join(ws, at)), { recursive: true });
    fs.symlinkSync(target, path.join(ws, at));
  };
  put(path.join(out, 'secret.txt'), `${SECRET}\n`);
  put(path.join(out, 'secretdir', 'outside-only-name.txt'), `${SECRET}\n`);
  put(path.join(out, 'linked', 'SKILL.md'), `---\nname: linked\ndescription: d\n---\n${SECRET}\n`);
  put(path.join(out, 'linked', 'ref.md'), `${SECRET}\n`);
  put(path.join(out, 'mdlink.md'), `---\nname: mdlink\ndescription: d\n---\n${SECRET}\n`);
  put(
    path.join(out, 'log.jsonl'),
    `${JSON.stringify({ id: 'm-out', role: 'user', ts: 1, text: `${SECRET} remembered` })}\n`,
  );
  put(path.join(ws, 'src', 'ok.txt'), 'hello inside\n');
  put(
    path.join(ws, '.agents', 'skills', 'good', 'SKILL.md'),
    '---\nname: good\ndescription: d\n---\nGood body.\n',
  );
  put(path.join(ws, '.agents', 'skills', 'good', 'ref.md'), 'ref inside\n');
  link('../../../../outside/secret.txt', '.agents/skills/good/leak.md');
  link('../../../../outside/secretdir', '.agents/skills/good/leakdir');
  link('../../../outside/linked', '.agents/skills/linked');
  fs.mkdirSync(path.join(ws, '.agents', 'skills', 'mdlink'), { recursive: true });
  link('../../../../outside/mdlink.md', '.agents/skills/mdlink/SKILL.md');
  link('../../../outside/log.jsonl', '.keel/archive/evil.jsonl');
  link('../../../outside/log.jsonl', '.keel/sessions/s.jsonl');
  link('../../../outside/secretdir', '.keel/tool-output/linked');
  // A .gitignore that is a FIFO, or a link to an endless device, must not hang or flood a walk.
  execFileSync('mkfifo', [path.join(ws, 'src', '.gitignore')]);
  link('/dev/zero', '.gitignore');

  const host = createNodeHost({
    workspace: ws,
    approvals: { ask: async () => 'allow_once' },
    ripgrepPath: rgPath,
  });
  const ctx: ToolContext = {
    host,
    sessionId: 's',
    toolUseId: 't',
    signal: new AbortController().signal,
    ledger: createReadLedger(),
    guard: createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir }),
    audit: () => {},
    update: () => {},
  };
  const skills = discoverSkills({ workspaceRoot: ws, userDir: null });
  return { base, ws, out, ctx, skills };
}

function assertNoLeak(result: ToolResult, what: string): void {
  const everything = `${JSON.stringify(result)}\n${renderForModel(result)}`;
  assert.ok(!everything.includes(SECRET), `${what} leaked: ${everything.slice(0, 300)}`);
  assert.ok(!everything.includes('outside-only-name'), `${what} leaked an outside name`);
}

async function run(tool: AnyToolDefinition, input: unknown, ctx: ToolContext): Promise<ToolResult> {
  return tool.execute(tool.inputSchema.parse(input), ctx);
}

test('Skill: names and files that climb out, and skills that link out, end OUTSIDE_WORKSPACE', async () => {
  const w = world();
  const tool = createSkillTool(w.skills) as AnyToolDefinition;
  for (const name of ['../../etc/passwd', '/etc/passwd', '~', '..', 'good/../../..', 'file:///etc/passwd']) {
    const r = await run(tool, { name }, w.ctx);
    assert.equal(r.error?.code, 'OUTSIDE_WORKSPACE', name);
    assertNoLeak(r, name);
  }
  // A skill folder or SKILL.md that links outside the workspace is not workspace content.
  for (const name of ['linked', 'mdlink']) {
    const r = await run(tool, { name }, w.ctx);
    assert.equal(r.status, 'error', name);
    assertNoLeak(r, name);
  }
  for (const file of [
    '../../etc/passwd',
    '/etc/passwd',
    '../../../../outside/secret.txt',
    '~/.bashrc',
    '..\\..\\x',
    '%2e%2e/x',
  ]) {
    const r = await run(tool, { name: 'good', file }, w.ctx);
    assert.equal(r.error?.code, 'OUTSIDE_WORKSPACE', file);
    assertNoLeak(r, file);
  }
  // Links inside the skill folder are never listed, so never served.
  for (const file of ['leak.md', 'leakdir/any.txt']) {
    const r = await run(tool, { name: 'good', file }, w.ctx);
    assert.equal(r.status, 'error', file);
    assertNoLeak(r, file);
  }
  const body = await run(tool, { name: 'good' }, w.ctx);
  assert.equal(body.status, 'success');
  assert.match(body.text, /Good body\./);
  const ref = await run(tool, { name: 'good', file: 'ref.md' }, w.ctx);
  assert.match(ref.text, /ref inside/);
});

test('MemorySearch reads only real files inside .keel: linked logs and archives are skipped', async () => {
  const w = world();
  const tool = createMemorySearchTool() as AnyToolDefinition;
  for (const query of [SECRET.slice(0, 18), 'remembered', 'm-out']) {
    const r = await run(tool, { query }, w.ctx);
    assert.equal(r.status, 'success');
    assertNoLeak(r, query);
  }
});

test('walks through .keel, skill folders and odd .gitignore files stay inside and do not hang', async () => {
  const w = world();
  const started = Date.now();
  const calls: Array<[AnyToolDefinition, unknown]> = [
    [createLsTool() as AnyToolDefinition, { depth: 5 }],
    [createLsTool() as AnyToolDefinition, { path: '.keel', depth: 5 }],
    [createGlobTool() as AnyToolDefinition, { pattern: '**/*' }],
    [createGlobTool() as AnyToolDefinition, { pattern: '**', path: '.keel' }],
    [createGrepTool() as AnyToolDefinition, { pattern: 'hello', output_mode: 'content' }],
    [createGrepTool() as AnyToolDefinition, { pattern: 'KEEL', path: '.keel', output_mode: 'content' }],
    [createGrepTool() as AnyToolDefinition, { pattern: 'KEEL', path: '.agents', output_mode: 'content' }],
  ];
  for (const [tool, input] of calls) {
    // ripgrep blocks on a FIFO .gitignore until its timeout (documented); our own walkers must not.
    if (tool.name === 'Grep') fs.rmSync(path.join(w.ws, 'src', '.gitignore'), { force: true });
    const r = await run(tool, input, w.ctx);
    // Grep may give up on the /dev/zero .gitignore (its memory cap); it must neither leak nor hang.
    if (tool.name !== 'Grep')
      assert.equal(r.status, 'success', `${tool.name} ${JSON.stringify(input)}: ${r.text}`);
    assertNoLeak(r, `${tool.name} ${JSON.stringify(input)}`);
  }
  // A literal path through a link out of the workspace is an escape, said as one.
  const linked = await run(
    createGlobTool() as AnyToolDefinition,
    { pattern: '.keel/tool-output/linked/*' },
    w.ctx,
  );
  assert.equal(linked.error?.code, 'OUTSIDE_WORKSPACE');
  assertNoLeak(linked, 'Glob .keel/tool-output/linked/*');
  assert.ok(Date.now() - started < 30_000, 'a walk blocked');
});

test('a .keel that links outside opens nothing outside', async () => {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-escape-state-')));
  temps.push(base);
  const ws = path.join(base, 'ws');
  const out = path.join(base, 'outside');
  fs.mkdirSync(ws);
  fs.mkdirSync(out);
  fs.writeFileSync(path.join(out, 'secret.txt'), `${SECRET}\n`);
  fs.symlinkSync('../outside', path.join(ws, '.keel'));
  const host = createNodeHost({
    workspace: ws,
    approvals: { ask: async () => 'allow_once' },
    ripgrepPath: rgPath,
  });
  const ctx: ToolContext = {
    host,
    sessionId: 's',
    toolUseId: 't',
    signal: new AbortController().signal,
    ledger: createReadLedger(),
    guard: createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir }),
    audit: () => {},
    update: () => {},
  };
  for (const p of [path.join(out, 'secret.txt'), '.keel/secret.txt', '.keel']) {
    for (const tool of [createReadTool(), createLsTool()] as AnyToolDefinition[]) {
      const r = await run(tool, { path: p }, ctx);
      assert.equal(r.error?.code, 'OUTSIDE_WORKSPACE', `${tool.name} ${p}`);
      assertNoLeak(r, p);
    }
  }
  const before = fs.readdirSync(out).sort();
  const w = await run(createWriteTool() as AnyToolDefinition, { path: '.keel/pwned.txt', content: 'x' }, ctx);
  assert.equal(w.error?.code, 'OUTSIDE_WORKSPACE');
  assert.deepEqual(fs.readdirSync(out).sort(), before);
});
