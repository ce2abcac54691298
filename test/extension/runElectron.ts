// `npm run test:ext:electron`: the same mocha bundle as `npm run test:ext`, run by @vscode/test-electron
// in a desktop VS Code (Electron) instead of code-server. For machines that can download VS Code: the
// download happens here, at run time (never at npm install), so this is not part of `npm test`.
// KEEL_VSCODE_EXECUTABLE=/path/to/code uses an installed VS Code instead of downloading one;
// KEEL_VSCODE_VERSION picks the version to download (default: stable).
// The untrusted-workspace suite needs workspace trust on, which test-electron turns off; it runs
// only under `npm run test:ext`.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';

const REPO = path.resolve(import.meta.dirname, '..', '..');

interface Results {
  passes: string[];
  failures: { title: string; error: string }[];
}

type TestElectron = typeof import('@vscode/test-electron');

async function loadTestElectron(): Promise<TestElectron | undefined> {
  try {
    return await import('@vscode/test-electron');
  } catch {
    return undefined;
  }
}

function looksLikeNetworkError(error: unknown): boolean {
  const text = `${(error as { code?: string })?.code ?? ''} ${String(error)}`;
  return /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|getaddrinfo|socket hang up|Failed to get|download|status code|certificate/i.test(
    text,
  );
}

async function main(): Promise<number> {
  const testElectron = await loadTestElectron();
  if (!testElectron) {
    process.stderr.write(
      '@vscode/test-electron is not installed: run `npm install` (it is a devDependency), or use `npm run test:ext` (code-server, no download).\n',
    );
    return 1;
  }
  const build = spawnSync(process.execPath, ['scripts/build-ext.mjs'], { cwd: REPO, stdio: 'inherit' });
  if (build.status !== 0) return 1;

  const workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-electron-ws-')));
  fs.writeFileSync(path.join(workspace, 'README.md'), '# extension test workspace\n');
  const resultFile = path.join(REPO, '.e2e', 'electron-results.json');
  fs.mkdirSync(path.dirname(resultFile), { recursive: true });
  fs.rmSync(resultFile, { force: true });
  const executable = process.env.KEEL_VSCODE_EXECUTABLE;
  try {
    await testElectron.runTests({
      extensionDevelopmentPath: REPO,
      extensionTestsPath: path.join(REPO, 'out', 'test-ext', 'index.js'),
      launchArgs: [workspace, '--disable-extensions', '--skip-welcome', '--skip-release-notes'],
      extensionTestsEnv: { KEEL_EXT_TEST_RESULTS: resultFile },
      ...(executable
        ? { vscodeExecutablePath: executable }
        : { version: process.env.KEEL_VSCODE_VERSION ?? 'stable' }),
    });
  } catch (error) {
    if (!executable && !fs.existsSync(resultFile) && looksLikeNetworkError(error)) {
      process.stderr.write(
        `\nCould not download VS Code for @vscode/test-electron (${error instanceof Error ? error.message : String(error)}).\n` +
          'This machine cannot reach update.code.visualstudio.com. Either set KEEL_VSCODE_EXECUTABLE to an\n' +
          'installed VS Code binary, or run the same suite in code-server with `npm run test:ext`.\n',
      );
      return 1;
    }
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  } finally {
    fs.rmSync(workspace, { recursive: true, force: true });
  }
  if (!fs.existsSync(resultFile)) {
    process.stdout.write('no results were written by the extension host\n0 passed, 1 failed\n');
    return 1;
  }
  const results = JSON.parse(fs.readFileSync(resultFile, 'utf8')) as Results;
  for (const f of results.failures) process.stdout.write(`\nFAILED: ${f.title}\n${f.error}\n`);
  process.stdout.write(
    `\nextension (electron): ${results.passes.length} passed, ${results.failures.length} failed\n`,
  );
  return results.failures.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
