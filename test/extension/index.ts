// extensionTestsPath entry: VS Code calls run() inside the real extension host (code-server's, or
// @vscode/test-electron's). Mocha runs every bundled suite; results also go to a JSON file so the
// runner outside the browser can print counts even if the console is lost.
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';

interface Results {
  passes: string[];
  failures: { title: string; error: string }[];
  pending: string[];
  durationMs: number;
}

export function run(): Promise<void> {
  const resultFile = process.env.KEEL_EXT_TEST_RESULTS;
  const mocha = new Mocha({ ui: 'bdd', timeout: 60_000, color: false, reporter: 'spec' });
  const grep = process.env.KEEL_EXT_TEST_GREP;
  if (grep) mocha.grep(grep);
  const dir = path.join(__dirname, 'suite');
  // The untrusted suite needs a window on an untrusted folder (run.ts starts a second one); the
  // others need a trusted one.
  const untrusted = process.env.KEEL_EXT_TEST_UNTRUSTED === '1';
  // The multi-root suite needs a two-folder window (run.ts's third pass), the others one folder.
  const multiRoot = process.env.KEEL_EXT_TEST_MULTIROOT === '1';
  for (const f of fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.test.cjs'))
    .filter((n) => (n === 'untrusted.test.cjs') === untrusted)
    .filter((n) => (n === 'multiRoot.test.cjs') === multiRoot)
    .sort())
    mocha.addFile(path.join(dir, f));
  const results: Results = { passes: [], failures: [], pending: [], durationMs: 0 };
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      results.durationMs = Date.now() - started;
      if (resultFile) {
        fs.mkdirSync(path.dirname(resultFile), { recursive: true });
        fs.writeFileSync(resultFile, JSON.stringify(results, null, 2));
      }
      if (failures > 0) reject(new Error(`${failures} extension test(s) failed.`));
      else resolve();
    });
    runner.on('pass', (t) => results.passes.push(t.fullTitle()));
    runner.on('pending', (t) => results.pending.push(t.fullTitle()));
    runner.on('fail', (t, err: Error) =>
      results.failures.push({ title: t.fullTitle(), error: String(err?.stack ?? err) }),
    );
  });
}
