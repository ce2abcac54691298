import * as fs from 'node:fs';
import * as path from 'node:path';
import { log, REPO, run, WORK } from './codeServer.ts';

// Packages the extension as a user gets it (vsce, honouring .vscodeignore). vsce lists the runtime
// dependencies with `npm list`, which fails when node_modules is a symlink to another checkout's
// (a git worktree sharing one install: npm resolves each package's real path outside this tree and
// reports everything missing). Then the package is made from a staging copy holding exactly what
// .vscodeignore lets into the .vsix, with the one runtime module esbuild leaves external copied in.

/** Runtime modules the bundle does not contain (keep in step with .vscodeignore's node_modules lines). */
const EXTERNAL_MODULES = ['mvdan-sh'];
const STAGED = [
  'package.json',
  'README.md',
  'LICENSE',
  'CHANGELOG.md',
  '.vscodeignore',
  'dist',
  'media',
  'skills',
  'package.nls.json',
  'package.nls.zh-cn.json',
  'l10n',
];

export function packageVsix(vsix: string): void {
  const args = ['package', '--allow-missing-repository', '--skip-license', '-o', vsix];
  if (!fs.lstatSync(path.join(REPO, 'node_modules')).isSymbolicLink()) {
    run('npx', ['vsce', ...args]);
    return;
  }
  const stage = path.join(WORK, 'vsix-stage');
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(stage, { recursive: true });
  for (const name of STAGED) {
    const from = path.join(REPO, name);
    if (fs.existsSync(from)) fs.cpSync(from, path.join(stage, name), { recursive: true, dereference: true });
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(stage, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  // The bundle holds every other dependency; npm list in the stage checks only what is copied in.
  manifest.dependencies = Object.fromEntries(
    EXTERNAL_MODULES.map((name) => [name, manifest.dependencies?.[name] ?? '*']),
  );
  delete manifest.devDependencies;
  fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const name of EXTERNAL_MODULES) {
    fs.cpSync(path.join(REPO, 'node_modules', name), path.join(stage, 'node_modules', name), {
      recursive: true,
      dereference: true,
    });
  }
  log('node_modules is a symlink (a worktree): packaging from a staging copy');
  run(path.join(REPO, 'node_modules', '.bin', 'vsce'), args, { cwd: stage });
}
