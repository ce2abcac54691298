#!/usr/bin/env node
// Runs the official MCP conformance suite's client scenarios against Keel, through the path users
// take (`keel run --mcp-config` with a scripted model; see test/conformance/keelClient.ts), and prints
// one line per scenario. Needs the built CLI (`npm run build`).
//
//   node scripts/mcp-conformance.mjs [--json] [scenario ...]
//
// The suite (@modelcontextprotocol/conformance) is found in this repository's node_modules or in the
// folder named by KEEL_MCP_CONFORMANCE_DIR. Its bundle imports `fs.globSync` (Node >= 22) only for
// its results browser; on older Node a loader hook (conformance/fsShim.mjs) supplies a stub.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function findSuite() {
  const bases = [process.env.KEEL_MCP_CONFORMANCE_DIR, repo].filter(Boolean);
  for (const base of bases) {
    try {
      const req = createRequire(path.join(path.resolve(base), 'package.json'));
      const pkg = req.resolve('@modelcontextprotocol/conformance/package.json');
      return path.join(path.dirname(pkg), 'dist', 'index.js');
    } catch {
      // not installed there
    }
  }
  return undefined;
}

const nodeMajor = Number(process.versions.node.split('.')[0]);
const shim = nodeMajor < 22 ? ['--import', path.join(repo, 'scripts', 'conformance', 'register.mjs')] : [];

function run(args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      out += c;
    });
    child.on('close', (code) => resolve({ code, out }));
  });
}

export async function listScenarios(suite) {
  const { out } = await run([...shim, suite, 'list']);
  const client = out.split('Client scenarios')[1] ?? '';
  return [...client.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
}

/** One scenario: {scenario, passed, failed, warnings, ok, detail}. */
export async function runScenario(suite, scenario) {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-conformance-'));
  const command = `${process.execPath} --import ${import.meta.resolve('tsx')} ${path.join(repo, 'test', 'conformance', 'keelClient.ts')}`;
  const { out } = await run(
    [...shim, suite, 'client', '--command', command, '--scenario', scenario, '--timeout', '60000'],
    { cwd, env: { ...process.env, NODE_PATH: path.join(repo, 'node_modules') } },
  );
  let keelStderr = '';
  try {
    keelStderr = fs.readFileSync(path.join(cwd, 'keel.stderr'), 'utf8');
  } catch {
    // the client never started Keel
  }
  fs.rmSync(cwd, { recursive: true, force: true });
  // The suite prints its verdict; it writes no results files for client runs.
  const text = out.replace(/\x1b\[[0-9;]*m/g, '');
  const counts = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(text);
  const passed = Number(counts?.[1] ?? 0);
  const failed = Number(counts?.[3] ?? 0);
  const warnings = Number(counts?.[4] ?? 0);
  const ok = /OVERALL: PASSED/.test(text);
  const failedChecks = (text.split('Failed Checks:')[1] ?? '')
    .split('\n')
    .filter((l) => l.trim().startsWith('- '))
    .map((l) => l.trim().slice(2));
  const keelSaid = keelStderr.trim().split('\n').slice(-8).join(' | ');
  const detail = ok
    ? ''
    : `${failedChecks.join('; ') || text.trim().split('\n').slice(-3).join(' | ')}${keelSaid ? ` — keel said: ${keelSaid}` : ''}`;
  return { scenario, passed, failed, warnings, ok, detail };
}

async function main() {
  const argv = process.argv.slice(2);
  const json = argv.includes('--json');
  const suite = findSuite();
  if (!suite) {
    process.stderr.write(
      'mcp-conformance: @modelcontextprotocol/conformance is not installed (npm install, or set KEEL_MCP_CONFORMANCE_DIR)\n',
    );
    process.exit(2);
  }
  const wanted = argv.filter((a) => !a.startsWith('--'));
  const scenarios = wanted.length > 0 ? wanted : await listScenarios(suite);
  const results = [];
  for (const scenario of scenarios) {
    const r = await runScenario(suite, scenario);
    results.push(r);
    if (!json) {
      process.stdout.write(
        `${r.ok ? 'PASS' : 'FAIL'} ${scenario} (${r.passed} ok, ${r.failed} failed, ${r.warnings} warnings)${r.detail ? ` — ${r.detail.slice(0, 300)}` : ''}\n`,
      );
    }
  }
  const passing = results.filter((r) => r.ok).length;
  if (json) process.stdout.write(`${JSON.stringify(results)}\n`);
  else process.stdout.write(`${passing}/${results.length} client scenarios pass\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
