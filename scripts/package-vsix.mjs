#!/usr/bin/env node
// `npm run package` and `npm start`: build the extension for production and package dist/keel.vsix.
// The .vsix is assembled in a staging folder, so that
//  - its README.md is the USER README (docs/vsix/README.md: what Keel is, getting started with a key or a
//    local model, privacy, settings) — the repository's README.md is for developers (npm ci, apt packages,
//    code-server) and stays where it is; CHANGELOG.md and the walkthrough's media/walkthrough/*.md ship too;
//  - its only node_modules entry is mvdan-sh, the one runtime module the bundle leaves external (ripgrep
//    comes with VS Code). vsce's dependency scan (`npm list --production`) then checks just that, and
//    works where node_modules is a symlink to another checkout's (a git worktree).
// Usage: node scripts/package-vsix.mjs [--out FILE] [--no-build]
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

const repo = path.resolve(import.meta.dirname, '..');
export const USER_README = 'docs/vsix/README.md';
/** What the extension bundle requires at run time and esbuild leaves external (see build-ext.mjs). */
const RUNTIME_MODULES = ['mvdan-sh'];

function run(cmd, args, cwd) {
  const result = spawnSync(cmd, args, { cwd, stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error(`failed (${result.status ?? result.signal}): ${cmd} ${args.join(' ')}`);
}

/** Builds (unless `build: false`) and packages the .vsix; returns its path and size in bytes. */
export function packageVsix({ out = path.join(repo, 'dist', 'keel.vsix'), build = true } = {}) {
  if (build) run(process.execPath, ['scripts/build-ext.mjs', '--production', '--no-tests'], repo);
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-vsix-'));
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8'));
    // Everything else is bundled into dist/: the shipped manifest names only what the .vsix carries.
    manifest.dependencies = Object.fromEntries(RUNTIME_MODULES.map((m) => [m, manifest.dependencies[m]]));
    fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    fs.copyFileSync(path.join(repo, USER_README), path.join(stage, 'README.md'));
    for (const file of [
      'CHANGELOG.md',
      'LICENSE',
      '.vscodeignore',
      'package.nls.json',
      'package.nls.zh-cn.json',
    ])
      fs.copyFileSync(path.join(repo, file), path.join(stage, file));
    // .vscodeignore picks what of these ships (no CLI chunks, no source maps).
    for (const dir of ['dist', 'media', 'skills', 'l10n'])
      fs.cpSync(path.join(repo, dir), path.join(stage, dir), { recursive: true, dereference: true });
    const require = createRequire(path.join(repo, 'package.json'));
    for (const m of RUNTIME_MODULES) {
      const from = path.dirname(require.resolve(`${m}/package.json`));
      fs.cpSync(from, path.join(stage, 'node_modules', m), { recursive: true, dereference: true });
    }
    const vsce = path.join(path.dirname(require.resolve('@vscode/vsce/package.json')), 'vsce');
    fs.mkdirSync(path.dirname(out), { recursive: true });
    run(process.execPath, [vsce, 'package', '--allow-missing-repository', '-o', path.resolve(out)], stage);
    return { path: path.resolve(out), bytes: fs.statSync(out).size };
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = process.argv.indexOf('--out');
  const { path: file, bytes } = packageVsix({
    ...(at > 0 ? { out: process.argv[at + 1] } : {}),
    build: !process.argv.includes('--no-build'),
  });
  process.stdout.write(`packaged ${path.relative(process.cwd(), file)} (${(bytes / 1e6).toFixed(2)} MB)\n`);
}
