// Runs the emulator as a process: `node --import tsx test/emulator/cli.ts --scenario FILE|NAME --port N`.
// The first stdout line is the base URL, so a parent process can read it and hand it to the SDK.
import { existsSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { demoScenario } from './demo/scenario.ts';
import { loadScenarioFile, scenarioPath } from './scenario.ts';
import { startEmulator } from './server.ts';

const USAGE = `usage: cli.ts [--scenario FILE|NAME] [--port N] [--seed N] [--context-window N] [--cache-ttl-ms N] [--min-cacheable N] [--log] [--last-request-file FILE]
  NAME is demo (the scripted demo repertoire, demo/scenario.ts) or a bundled scenario under test/emulator/scenarios. Without --scenario every reply is "OK".`;

function intOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`--${name} must be a non-negative integer, got ${value}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string' },
      port: { type: 'string' },
      seed: { type: 'string' },
      'context-window': { type: 'string' },
      'cache-ttl-ms': { type: 'string' },
      'min-cacheable': { type: 'string' },
      log: { type: 'boolean' },
      'last-request-file': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let scenarioFile = values.scenario;
  if (scenarioFile !== undefined && !existsSync(scenarioFile) && existsSync(scenarioPath(scenarioFile))) {
    scenarioFile = scenarioPath(scenarioFile);
  }
  const scenario =
    scenarioFile === 'demo' && !existsSync(scenarioFile)
      ? demoScenario
      : scenarioFile !== undefined
        ? loadScenarioFile(scenarioFile)
        : undefined;
  const emu = await startEmulator({
    ...(scenario ? { scenario } : {}),
    port: intOption(values.port, 'port') ?? 0,
    chunkSeed: intOption(values.seed, 'seed'),
    contextWindow: intOption(values['context-window'], 'context-window'),
    cacheTtlMs: intOption(values['cache-ttl-ms'], 'cache-ttl-ms'),
    minCacheableTokens: intOption(values['min-cacheable'], 'min-cacheable'),
  });
  process.stdout.write(`${emu.url}\n`);
  if (values.log) {
    let logged = 0;
    setInterval(() => {
      for (; logged < emu.requests.length; logged++) {
        const r = emu.requests[logged]!;
        process.stderr.write(
          `${r.requestId} ${r.status} ${r.error?.message ?? ''} ${JSON.stringify(r.usage ?? {})}\n`,
        );
      }
    }, 200).unref();
  }
  const lastRequestFile = values['last-request-file'];
  if (lastRequestFile) {
    // For a parent that wants to replay exactly what a client sent (the CPU benchmark's baseline).
    let written = 0;
    setInterval(() => {
      if (emu.requests.length === written) return;
      written = emu.requests.length;
      writeFileSync(lastRequestFile, JSON.stringify(emu.requests[written - 1]!.body));
    }, 100).unref();
  }
  const stop = () => {
    emu.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${USAGE}\n`);
  process.exit(2);
});
