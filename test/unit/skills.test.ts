import { recordSessionLog } from '../../src/agent/trust/ledger.ts';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import type { AgentMessage } from '../../src/agent/messages.ts';
import { createNodeHost } from '../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../src/agent/safety/approvals.ts';
import { createPathGuard } from '../../src/agent/safety/paths/pathGuard.ts';
import { parseFrontmatter } from '../../src/agent/skills/frontmatter.ts';
import {
  defaultBundledSkillsDir,
  discoverSkills,
  formatSkillProblems,
  skillErrorCodes,
} from '../../src/agent/skills/discover.ts';
import { createMemorySearchTool } from '../../src/agent/tools/memorySearch.ts';
import type { ToolContext } from '../../src/agent/tools/protocol.ts';
import { createSkillTool } from '../../src/agent/tools/skill.ts';

// Agent Skills: discovery, validation (reported, never silently dropped), the Skill tool, MemorySearch.

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-skills-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function writeSkill(root: string, folder: string, text: string, extra: Record<string, string> = {}): string {
  const dir = path.join(root, folder);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'SKILL.md'), text);
  for (const [name, content] of Object.entries(extra)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

const skill = (name: string, description: string, body = 'Do the thing.') =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

function context(root: string): ToolContext {
  const host = createNodeHost({ workspace: root, approvals: createPolicyApprovals('never') });
  return {
    host,
    sessionId: 'sess1',
    toolUseId: 't',
    signal: new AbortController().signal,
    guard: createPathGuard({ roots: [root], stateDir: host.stateDir }),
  } as unknown as ToolContext;
}

test('frontmatter: quoted, folded and literal scalars and a metadata map; malformed input is an error', () => {
  const parsed = parseFrontmatter(
    "---\nname: \"my-skill\"\ndescription: >\n  Use when A.\n  Don't use when B.\nlicense: 'MIT' \nmetadata:\n  error-codes: NO_MATCH CONFLICT\n  owner: team # comment\n---\n# Body\ntext\n",
  );
  assert.ok(parsed.ok, 'parses');
  if (!parsed.ok) return;
  assert.equal(parsed.data['name'], 'my-skill');
  assert.equal(parsed.data['description'], "Use when A. Don't use when B.");
  assert.equal(parsed.data['license'], 'MIT');
  assert.deepEqual(parsed.data['metadata'], { 'error-codes': 'NO_MATCH CONFLICT', owner: 'team' });
  assert.equal(parsed.body, '# Body\ntext\n');
  assert.equal(parseFrontmatter('# no frontmatter').ok, false);
  assert.equal(parseFrontmatter('---\nname: x\n').ok, false);
  assert.equal(parseFrontmatter('---\nname: x\nname: y\n---\n').ok, false);
});

test('discovery validates the standard and reports every invalid skill with its reason', () => {
  const root = tempDir();
  const skills = path.join(root, '.agents', 'skills');
  writeSkill(skills, 'good-one', skill('good-one', "Use when testing. Don't use otherwise."), {
    'reference.md': 'ref',
  });
  writeSkill(skills, 'Bad_Name', skill('Bad_Name', 'x'));
  writeSkill(skills, 'mismatch', skill('other-name', 'x'));
  writeSkill(skills, 'long-desc', skill('long-desc', 'y'.repeat(1025)));
  writeSkill(skills, 'no-desc', '---\nname: no-desc\n---\nbody\n');
  writeSkill(skills, 'no-front', '# just markdown\n');
  writeSkill(skills, 'empty-body', '---\nname: empty-body\ndescription: d\n---\n\n');
  writeSkill(skills, 'a'.repeat(65), skill('a'.repeat(65), 'd'));
  fs.mkdirSync(path.join(skills, 'no-skill-md'));
  const index = discoverSkills({ workspaceRoot: root, userDir: null });
  assert.deepEqual(
    index.skills.map((s) => s.name),
    ['good-one'],
  );
  assert.deepEqual(index.skills[0]!.files, ['reference.md']);
  const reasons = new Map(index.problems.map((p) => [path.basename(path.dirname(p.path)), p.message]));
  assert.match(reasons.get('Bad_Name')!, /lowercase/);
  assert.match(reasons.get('mismatch')!, /must equal the folder name/);
  assert.match(reasons.get('long-desc')!, /1025 characters; the limit is 1024/);
  assert.match(reasons.get('no-desc')!, /"description" is required/);
  assert.match(reasons.get('no-front')!, /frontmatter/);
  assert.match(reasons.get('empty-body')!, /no instructions/);
  assert.match(reasons.get('a'.repeat(65))!, /65 characters; the limit is 64/);
  assert.match(reasons.get('no-skill-md')!, /missing SKILL\.md/);
  assert.equal(index.problems.length, 8, 'every invalid skill is reported');
  assert.ok(
    formatSkillProblems(index.problems).every((l) => l.startsWith('Invalid skill (workspace) ')),
    'readable lines',
  );
});

test('workspace skills override user skills, which override bundled ones; the override is reported', () => {
  const bundled = tempDir();
  const user = tempDir();
  const root = tempDir();
  writeSkill(bundled, 'shared', skill('shared', 'bundled version'));
  writeSkill(bundled, 'only-bundled', skill('only-bundled', 'b'));
  writeSkill(user, 'shared', skill('shared', 'user version'));
  writeSkill(path.join(root, '.agents/skills'), 'shared', skill('shared', 'workspace version'));
  const index = discoverSkills({ bundledDir: bundled, userDir: user, workspaceRoot: root });
  assert.deepEqual(
    index.skills.map((s) => [s.name, s.description]),
    [
      ['only-bundled', 'b'],
      ['shared', 'workspace version'],
    ],
  );
  assert.equal(index.problems.filter((p) => p.level === 'warning').length, 2);
});

test('attacker: a workspace skill folder or SKILL.md linked outside the workspace is not read; links inside work', () => {
  // The threat: `.agents/skills/x -> ~/private/` or `SKILL.md -> ~/notes.md` would serve a file of the
  // user's (anything with a frontmatter) as a skill body the model reads.
  const outside = tempDir();
  const root = tempDir();
  writeSkill(outside, 'private', skill('private', 'a private note', 'PRIVATE-SKILL-TEXT'));
  writeSkill(outside, 'filelink', skill('filelink', 'a private note', 'PRIVATE-SKILL-TEXT'));
  const skills = path.join(root, '.agents/skills');
  fs.mkdirSync(skills, { recursive: true });
  fs.symlinkSync(path.join(outside, 'private'), path.join(skills, 'private'));
  fs.mkdirSync(path.join(skills, 'filelink'));
  fs.symlinkSync(path.join(outside, 'filelink', 'SKILL.md'), path.join(skills, 'filelink', 'SKILL.md'));
  writeSkill(root, 'kept/inside', skill('inside', 'kept inside the workspace'));
  fs.symlinkSync(path.join(root, 'kept/inside'), path.join(skills, 'inside'));
  const index = discoverSkills({ workspaceRoot: root, userDir: null });
  assert.deepEqual(
    index.skills.map((s) => s.name),
    ['inside'],
  );
  const refused = index.problems.filter((p) => /outside the workspace; it is not read/.test(p.message));
  assert.deepEqual(refused.map((p) => path.basename(path.dirname(p.path))).sort(), ['filelink', 'private']);
  // The user's own skills folder may link anywhere.
  const userDir = tempDir();
  fs.symlinkSync(path.join(outside, 'private'), path.join(userDir, 'private'));
  assert.deepEqual(
    discoverSkills({ userDir, workspaceRoot: tempDir() }).skills.map((s) => s.name),
    ['private'],
  );
});

test('the bundled skills are valid and their descriptions are routing rules', () => {
  const index = discoverSkills({ bundledDir: defaultBundledSkillsDir(), userDir: null });
  assert.deepEqual(index.problems, []);
  assert.ok(index.skills.length >= 3, `${index.skills.length} bundled skills`);
  for (const s of index.skills) {
    assert.match(s.description, /^Use when .+ Don't use /, `${s.name} description is a routing rule`);
    assert.ok(s.body.length > 400, `${s.name} has real content`);
    assert.match(s.body, /## Checklist/, `${s.name} has a checklist for reminders`);
  }
  const editing = index.skills.find((s) => s.name === 'precise-file-editing');
  assert.deepEqual(editing && skillErrorCodes(editing), [
    'NO_MATCH',
    'AMBIGUOUS_MATCH',
    'CONFLICT',
    'NOT_READ',
  ]);
});

test('Skill returns the body and supporting files; asking again gives the short reminder; files on demand', async () => {
  const root = tempDir();
  const dir = writeSkill(
    path.join(root, '.agents/skills'),
    'api-design',
    skill(
      'api-design',
      "Use when designing APIs. Don't use for UI.",
      'Long guide text.\n\n## Checklist\n- Version every endpoint.',
    ),
    { 'examples/rest.md': 'GET /v1/items' },
  );
  const index = discoverSkills({ workspaceRoot: root, userDir: null });
  const tool = createSkillTool(index);
  const ctx = context(root);
  const first = await tool.execute({ name: 'api-design' }, ctx);
  assert.equal(first.status, 'success');
  assert.ok(first.text.includes('Long guide text.'), 'full body');
  assert.ok(
    first.text.includes('.agents/skills/api-design/examples/rest.md'),
    'supporting file listed with a Read-able path',
  );

  // The file changed on disk: the tool reads the current body.
  fs.writeFileSync(
    path.join(dir, 'SKILL.md'),
    skill(
      'api-design',
      'changed',
      'Updated guide.\n\n## Checklist\n- Version every endpoint.\n- Document errors.',
    ),
  );
  const again = await tool.execute({ name: 'api-design' }, ctx);
  assert.equal(again.data.mode, 'reminder');
  assert.ok(
    again.text.includes('- Document errors.') && !again.text.includes('Updated guide.'),
    'short reminder only',
  );
  const full = await tool.execute({ name: 'api-design', full: true }, ctx);
  assert.ok(full.text.includes('Updated guide.'), 'full: true reloads the whole guide');

  const file = await tool.execute({ name: 'api-design', file: 'examples/rest.md' }, ctx);
  assert.ok(file.text.includes('GET /v1/items'), 'supporting file content');
  const outside = await tool.execute({ name: 'api-design', file: '../../../../etc/passwd' }, ctx);
  assert.equal(outside.error?.code, 'OUTSIDE_WORKSPACE', 'a file that climbs out is an escape');
  const unlisted = await tool.execute({ name: 'api-design', file: 'examples/none.md' }, ctx);
  assert.equal(unlisted.error?.code, 'NOT_FOUND', 'only listed files can be read');
});

test('Skill explains unknown and invalid skills instead of failing silently', async () => {
  const root = tempDir();
  writeSkill(path.join(root, '.agents/skills'), 'broken', '---\nname: broken\n---\nbody\n');
  writeSkill(path.join(root, '.agents/skills'), 'fine', skill('fine', 'Use when fine.'));
  const tool = createSkillTool(discoverSkills({ workspaceRoot: root, userDir: null }));
  const broken = await tool.execute({ name: 'broken' }, context(root));
  assert.equal(broken.error?.code, 'INVALID_PARAM');
  assert.match(broken.text, /exists but is invalid: frontmatter field "description" is required/);
  const missing = await tool.execute({ name: 'nope' }, context(root));
  assert.equal(missing.error?.code, 'NOT_FOUND');
  assert.match(missing.error!.suggestion, /Available skills: fine/);
});

test('MemorySearch finds pruned content in the session log and the archives, and returns a message by id', async () => {
  const root = tempDir();
  const ctx = context(root);
  const stateDir = ctx.host.stateDir;
  const bigOutput = `${'noise line\n'.repeat(500)}FATAL: connection refused on port 5433\n${'noise line\n'.repeat(500)}`;
  const messages: AgentMessage[] = [
    { role: 'user', id: 'usr1', ts: 1, text: 'Fix the database connection' },
    {
      role: 'tool_result',
      id: 'res1',
      ts: 2,
      toolUseId: 'tu1',
      toolName: 'Bash',
      content: bigOutput,
      isError: true,
      result: { status: 'error', data: null, text: bigOutput, stats: { time_ms: 1 } },
    },
  ];
  const log = [
    JSON.stringify({ type: 'session', version: 1, id: 'sess1', createdAt: 1, model: 'm', workspace: root }),
    ...messages.map((message, i) =>
      JSON.stringify({ type: 'message_appended', message, sessionId: 'sess1', seq: i + 1, ts: 1 }),
    ),
    JSON.stringify({
      type: 'notice',
      level: 'info',
      text: 'connection refused elsewhere',
      sessionId: 'sess1',
      seq: 9,
      ts: 1,
    }),
  ];
  fs.mkdirSync(path.join(stateDir, 'sessions'), { recursive: true });
  fs.writeFileSync(path.join(stateDir, 'sessions', 'sess1.jsonl'), `${log.join('\n')}\n`);
  // As Keel does when it creates a log: only logs it made are searched (trust/ledger.ts).
  recordSessionLog(path.join(stateDir, 'sessions', 'sess1.jsonl'));
  fs.mkdirSync(path.join(stateDir, 'archive'), { recursive: true });
  const archived: AgentMessage = {
    role: 'assistant',
    id: 'msg0',
    ts: 0,
    model: 'm',
    stopReason: 'end_turn',
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    content: [{ type: 'text', text: 'Decided to use pgbouncer on port 6432.' }],
  };
  fs.writeFileSync(
    path.join(stateDir, 'archive', 'sess1-compaction-1.jsonl'),
    `${JSON.stringify(archived)}\n${JSON.stringify(messages[0])}\n`,
  );

  const tool = createMemorySearchTool();
  const hit = await tool.execute({ query: 'connection refused' }, ctx);
  assert.equal(hit.status, 'success');
  assert.deepEqual(
    hit.data.matches.map((m) => m.id),
    ['res1'],
    'notices are not searched; the log message is found',
  );
  assert.match(hit.text, /FATAL: connection refused on port 5433/);
  assert.ok(hit.text.length < 2000, 'a snippet, not the whole output');

  const decision = await tool.execute({ query: 'pgbouncer "port 6432"' }, ctx);
  assert.deepEqual(
    decision.data.matches.map((m) => [m.id, m.source]),
    [['msg0', '.keel/archive/sess1-compaction-1.jsonl']],
  );

  const byId = await tool.execute({ query: 'res1' }, ctx);
  assert.ok(
    byId.text.includes('FATAL: connection refused') && byId.text.split('noise line').length > 900,
    'whole message by id',
  );

  const none = await tool.execute({ query: 'kubernetes' }, ctx);
  assert.equal(none.status, 'success', 'nothing found is not an error');
  assert.deepEqual(none.data.matches, []);
  assert.match(none.text, /No matches/);
});

test('Skill asked again after its guide left the context (pruned or compacted) returns the full body', async () => {
  const root = tempDir();
  writeSkill(
    path.join(root, '.agents/skills'),
    'api-design',
    skill(
      'api-design',
      'Use when designing APIs.',
      'Long guide text.\n\n## Checklist\n- Version every endpoint.',
    ),
  );
  let visible = true;
  const tool = createSkillTool(discoverSkills({ workspaceRoot: root, userDir: null }), {
    inContext: () => visible,
  });
  const ctx = context(root);
  assert.equal((await tool.execute({ name: 'api-design' }, ctx)).data.mode, 'full');
  assert.equal((await tool.execute({ name: 'api-design' }, ctx)).data.mode, 'reminder', 'still in context');
  visible = false;
  const again = await tool.execute({ name: 'api-design' }, ctx);
  assert.equal(again.data.mode, 'full', 'the guide is gone from context: the body comes back');
  assert.ok(again.text.includes('Long guide text.'));
});
