import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probeSandbox } from '../../src/agent/safety/sandbox/probe.ts';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, runKeel, waitFor } from './helpers/cli.ts';

// Through the built `keel tool Bash` (and `keel run` for a background job): a sandboxed command can
// neither read Keel's own user folder (MCP tokens) nor leave behind what host tools act on later —
// each attempt is undone, the host tree keeps none of it, and the result names the refusal.

const available = probeSandbox({ bwrapPath: 'bwrap' }).tier === 'bwrap';
const TOKEN = 'MCP-BEARER-TOKEN-7d2e';

let emu: Emulator;
let base: string;
let home: string;
let keelHome: string;

before(async () => {
  emu = await startEmulator({});
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-runlater-')));
  home = path.join(base, 'home');
  keelHome = path.join(base, 'keel-home');
  for (const dir of [path.join(home, '.keel'), keelHome]) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'mcp.json'),
      JSON.stringify({ servers: { s: { headers: { Authorization: `Bearer ${TOKEN}` } } } }),
    );
  }
  fs.writeFileSync(
    path.join(home, '.gitconfig'),
    '[user]\n\tname = Keel Test\n\temail = keel@example.invalid\n',
  );
});
after(async () => {
  await emu.close();
  fs.rmSync(base, { recursive: true, force: true });
});

const env = () => cliEnv(emu.url, { HOME: home, KEEL_HOME: keelHome });

function workspace(name: string, files: Record<string, string> = {}): string {
  const ws = path.join(base, name);
  fs.mkdirSync(ws);
  execFileSync('git', ['init', '-q'], { cwd: ws, env: { ...process.env, HOME: home } });
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(ws, file)), { recursive: true });
    fs.writeFileSync(path.join(ws, file), content);
  }
  return ws;
}

interface Result {
  status: string;
  text: string;
  error?: { code: string; message: string };
}

async function bash(ws: string, command: string): Promise<Result> {
  const run = await runKeel(
    ['tool', 'Bash', JSON.stringify({ command }), '--workspace', ws, '--approve', 'all'],
    env(),
  );
  return JSON.parse(run.stdout) as Result;
}

function assertRefused(result: Result, target: string, label: string): void {
  assert.equal(result.error?.code, 'SANDBOX_DENIED', `${label}: ${result.text}`);
  assert.ok(
    result.error?.message.includes(target),
    `${label} should name ${target}: ${result.error?.message}`,
  );
}

describe('the sandbox and what runs later on the host', {
  skip: !available && 'bubblewrap unavailable',
}, () => {
  test("Keel's own folder is unreadable: ~/.keel/mcp.json and $KEEL_HOME/mcp.json", async () => {
    const ws = workspace('read');
    for (const file of [path.join(home, '.keel', 'mcp.json'), path.join(keelHome, 'mcp.json')]) {
      const r = await bash(ws, `python3 -c 'print(open("${file}").read())'`);
      assertRefused(r, file, `read ${file}`);
      assert.ok(!r.text.includes(TOKEN), 'the token came back');
    }
  });

  test('npm config: a changed .npmrc and a new one are refused, the host keeps the original', async () => {
    const ws = workspace('npmrc-existing', { '.npmrc': 'registry=https://registry.example.test/\n' });
    const r = await bash(ws, 'echo "script-shell=/tmp/evil.sh" >> .npmrc');
    assertRefused(r, path.join(ws, '.npmrc'), 'append to .npmrc');
    assert.equal(
      fs.readFileSync(path.join(ws, '.npmrc'), 'utf8'),
      'registry=https://registry.example.test/\n',
    );

    const fresh = workspace('npmrc-new');
    const r2 = await bash(fresh, 'echo "node-options=--require /tmp/evil.js" > .npmrc && echo wrote');
    assertRefused(r2, path.join(fresh, '.npmrc'), 'new .npmrc');
    assert.ok(!fs.existsSync(path.join(fresh, '.npmrc')), 'the new .npmrc was left behind');
  });

  test('VS Code: settings.json and tasks.json, in a new .vscode and in an existing one', async () => {
    const fresh = workspace('vscode-new');
    const task = JSON.stringify({
      tasks: [{ label: 'x', command: 'evil', runOptions: { runOn: 'folderOpen' } }],
    });
    const r = await bash(
      fresh,
      `mkdir -p .vscode && echo '{"terminal.integrated.env.linux":{"X":"1"}}' > .vscode/settings.json && echo '${task}' > .vscode/tasks.json`,
    );
    assertRefused(r, path.join(fresh, '.vscode'), 'new .vscode');
    assert.ok(!fs.existsSync(path.join(fresh, '.vscode')), 'the new .vscode was left behind');

    const existing = workspace('vscode-existing', { '.vscode/settings.json': '{}\n' });
    const r2 = await bash(
      existing,
      `echo '{"git.path":"/tmp/evil"}' > .vscode/settings.json; echo '${task}' > .vscode/tasks.json`,
    );
    assertRefused(r2, path.join(existing, '.vscode', 'settings.json'), 'existing settings.json');
    assert.equal(fs.readFileSync(path.join(existing, '.vscode', 'settings.json'), 'utf8'), '{}\n');
    assert.deepEqual(fs.readdirSync(path.join(existing, '.vscode')), ['settings.json']);
  });

  test('git: a renamed .git with a fresh config (core.fsmonitor) and a new .git/config.worktree are refused', async () => {
    const ws = workspace('git');
    const r = await bash(
      ws,
      'mv .git .git-old && git init -q && git config core.fsmonitor "touch /tmp/pwned"',
    );
    assertRefused(r, path.join(ws, '.git'), 'rename .git');
    assert.ok(!fs.existsSync(path.join(ws, '.git-old')));
    assert.doesNotMatch(fs.readFileSync(path.join(ws, '.git', 'config'), 'utf8'), /fsmonitor/);

    const r2 = await bash(ws, 'printf "[core]\\n\\tfsmonitor = touch /tmp/pwned\\n" > .git/config.worktree');
    assertRefused(r2, path.join(ws, '.git', 'config.worktree'), 'config.worktree');
    assert.ok(!fs.existsSync(path.join(ws, '.git', 'config.worktree')));
    // Ordinary git work still runs.
    const ok = await bash(
      ws,
      'echo hi > a.txt && git add a.txt && git commit -q -m one && git log --oneline',
    );
    assert.equal(ok.status, 'success', ok.text);
  });

  test('a repository made inside the command keeps only the config that runs nothing', async () => {
    const ws = path.join(base, 'late-git');
    fs.mkdirSync(ws);
    const r = await bash(
      ws,
      'git init -q && git config core.fsmonitor "touch /tmp/pwned" && git config user.name Bot',
    );
    assertRefused(r, path.join(ws, '.git', 'config'), 'fsmonitor in a new .git');
    const config = fs.readFileSync(path.join(ws, '.git', 'config'), 'utf8');
    assert.doesNotMatch(config, /fsmonitor/);
    assert.match(config, /name = Bot/);
  });

  test('yarn: a new .yarnrc.yml (yarnPath runs JavaScript) is removed', async () => {
    const ws = workspace('yarn');
    const r = await bash(
      ws,
      'echo "yarnPath: ./evil.cjs" > .yarnrc.yml && echo "module.exports=1" > evil.cjs',
    );
    assertRefused(r, path.join(ws, '.yarnrc.yml'), 'new .yarnrc.yml');
    assert.ok(!fs.existsSync(path.join(ws, '.yarnrc.yml')));
    assert.ok(fs.existsSync(path.join(ws, 'evil.cjs')), 'ordinary files stay');
  });

  test('a background job is checked while it runs and its notice names the refusal', async () => {
    const ws = workspace('job');
    const call = (input: Record<string, unknown>): ScriptedReply => ({
      content: [{ type: 'tool_use', name: 'Bash', input }],
    });
    emu.setScenario({
      replies: [
        call({
          command: 'mkdir -p .vscode && echo "{}" > .vscode/tasks.json && sleep 4 && echo job-done',
          run_in_background: true,
        }),
        { content: [{ type: 'text', text: 'waiting' }] },
        { content: [{ type: 'text', text: 'done' }], expect: { lastUserContains: 'SANDBOX_DENIED' } },
      ],
    });
    const tasks = path.join(ws, '.vscode', 'tasks.json');
    const jobsDir = path.join(ws, '.keel', 'jobs');
    const jobLog = () =>
      fs.existsSync(jobsDir)
        ? fs
            .readdirSync(jobsDir)
            .map((f) => fs.readFileSync(path.join(jobsDir, f), 'utf8'))
            .join('')
        : '';
    const pending = runKeel(['run', '--workspace', ws, '--approve', 'all', '--job-wait', '20', 'go'], env());
    // Removed while the job still sleeps, not only when it ends.
    await waitFor(() => fs.existsSync(tasks), 10_000, 'the job to write tasks.json');
    await waitFor(() => !fs.existsSync(tasks), 10_000, 'the sweep to remove it');
    assert.doesNotMatch(jobLog(), /job-done/, 'removed only after the job ended');
    const run = await pending;
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), 'done');
    assert.ok(!fs.existsSync(path.join(ws, '.vscode')));
  });
});
