import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { discoverAgents } from '../../src/agent/agents/discover.ts';
import { planFileText, planSteps, readPlanFile } from '../../src/agent/agents/plan.ts';
import { discoverCommands } from '../../src/agent/commands/discover.ts';
import {
  closeMatches,
  parseSlash,
  resolveSlash,
  splitArgs,
  substituteArgs,
} from '../../src/agent/commands/expand.ts';
import { readMarkdownFile, toolList } from '../../src/agent/commands/promptFile.ts';
import { specAdmits } from '../../src/agent/session/toolGate.ts';

function tree(files: Record<string, string>): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-cmds-')));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe('prompt files: frontmatter', () => {
  test('optional frontmatter; tool lists as a comma list, a flow list or a block list', () => {
    assert.deepEqual(readMarkdownFile('Just a prompt.\n'), {
      ok: true,
      file: { data: {}, body: 'Just a prompt.\n' },
    });
    const block = readMarkdownFile('---\ntools:\n  - Read\n  - Grep\n---\nBody\n');
    assert.ok(block.ok);
    assert.deepEqual(toolList(block.file.data.tools!), ['Read', 'Grep']);
    assert.deepEqual(toolList('[Read, "Grep"]'), ['Read', 'Grep']);
    assert.deepEqual(toolList('Bash(git status:*), Bash(git add:*) Read'), [
      'Bash(git status:*)',
      'Bash(git add:*)',
      'Read',
    ]);
    assert.equal(readMarkdownFile('---\ndescription: x\nBody').ok, false, 'an unclosed block is an error');
  });
});

describe('slash commands: discovery', () => {
  test('the four places, dir:name namespacing, user files first, built-in names reserved, problems reported', () => {
    const user = tree({ 'deploy.md': 'The user deploy.\n' });
    const ws = tree({
      '.claude/commands/deploy.md': 'The repo deploy.\n',
      '.claude/commands/git/commit.md':
        '---\ndescription: Commit\nallowed-tools: Bash(git commit:*)\n---\nCommit $ARGUMENTS\n',
      '.github/prompts/explain.prompt.md': 'Explain.\n',
      '.github/prompts/notaprompt.md': 'ignored: not .prompt.md\n',
      '.keel/commands/fix.md': '---\nmodel: opus\nargument-hint: ISSUE\n---\nFix #$1\n',
      '.claude/commands/cost.md': 'shadow\n',
      '.claude/commands/bad.md': '---\ndescription: [unclosed\n',
    });
    const { commands, problems } = discoverCommands({ workspaceRoot: ws, userDirs: [user] });
    assert.deepEqual(
      commands.map((c) => [c.name, c.source]),
      [
        ['deploy', 'user'],
        ['explain', 'workspace'],
        ['fix', 'workspace'],
        ['git:commit', 'workspace'],
      ],
    );
    const commit = commands.find((c) => c.name === 'git:commit')!;
    assert.equal(commit.shown, '.claude/commands/git/commit.md');
    assert.deepEqual(commit.allowedTools, ['Bash(git commit:*)']);
    assert.equal(commands.find((c) => c.name === 'fix')?.argumentHint, 'ISSUE');
    assert.ok(
      problems.some((p) => p.file === '.claude/commands/deploy.md' && /already defined/.test(p.message)),
    );
    assert.ok(problems.some((p) => p.file === '.claude/commands/cost.md' && /built-in/.test(p.message)));
    assert.ok(problems.some((p) => p.file === '.claude/commands/bad.md' && /not closed/.test(p.message)));
  });
});

describe('slash commands: expansion', () => {
  test('parse, split, substitute', () => {
    assert.deepEqual(parseSlash('/review-pr 42 now'), { name: 'review-pr', args: '42 now' });
    assert.equal(parseSlash('/usr/bin/env fails, why?'), undefined, 'a path is not a command');
    assert.equal(parseSlash(' /model x'), undefined, 'a leading blank sends the text as it is');
    assert.deepEqual(splitArgs(`a "b c" 'd e' f`), ['a', 'b c', 'd e', 'f']);
    assert.equal(substituteArgs('Fix $1 in $2 ($ARGUMENTS)', 'x "y z"'), 'Fix x in y z (x "y z")');
    assert.equal(substituteArgs('No placeholders.', 'extra'), 'No placeholders.\n\nARGUMENTS: extra');
    assert.equal(substituteArgs('No placeholders.', ''), 'No placeholders.');
    assert.equal(substituteArgs('$10 stays', 'a'), '$10 stays\n\nARGUMENTS: a');
  });

  test('built-ins, a labelled expansion, and close matches for a typo', () => {
    const ws = tree({
      '.claude/commands/git/commit.md': '---\nallowed-tools: Read\nmodel: m1\n---\nCommit $ARGUMENTS\n',
    });
    const catalog = discoverCommands({ workspaceRoot: ws, userDirs: [] });
    assert.deepEqual(resolveSlash({ name: 'model', args: 'opus' }, catalog), {
      kind: 'model',
      model: 'opus',
    });
    assert.deepEqual(resolveSlash({ name: 'clear', args: '' }, catalog), { kind: 'clear' });
    const init = resolveSlash({ name: 'init', args: '' }, catalog);
    assert.ok(init.kind === 'prompt' && /AGENTS\.md/.test(init.text) && /built-in command/.test(init.text));
    const commit = resolveSlash({ name: 'git:commit', args: 'all' }, catalog);
    assert.ok(commit.kind === 'prompt');
    assert.match(
      commit.text,
      /^\[\/git:commit from \.claude\/commands\/git\/commit\.md: a prompt file from the repository/,
    );
    assert.match(commit.text, /Commit all/);
    assert.equal(commit.model, 'm1');
    assert.deepEqual(commit.allowedTools, ['Read']);
    const typo = resolveSlash({ name: 'comit', args: '' }, catalog);
    assert.ok(typo.kind === 'error' && /Did you mean \/git:commit/.test(typo.message));
    assert.deepEqual(closeMatches('mdoel', ['model', 'memory', 'git:commit']), ['model']);
  });

  test('allowed-tools patterns: Bash prefixes (no chaining), path globs', () => {
    assert.ok(specAdmits('Bash(git status:*)', 'Bash', { command: 'git status --short' }));
    assert.ok(!specAdmits('Bash(git status:*)', 'Bash', { command: 'git status; rm -rf x' }));
    assert.ok(!specAdmits('Bash(git status:*)', 'Bash', { command: 'git statusx' }));
    assert.ok(specAdmits('Read(src/**)', 'Read', { path: 'src/a/b.ts' }));
    assert.ok(!specAdmits('Read(src/**)', 'Read', { path: 'secrets/a' }));
    assert.ok(!specAdmits('Read', 'Edit', { path: 'a' }));
  });
});

describe('custom agents: discovery and plans', () => {
  test('the three places, name from frontmatter or file, tools narrowed, plan built in', () => {
    const ws = tree({
      '.claude/agents/reader.md':
        '---\nname: reader\ndescription: Reads\ntools: Read, Grep\nmodel: haiku\n---\nYou only read.\n',
      '.github/agents/docs.agent.md': '---\ndescription: Docs\n---\nWrite docs.\n',
      '.keel/agents/plan.md': 'shadowing the built-in\n',
    });
    const { agents, problems } = discoverAgents({ workspaceRoot: ws, userDirs: [] });
    assert.deepEqual(
      agents.map((a) => a.name),
      ['plan', 'docs', 'reader'],
    );
    const reader = agents.find((a) => a.name === 'reader')!;
    assert.deepEqual(reader.tools, ['Read', 'Grep']);
    assert.equal(reader.model, 'claude-haiku-4-5');
    assert.equal(reader.shown, '.claude/agents/reader.md');
    assert.ok(problems.some((p) => /built-in agent/.test(p.message)));
  });

  test('plan steps from the ## Plan section; a plan file read back', () => {
    const text = 'Intro\n## Plan\n1. Change a.ts\n   - detail\n2) Run tests\n## Notes\n- not a step\n';
    assert.deepEqual(planSteps(text), ['Change a.ts', 'Run tests']);
    const file = readPlanFile(planFileText('Do it', text, 's1'));
    assert.equal(file.task, 'Do it');
    assert.deepEqual(file.steps, ['Change a.ts', 'Run tests']);
  });
});
