import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Emulator, type ScriptedReply, startEmulator } from '../emulator/server.ts';
import { cliEnv, processesWith, startKeel, tempWorkspace, waitFor } from './helpers/cli.ts';
import { serverScript, writeJson } from './helpers/mcp.ts';

// MCP servers that fail to start, hang or crash mid-call, through the built CLI with real servers:
// each failure is a specific error the model reads, and the session goes on to its answer.

let emu: Emulator;
let home: string;
before(async () => {
  emu = await startEmulator({});
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-mcp-home-'));
});
after(async () => {
  await emu.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const call = (
  server: string,
  tool: string,
  args: unknown,
  expect?: ScriptedReply['expect'],
): ScriptedReply => ({
  content: [{ type: 'tool_use', name: 'McpCall', input: { server, tool, arguments: args } }],
  ...(expect ? { expect } : {}),
});

function toolResults(stdout: string): { name: string; status: string; code?: string; text: string }[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string; name?: string; result?: Record<string, unknown> })
    .filter((e) => e.type === 'tool_end')
    .map((e) => ({
      name: e.name!,
      status: e.result!.status as string,
      ...((e.result!.error as { code?: string } | undefined)?.code
        ? { code: (e.result!.error as { code: string }).code }
        : {}),
      text: e.result!.text as string,
    }));
}

describe('MCP failures', () => {
  test('servers that fail to start, hang (at start and in a call) and crash mid-call: specific errors, the session goes on', async () => {
    const ws = tempWorkspace({});
    const marker = `keel-crash-marker-${path.basename(ws)}`;
    const config = writeJson(path.join(ws, 'cfg', 'mcp.json'), {
      servers: {
        // The filesystem server refuses to start on a directory that does not exist (and says so on stderr).
        broken: {
          command: process.execPath,
          args: [serverScript('filesystem'), path.join(ws, 'no-such-dir')],
        },
        // A process that never answers the MCP handshake (a 1 s startup timeout for it alone).
        hung: { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'], startTimeout: 1000 },
        // A real tool that takes 30 s, against a 3 s per-call timeout.
        slow: { command: process.execPath, args: [serverScript('everything'), 'stdio'], timeout: 3000 },
        // Killed by this test while a call runs (the extra argument only marks the process).
        crashy: { command: process.execPath, args: [serverScript('everything'), 'stdio', marker] },
      },
    });
    const longOp = { duration: 30, steps: 30 };
    emu.setScenario({
      replies: [
        call('hung', 'anything', {}),
        call(
          'broken',
          'list_directory',
          { path: ws },
          { toolResultContains: 'did not finish starting within 1 s' },
        ),
        call('slow', 'trigger-long-running-operation', longOp, { toolResultContains: 'failed to start' }),
        call('crashy', 'trigger-long-running-operation', longOp, { toolResultContains: '[TIMEOUT]' }),
        call('crashy', 'echo', { message: 'back again' }, { toolResultContains: 'crashed while running' }),
        call('crashy', 'trigger-long-running-operation', longOp, { toolResultContains: 'Echo: back again' }),
        call('crashy', 'echo', { message: 'once more' }, { toolResultContains: '[CIRCUIT_OPEN]' }),
        call('slow', 'echo', { message: 'still here' }, { toolResultContains: '[CIRCUIT_OPEN]' }),
        {
          content: [{ type: 'text', text: 'carried on' }],
          expect: { toolResultContains: 'Echo: still here' },
        },
      ],
    });
    const keel = startKeel(
      ['run', '--workspace', ws, '--mcp-config', config, '--approve', 'all', '--json', 'go'],
      cliEnv(emu.url, { HOME: home }),
    );
    // Kill the crashy server each time a long operation is running on it (twice).
    let out = '';
    keel.stdout!.on('data', (c: Buffer | string) => {
      out += c.toString();
    });
    // Keel reports "calling server › tool" once the server is up and the request goes out.
    const longCallsStarted = () =>
      out
        .split('\n')
        .filter((l) => l.includes('"tool_update"') && l.includes('calling crashy › trigger-long')).length;
    for (const round of [1, 2]) {
      await waitFor(
        () => longCallsStarted() >= round || keel.exitCode !== null,
        60_000,
        `long call #${round} on crashy`,
      );
      await waitFor(() => processesWith(marker).length > 0, 30_000, 'the crashy server process');
      await new Promise((r) => setTimeout(r, 300)); // the request is on its way to the server
      // Sandboxed, the marker is also on the server's bwrap wrappers: killing one may take the
      // others with it (die-with-parent) before the loop reaches them.
      for (const pid of processesWith(marker)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
        }
      }
    }
    const run = await keel.result;
    assert.equal(run.code, 0, run.stderr);
    const results = toolResults(run.stdout);
    assert.deepEqual(
      results.map((r) => r.code ?? r.status),
      [
        'TIMEOUT',
        'UNAVAILABLE',
        'TIMEOUT',
        'UNAVAILABLE',
        'success',
        'CIRCUIT_OPEN',
        'CIRCUIT_OPEN',
        'success',
      ],
    );
    assert.match(results[0]!.text, /MCP server "hung" failed to start .*did not finish starting within 1 s/);
    assert.match(results[1]!.text, /MCP server "broken" failed to start .*exited with code 1/);
    assert.match(results[1]!.text, /stderr \(last lines\):\n.*no-such-dir/s);
    assert.match(results[2]!.text, /slow › trigger-long-running-operation did not answer within 3 s/);
    assert.match(
      results[3]!.text,
      /MCP server "crashy" crashed while running trigger-long-running-operation: .*killed by SIGKILL/,
    );
    assert.match(results[5]!.text, /crashed twice/);
    const notices = run.stdout
      .split('\n')
      .filter((l) => l.includes('"notice"'))
      .map((l) => (JSON.parse(l) as { text: string }).text);
    assert.ok(
      notices.some((n) => n.startsWith('MCP server "broken" failed')),
      notices.join('\n'),
    );
    assert.ok(
      notices.some((n) => n.startsWith('MCP server "crashy" crashed')),
      notices.join('\n'),
    );
    assert.deepEqual(processesWith(marker), [], 'nothing left running');
  });
});
