import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { KEEL_BIN, tempWorkspace } from './helpers/cli.ts';

// The built `keel` loads what a command needs when it needs it: `keel tool LS` never loads the shell
// parser or the model SDK (the cold-start bench times it), and the commands that do need them still
// work. Which code a process loaded is read from Node itself (a require hook for CommonJS packages,
// the list of bundle chunks it opened), not inferred from timing.

const probeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-coldstart-'));
const loadedLog = path.join(probeDir, 'loaded.txt');
after(() => fs.rmSync(probeDir, { recursive: true, force: true }));
// Records every CommonJS request (a require hook) and every ES module file resolved (a loader hook).
const probe = path.join(probeDir, 'probe.cjs');
fs.writeFileSync(
  probe,
  `const fs = require('node:fs');
const Module = require('node:module');
const load = Module._load;
Module._load = function (request, ...rest) {
  fs.appendFileSync(${JSON.stringify(loadedLog)}, 'require ' + request + '\\n');
  return load.call(this, request, ...rest);
};
`,
);
const hooks = path.join(probeDir, 'hooks.mjs');
fs.writeFileSync(
  hooks,
  `import fs from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith('file:')) fs.appendFileSync(${JSON.stringify(loadedLog)}, 'import ' + resolved.url + '\\n');
  return resolved;
}
`,
);
const register = path.join(probeDir, 'register.mjs');
fs.writeFileSync(
  register,
  `import { register } from 'node:module';\nimport { pathToFileURL } from 'node:url';\nregister(pathToFileURL(${JSON.stringify(hooks)}));\n`,
);

function keel(args: string[], cwd: string): { code: number | null; stdout: string; loaded: string } {
  fs.rmSync(loadedLog, { force: true });
  const run = spawnSync(process.execPath, ['-r', probe, '--import', register, KEEL_BIN, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, KEEL_SANDBOX: 'off' },
  });
  return {
    code: run.status,
    stdout: run.stdout,
    loaded: fs.existsSync(loadedLog) ? fs.readFileSync(loadedLog, 'utf8') : '',
  };
}

/** Bundle chunks holding the model SDK (esbuild marks each bundled file with a path comment). */
const sdkChunks = fs
  .readdirSync('dist/cli-chunks')
  .filter((f) => f.endsWith('.mjs'))
  .filter((f) =>
    fs.readFileSync(path.join('dist/cli-chunks', f), 'utf8').includes('node_modules/@anthropic-ai/sdk/'),
  );

test('keel tool LS runs without loading the shell parser or the model SDK; Bash loads the parser when it runs', () => {
  assert.ok(sdkChunks.length > 0, 'the SDK lives in a chunk of its own (npm run build)');
  const ws = tempWorkspace({ 'a.txt': 'alpha\n' });
  const ls = keel(['tool', 'LS', '{"path":"."}', '--workspace', ws], ws);
  assert.equal(ls.code, 0, ls.stdout);
  assert.match(ls.stdout, /a\.txt/);
  assert.doesNotMatch(ls.loaded, /require mvdan-sh/, 'no shell parser for LS');
  assert.match(ls.loaded, /import file:.*cli\.mjs/, 'the loader hook saw the bundle');
  for (const chunk of sdkChunks) assert.ok(!ls.loaded.includes(chunk), `LS loaded the SDK chunk ${chunk}`);
  const bash = keel(['tool', 'Bash', '{"command":"echo hi"}', '--workspace', ws], ws);
  assert.match(bash.stdout, /hi/);
  assert.match(bash.loaded, /require mvdan-sh/, 'the command policy parsed the command');
});

test('keel tool Skill still finds the bundled skills, and an unknown tool name lists Skill among the tools', () => {
  const ws = tempWorkspace({});
  const skill = keel(['tool', 'Skill', '{"name":"precise-file-editing"}', '--workspace', ws], ws);
  assert.equal(skill.code, 0, skill.stdout);
  assert.match(skill.stdout, /"status":"success"/);
  const unknown = keel(['tool', 'Nope', '{}', '--workspace', ws], ws);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stdout, /NOT_FOUND/);
  assert.match(unknown.stdout, /Skill/);
});

test('a run that calls the model loads the SDK (the chunk test above can fail)', () => {
  const ws = tempWorkspace({});
  // No server listens on port 9: the first model call fails fast, after loading the SDK.
  const run = spawnSync(process.execPath, ['--import', register, KEEL_BIN, 'run', 'hi', '--workspace', ws], {
    encoding: 'utf8',
    env: {
      ...process.env,
      ANTHROPIC_API_KEY: 'k',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
      KEEL_RETRY_BASE_MS: '1',
      KEEL_SANDBOX: 'off',
    },
  });
  assert.equal(run.status, 1, run.stderr);
  const loaded = fs.readFileSync(loadedLog, 'utf8');
  assert.ok(
    sdkChunks.some((chunk) => loaded.includes(chunk)),
    'the SDK chunk was loaded for the model call',
  );
});

/** Bundle chunks holding the command policy's rules (loaded on a session's first command). */
const ruleChunks = fs
  .readdirSync('dist/cli-chunks')
  .filter((f) => f.endsWith('.mjs'))
  .filter((f) =>
    fs
      .readFileSync(path.join('dist/cli-chunks', f), 'utf8')
      .includes('// src/agent/safety/rules/commandRules.ts'),
  );

test('keel run --demo tours the project without loading the command rules; a run that runs a command loads them', () => {
  assert.ok(ruleChunks.length > 0, 'the command rules live in a chunk of their own (npm run build)');
  const ws = tempWorkspace({});
  const tour = keel(['run', '--demo'], ws);
  assert.equal(tour.code, 0, tour.stdout);
  assert.match(tour.stdout, /That was the tour/);
  for (const chunk of ruleChunks) assert.ok(!tour.loaded.includes(chunk), `the tour loaded ${chunk}`);
  const withCommand = keel(['run', '--demo', '--approve', 'all', 'add a farewell function'], ws);
  assert.equal(withCommand.code, 0, withCommand.stdout);
  assert.match(withCommand.stdout, /the tests pass/);
  assert.ok(
    ruleChunks.some((chunk) => withCommand.loaded.includes(chunk)),
    'the Bash call loaded the command rules',
  );
});
