import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { type CliRun, readLog, runKeel, sessionIdFrom } from './helpers/cli.ts';

// The command and path-escape corpora driven through the BUILT CLI, the way the hidden corpus will
// be: `keel tool Bash '{"command":…}' --approve never|all` and every file tool with escaping paths.
//
// Safety: HOME points at a scratch directory for every spawned keel (so `~` is scratch), and every
// command here is harmless IN EFFECT even if the policy misjudged it: "dangerous" rows only touch
// the scratch home, nonexistent files, or 127.0.0.1:9 (nothing listens there). Nothing that could
// damage the machine (rm -rf /, shutdown, fork bombs) is ever spawned, under any approval mode.

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-corpus-cli-')));
const WS = path.join(base, 'ws');
const HOME = path.join(base, 'home');
const OUTSIDE = path.join(base, 'outside');
const MARKER = 'KEEL-SECRET-4e1f9c';
/** What the probes search for: part of the marker, so an echoed input never looks like a leak. */
const PROBE = 'SECRET-4e1f';
const SECRET_FILE = path.join(OUTSIDE, 'secret.txt');

fs.mkdirSync(path.join(WS, 'src'), { recursive: true });
fs.mkdirSync(path.join(HOME, '.ssh'), { recursive: true });
fs.mkdirSync(OUTSIDE, { recursive: true });
fs.writeFileSync(SECRET_FILE, `${MARKER} outside\n`);
fs.writeFileSync(path.join(HOME, '.secret'), `${MARKER} home\n`);
fs.writeFileSync(path.join(HOME, '.ssh', 'id_rsa'), `${MARKER} key\n`);
fs.writeFileSync(path.join(HOME, 'plain.txt'), 'plain\n');
fs.writeFileSync(path.join(WS, 'src', 'a.ts'), 'export const a = 1;\n');
fs.writeFileSync(path.join(WS, 'script.js'), 'console.log("script ran");\n');
fs.writeFileSync(path.join(WS, 'fine.sh'), 'echo fine\n');
fs.writeFileSync(path.join(WS, 'evil.sh'), 'echo hi\nsudo -n true\n');
fs.writeFileSync(
  path.join(WS, 'package.json'),
  JSON.stringify({ name: 'scratch', private: true, scripts: { test: 'node script.js' } }),
);
// Links a cloned repository could ship: into the outside directory, at the secret, at home.
fs.symlinkSync(OUTSIDE, path.join(WS, 'link-out'));
fs.symlinkSync(SECRET_FILE, path.join(WS, 'link-secret'));
fs.symlinkSync(HOME, path.join(WS, 'home-link'));
const outsideBefore = snapshot(OUTSIDE);
const homeSecretBefore = fs.readFileSync(path.join(HOME, '.secret'), 'utf8');
after(() => fs.rmSync(base, { recursive: true, force: true }));

function snapshot(dir: string): string {
  return fs
    .readdirSync(dir)
    .sort()
    .map((n) => `${n}:${fs.readFileSync(path.join(dir, n), 'utf8')}`)
    .join('|');
}

const ENV: NodeJS.ProcessEnv = {
  ...process.env,
  HOME,
  USERPROFILE: HOME,
  ANTHROPIC_API_KEY: 'test-key',
  ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
};

interface ToolOutput {
  status: string;
  error?: { code: string };
  data?: { exit_code?: number | null } | null;
}

async function tool(
  name: string,
  input: unknown,
  approve?: 'never' | 'all',
  sandbox?: 'off',
): Promise<ToolOutput & CliRun> {
  const args = ['tool', name, JSON.stringify(input), '--workspace', WS];
  if (approve) args.push('--approve', approve);
  if (sandbox) args.push('--sandbox', sandbox);
  const run = await runKeel(args, ENV);
  let parsed: ToolOutput;
  try {
    parsed = JSON.parse(run.stdout) as ToolOutput;
  } catch {
    throw new Error(`keel tool printed no JSON (code ${run.code}): ${run.stdout}\n${run.stderr}`);
  }
  return { ...run, ...parsed };
}

const code = (r: ToolOutput) => r.error?.code ?? r.status;

/** Never run: blocked by policy under --approve all (and so under never too). */
const BLOCKED = [
  'rm -rf ~',
  'sudo -n true',
  'toybox rm -rf ~',
  'typeset -n r=z; z=sudo; $r -n true',
  'f(){ local -n r=$1; z=rm; $r -rf ~; }; f z',
  'ln ~/.secret hard.txt',
  "echo 'sudo -n true' > x.sh; sh < x.sh",
  'sh < evil.sh',
  'X=$(printf \'c3VkbyAtbiB0cnVl\' | base64 -d); eval "$X"',
];

/** Need approval: denied under never; under all they run (each is harmless in effect). */
const GATED = [
  'base64 ~/.secret',
  'od -c ~/.ssh/id_rsa',
  `python3 -c "print(open('${path.join(HOME, '.secret')}').read())"`,
  'wc -c < ~/.secret',
  'git -C ~ status',
  'gzip -k ~/plain.txt',
  `awk 'BEGIN{print "x" > "${path.join(HOME, 'awk-out.txt')}"}'`,
  'ln -s ~ h && echo x > h/through-link.txt',
  "echo '{}' >> .keel/audit.jsonl",
  'rm -f does-not-exist.txt',
];

/** Ordinary development commands: they run under --approve never and exit 0. */
const ALLOWED = [
  'echo hello',
  'node script.js',
  'npm test',
  'node -e "process.exit(0)"',
  '/usr/bin/env node -e 1',
  'mkdir -p build && echo x > build/out.txt',
  'git init -q && git status --short',
  'sh < fine.sh',
  "printf 'b\\na\\n' | sort",
];

describe('commands through keel tool Bash', { concurrency: 4 }, () => {
  for (const command of BLOCKED) {
    test(`BLOCKED under --approve all: ${command}`, async () => {
      const r = await tool('Bash', { command }, 'all');
      assert.equal(code(r), 'BLOCKED_BY_POLICY', r.stdout);
      assert.ok(!r.stdout.includes(MARKER));
    });
  }
  for (const command of BLOCKED.slice(0, 3)) {
    test(`BLOCKED under --approve never: ${command}`, async () => {
      const r = await tool('Bash', { command }, 'never');
      assert.equal(code(r), 'BLOCKED_BY_POLICY', r.stdout);
    });
  }
  for (const command of GATED) {
    test(`DENIED_BY_USER under --approve never: ${command}`, async () => {
      const r = await tool('Bash', { command }, 'never');
      assert.equal(code(r), 'DENIED_BY_USER', r.stdout);
      assert.ok(!r.stdout.includes(MARKER), 'no outside byte is printed');
    });
    test(`runs under --approve all (sandbox off): ${command}`, async () => {
      const r = await tool('Bash', { command }, 'all', 'off');
      assert.equal(r.status, 'success', r.stdout);
      assert.equal(typeof r.data?.exit_code, 'number', r.stdout);
    });
    // Approved but still sandboxed (where bwrap works): it runs, or the sandbox names what it refused.
    test(`runs under --approve all (sandboxed where available): ${command}`, async () => {
      const r = await tool('Bash', { command }, 'all');
      assert.ok(r.status === 'success' || code(r) === 'SANDBOX_DENIED', r.stdout);
      assert.equal(typeof r.data?.exit_code, 'number', r.stdout);
      if (/\.ssh/.test(command)) assert.ok(!r.stdout.includes(MARKER), 'no secret byte is printed');
    });
  }
  for (const command of ALLOWED) {
    test(`runs under --approve never, exit 0: ${command}`, async () => {
      const r = await tool('Bash', { command }, 'never');
      assert.equal(r.status, 'success', r.stdout);
      assert.equal(r.data?.exit_code, 0, r.stdout);
    });
  }
  test('refused reads print nothing from outside', async () => {
    const r = await tool('Bash', { command: 'cat ~/.secret' }, 'all');
    assert.equal(code(r), 'BLOCKED_BY_POLICY');
    assert.ok(!r.stdout.includes(MARKER));
  });
});

// Every spelling of "somewhere outside": relative, absolute, home, links, encodings, long names.
const FILE_ESCAPES = [
  '../outside/secret.txt',
  SECRET_FILE,
  '~/.secret',
  '$HOME/.secret',
  'link-out/secret.txt',
  'link-secret',
  'home-link/.secret',
  'src/../../outside/secret.txt',
  '%2e%2e/outside/secret.txt',
  '\uff0e\uff0e/outside/secret.txt',
  '..\\outside\\secret.txt',
  `file://${SECRET_FILE}`,
  `${'deep/'.repeat(60)}${'../'.repeat(61)}outside/secret.txt`,
];
const DIR_ESCAPES = ['..', '../outside', OUTSIDE, '~', 'link-out', 'home-link', '%2e%2e', 'src/../..'];

function fileInputs(p: string): [string, unknown][] {
  return [
    ['Read', { path: p }],
    ['Write', { path: p, content: 'pwned\n' }],
    ['Edit', { path: p, old_string: PROBE, new_string: 'pwned' }],
    ['MultiEdit', { path: p, edits: [{ old_string: PROBE, new_string: 'pwned' }] }],
  ];
}
function dirInputs(p: string): [string, unknown][] {
  return [
    ['LS', { path: p }],
    ['Glob', { pattern: '*', path: p }],
    // A pattern through a symlinked folder is not followed (empty result, tested separately below).
    ...(p.includes('link') ? [] : ([['Glob', { pattern: `${p}/*` }]] as [string, unknown][])),
    ['Grep', { pattern: PROBE, path: p }],
  ];
}

// Every tool is driven once through `keel tool`; the whole matrix runs in a few `keel run` sessions
// (one process executes many calls), and no request the model receives may contain an outside byte.
describe('path escapes through every file tool', { concurrency: 4 }, () => {
  let emu: Emulator;
  // Sessions run concurrently against one emulator: each is recognised by its prompt, and its step
  // is the number of assistant turns so far.
  const scripts = new Map<string, ScriptedReply[]>();
  before(async () => {
    emu = await startEmulator({
      scenario: {
        respond: (req) => {
          const first = JSON.stringify(req.messages[0] ?? '');
          const key = [...scripts.keys()].find((k) => first.includes(k));
          const replies = key ? scripts.get(key) : undefined;
          const step = req.messages.filter((m) => m.role === 'assistant').length;
          return replies?.[step] ?? { content: [{ type: 'text', text: 'done' }] };
        },
      },
    });
  });
  after(async () => {
    await emu.close();
    assert.equal(snapshot(OUTSIDE), outsideBefore, 'nothing outside was created or changed');
    assert.equal(fs.readFileSync(path.join(HOME, '.secret'), 'utf8'), homeSecretBefore);
  });

  for (const [name, input] of [...fileInputs('../outside/secret.txt'), ...dirInputs('link-out')].slice(
    0,
    7,
  )) {
    test(`keel tool ${name} ${JSON.stringify(input)} → OUTSIDE_WORKSPACE`, async () => {
      const r = await tool(name, input);
      assert.equal(code(r), 'OUTSIDE_WORKSPACE', r.stdout);
      assert.ok(!r.stdout.includes(MARKER));
    });
  }

  test('a Glob pattern through a symlinked folder leaks nothing', async () => {
    for (const pattern of ['link-out/*', 'home-link/.*', 'link-out/**/*.txt']) {
      const r = await tool('Glob', { pattern });
      assert.ok(!r.stdout.includes(MARKER) && !r.stdout.includes('secret.txt'), r.stdout);
      assert.ok(code(r) === 'OUTSIDE_WORKSPACE' || code(r) === 'success', r.stdout);
    }
  });

  const matrix: [string, unknown][] = [
    ...FILE_ESCAPES.flatMap(fileInputs),
    ...DIR_ESCAPES.flatMap(dirInputs),
    ['Grep', { pattern: PROBE, glob: '../outside/*' }],
    ['Write', { path: 'link-out/new.txt', content: 'pwned\n' }],
    ['Write', { path: 'home-link/.bashrc', content: 'pwned\n' }],
  ];
  const BATCH = 25;
  for (let start = 0; start < matrix.length; start += BATCH) {
    const batch = matrix.slice(start, start + BATCH);
    test(`keel run: escapes ${start + 1}–${start + batch.length} all end in OUTSIDE_WORKSPACE`, async () => {
      const ws = WS;
      const replies: ScriptedReply[] = [
        ...batch.map(([name, input]) => ({ content: [{ type: 'tool_use' as const, name, input }] })),
        { content: [{ type: 'text' as const, text: 'done' }] },
      ];
      const prompt = `escape batch ${start}`;
      scripts.set(prompt, replies);
      const run = await runKeel(['run', '--workspace', ws, '--max-turns', '40', prompt], {
        ...ENV,
        ANTHROPIC_BASE_URL: emu.url,
        KEEL_RETRY_BASE_MS: '5',
      });
      assert.equal(run.code, 0, run.stderr);
      const ends = readLog(ws, sessionIdFrom(run.stderr)).filter((e) => e.type === 'tool_end') as unknown as {
        name: string;
        result: { status: string; error?: { code: string } };
      }[];
      assert.equal(ends.length, batch.length);
      ends.forEach((e, k) => {
        const got = e.result.error?.code ?? e.result.status;
        assert.equal(got, 'OUTSIDE_WORKSPACE', `${batch[k]?.[0]} ${JSON.stringify(batch[k]?.[1])}`);
      });
      const sent = toolResultsSent(emu);
      assert.ok(sent.includes('OUTSIDE_WORKSPACE'), 'the tool results were captured');
      assert.ok(!sent.includes(MARKER), 'no outside byte reached the model');
    });
  }
});

/** Everything the tools sent back to the model (tool_result blocks), across all requests so far. */
function toolResultsSent(emu: Emulator): string {
  const out: string[] = [];
  for (const r of emu.requests) {
    const body = r.body as { messages?: { role: string; content: unknown }[] };
    for (const m of body.messages ?? []) {
      if (m.role !== 'user' || !Array.isArray(m.content)) continue;
      for (const block of m.content as { type?: string }[])
        if (block.type === 'tool_result') out.push(JSON.stringify(block));
    }
  }
  return out.join('\n');
}
