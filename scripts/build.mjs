#!/usr/bin/env node
// Bundles the CLI (ESM, Node 20), the VS Code extension (CJS) and the webview (browser IIFE).
import { existsSync } from 'node:fs';
import * as esbuild from 'esbuild';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');
const common = {
  bundle: true,
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  legalComments: 'none',
};
// Packages with native binaries or GopherJS runtimes stay outside the bundle.
const nodeExternals = ['@vscode/ripgrep', '@vscode/ripgrep-*', 'mvdan-sh'];

const builds = [
  {
    ...common,
    entryPoints: { cli: 'src/cli/entry.ts' },
    outExtension: { '.js': '.mjs' },
    outdir: 'dist',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: nodeExternals,
    // CommonJS dependencies inside an ESM bundle still call require() for Node built-ins.
    banner: {
      js: "import { createRequire as __keelCreateRequire } from 'node:module'; const require = __keelCreateRequire(import.meta.url);",
    },
  },
];
if (existsSync('src/extension/extension.ts')) {
  builds.push({
    ...common,
    entryPoints: { extension: 'src/extension/extension.ts' },
    outExtension: { '.js': '.cjs' },
    outdir: 'dist',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode', ...nodeExternals],
  });
}
if (existsSync('webview-ui/src/main.ts')) {
  builds.push({
    ...common,
    entryPoints: {
      webview: 'webview-ui/src/main.ts',
      ...(existsSync('webview-ui/src/styles.css') ? { 'webview-style': 'webview-ui/src/styles.css' } : {}),
    },
    outdir: 'dist',
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    loader: { '.ttf': 'file', '.woff': 'file', '.woff2': 'file' },
  });
}

if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
