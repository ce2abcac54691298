// `npm run test:ext`: the mocha suites in test/extension/suite run INSIDE the real extension host of
// code-server (VS Code 1.139), with Keel loaded as the development extension. The workbench is opened
// in headless Chromium with VS Code's own test payload (extensionDevelopmentPath/extensionTestsPath);
// VS Code reports the exit code through window.codeAutomationExit.
// Self-contained: installs code-server if missing, builds, starts and stops everything by PID.
// On machines that can download VS Code, the same bundle runs under @vscode/test-electron:
//   runTests({ extensionDevelopmentPath: repo, extensionTestsPath: 'out/test-ext' }).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { format } from 'node:util';
import {
  ensureCodeServer,
  launchBrowser,
  log,
  makeWorkspace,
  REPO,
  run,
  startCodeServer,
  WORK,
} from '../e2e/codeServer.ts';

interface Results {
  passes: string[];
  failures: { title: string; error: string }[];
  pending: string[];
  durationMs: number;
}

const TIMEOUT_MS = Number(process.env.KEEL_EXT_TEST_TIMEOUT_MS ?? 300_000);

interface Pass {
  readonly name: string;
  /** Workspace trust on (the folder opens untrusted) and only the untrusted suite runs. */
  readonly untrusted: boolean;
  /** A two-folder (multi-root) workspace, and only the multi-root suite runs. */
  readonly multiRoot?: boolean;
}

async function runPass(pass: Pass): Promise<{ results: Results | undefined; exitCode: number | undefined }> {
  const workspace = makeWorkspace(`${pass.name}-ws`, { 'README.md': '# extension test workspace\n' });
  // Multi-root: a `.code-workspace` naming a second folder (adding one at run time reloads the window).
  const second = pass.multiRoot
    ? makeWorkspace(`${pass.name}-second`, { 'b.txt': 'second folder b\n' })
    : undefined;
  const workspaceFile = second ? path.join(WORK, `${pass.name}.code-workspace`) : undefined;
  if (workspaceFile)
    fs.writeFileSync(workspaceFile, JSON.stringify({ folders: [{ path: workspace }, { path: second }] }));
  const resultFile = path.join(WORK, `${pass.name}-results.json`);
  fs.rmSync(resultFile, { force: true });
  if (!pass.untrusted) fs.rmSync(path.join(WORK, 'first-prompt.json'), { force: true });
  // Installed beside Keel as a user would have it: a third party's language-model provider
  // (vscode.lm), forwarding to the emulator. Test-only, never packaged.
  const extensionsDir = path.join(WORK, `${pass.name}-extensions`);
  fs.rmSync(extensionsDir, { recursive: true, force: true });
  fs.cpSync(
    path.join(REPO, 'test', 'extension', 'fixtures', 'lm-provider'),
    path.join(extensionsDir, 'keel-test.lm-provider-0.0.1'),
    { recursive: true },
  );
  const server = await startCodeServer({
    name: pass.name,
    workspace,
    extensionsDir,
    args: ['--vscode-option', 'enable-smoke-test-driver'],
    workspaceTrust: pass.untrusted,
    env: {
      KEEL_EXT_TEST_RESULTS: resultFile,
      ...(pass.untrusted ? { KEEL_EXT_TEST_UNTRUSTED: '1' } : {}),
      ...(pass.multiRoot ? { KEEL_EXT_TEST_MULTIROOT: '1' } : {}),
      ...(process.env.KEEL_EXT_TEST_GREP ? { KEEL_EXT_TEST_GREP: process.env.KEEL_EXT_TEST_GREP } : {}),
    },
  });
  let exitCode: number | undefined;
  try {
    const browser = await launchBrowser(server.runDir);
    try {
      const page = browser.pages()[0] ?? (await browser.newPage());
      const authority = new URL(server.base).host;
      const remote = (p: string) => `vscode-remote://${authority}${p}`;
      const payload = JSON.stringify([
        ['extensionDevelopmentPath', remote(REPO)],
        // A file, not the folder: the repo is "type": "module", so VS Code import()s this path.
        ['extensionTestsPath', remote(path.join(REPO, 'out', 'test-ext', 'index.cjs'))],
        ['skipWelcome', 'true'],
      ]);
      const done = new Promise<number>((resolve) => {
        void page.exposeFunction('codeAutomationLog', (type: string, args: unknown[]) => {
          const line = format(...(args ?? []));
          // The workbench's own noise (offline gallery lookups and their stacks) only when asked for.
          if (type === 'error' && !process.env.VERBOSE) return;
          process.stdout.write(`  ${line}\n`);
        });
        void page.exposeFunction('codeAutomationExit', (code: number) => resolve(code));
      });
      const opened = workspaceFile
        ? `workspace=${encodeURIComponent(workspaceFile)}`
        : `folder=${encodeURIComponent(workspace)}`;
      const url = `${server.base}/?${opened}&payload=${encodeURIComponent(payload)}`;
      log(`${pass.name}: opening ${url}`);
      exitCode = await Promise.race([
        page.goto(url).then(() => done),
        new Promise<number>((_, reject) =>
          setTimeout(
            () => reject(new Error(`no result from the extension host after ${TIMEOUT_MS} ms`)),
            TIMEOUT_MS,
          ),
        ),
      ]);
      log(`${pass.name}: extension host finished with exit code ${exitCode}`);
    } finally {
      await browser.close();
    }
  } finally {
    server.stop();
  }
  const results = fs.existsSync(resultFile)
    ? (JSON.parse(fs.readFileSync(resultFile, 'utf8')) as Results)
    : undefined;
  return { results, exitCode };
}

async function main(): Promise<number> {
  ensureCodeServer();
  log('building extension and test bundles');
  run(process.execPath, ['scripts/build-ext.mjs']);
  // Pass 2 is a second window on a folder VS Code does not trust (workspace trust left on): the
  // real restricted mode, not a stub. Skipped when a grep selects tests of the main pass only.
  const passes: Pass[] = [{ name: 'ext', untrusted: false }];
  const grep = process.env.KEEL_EXT_TEST_GREP;
  if (process.env.KEEL_EXT_TEST_UNTRUSTED !== '0' && (!grep || /untrust/i.test(grep)))
    passes.push({ name: 'ext-untrusted', untrusted: true });
  // Pass 3: a window on a two-folder workspace, for the multi-root suite only.
  if (process.env.KEEL_EXT_TEST_MULTIROOT !== '0' && (!grep || /multi-root/i.test(grep)))
    passes.push({ name: 'ext-multi', untrusted: false, multiRoot: true });
  let passed = 0;
  let failed = 0;
  let pending = 0;
  for (const pass of passes) {
    const started = Date.now();
    const { results, exitCode } = await runPass(pass);
    if (!results) {
      process.stdout.write(`${pass.name}: no results were written by the extension host\n`);
      failed++;
      continue;
    }
    for (const f of results.failures)
      process.stdout.write(`\nFAILED (${pass.name}): ${f.title}\n${f.error}\n`);
    const passFailed = results.failures.length + (exitCode !== 0 && results.failures.length === 0 ? 1 : 0);
    passed += results.passes.length;
    failed += passFailed;
    pending += results.pending.length;
    // Figures the suites measured (never asserted on): printed here, kept in .e2e/ for `npm run bench`.
    const figure = path.join(WORK, 'first-prompt.json');
    if (!pass.untrusted && fs.existsSync(figure))
      process.stdout.write(`first prompt after activation (ms): ${fs.readFileSync(figure, 'utf8')}\n`);
    process.stdout.write(
      `${pass.name}: ${results.passes.length} passed, ${passFailed} failed in ${(results.durationMs / 1000).toFixed(1)} s of tests, ${((Date.now() - started) / 1000).toFixed(1)} s in all\n`,
    );
  }
  process.stdout.write(`\nextension: ${passed} passed, ${failed} failed (${pending} pending)\n`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.stdout.write('0 passed, 1 failed\n');
    process.exit(1);
  },
);
