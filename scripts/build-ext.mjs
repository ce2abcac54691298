#!/usr/bin/env node
// Builds what the extension tests and E2E need, independent of the CLI build:
//   dist/extension.cjs (CJS, `vscode` external), dist/webview.js (+css) when the webview exists,
//   out/test-ext/index.cjs (mocha runner) and out/test-ext/suite/*.test.cjs (one bundle per suite).
// Usage: node scripts/build-ext.mjs [--no-tests] [--production]
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const withTests = !process.argv.includes('--no-tests');
const common = {
  bundle: true,
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  legalComments: 'none',
};
const nodeExternals = ['@vscode/ripgrep', '@vscode/ripgrep-*', 'mvdan-sh'];
// CJS has no import.meta; give modules that resolve files relative to themselves a real URL.
const cjsImportMeta = {
  define: { 'import.meta.url': '__keelImportMetaUrl' },
  banner: { js: "const __keelImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
};

// The Bedrock / Vertex SDKs (~2 MB with the AWS and Google auth libraries) are a file of their own,
// required on first use of such a profile: the extension's bundle (and its activation) does not carry them.
const platformSdksExternal = {
  name: 'platform-sdks-external',
  setup(build) {
    build.onResolve({ filter: /[\\/]platformSdks\.ts$|^\.\/platformSdks\.ts$/ }, () => ({
      path: './platform-sdks.cjs',
      external: true,
    }));
  },
};

const builds = [
  {
    ...common,
    entryPoints: { 'platform-sdks': 'src/agent/model/platformSdks.ts' },
    outExtension: { '.js': '.cjs' },
    outdir: 'dist',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  {
    ...common,
    ...cjsImportMeta,
    plugins: [platformSdksExternal],
    entryPoints: { extension: 'src/extension/extension.ts' },
    // zod probes `navigator` (for Cloudflare workers); in VS Code's extension host on Node 22+ touching
    // that global logs "PendingMigrationError: navigator is now a global in nodejs". The extension
    // never runs in a browser worker, so the probe is compiled to `typeof undefined`.
    define: { ...cjsImportMeta.define, navigator: 'undefined' },
    // First statement of the bundle: activate() reports how long evaluating the module took.
    banner: { js: `const __keelLoadStart = performance.now();\n${cjsImportMeta.banner.js}` },
    outExtension: { '.js': '.cjs' },
    outdir: 'dist',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode', ...nodeExternals],
  },
];
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
if (withTests) {
  rmSync('out/test-ext', { recursive: true, force: true });
  const suites = readdirSync('test/extension/suite').filter((f) => f.endsWith('.test.ts'));
  builds.push({
    ...common,
    ...cjsImportMeta,
    sourcemap: 'inline',
    entryPoints: {
      index: 'test/extension/index.ts',
      ...Object.fromEntries(
        suites.map((f) => [`suite/${f.replace(/\.ts$/, '')}`, `test/extension/suite/${f}`]),
      ),
    },
    outExtension: { '.js': '.cjs' },
    outdir: 'out/test-ext',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode', 'mocha', ...nodeExternals],
  });
}
await Promise.all(builds.map((options) => esbuild.build(options)));
// The chat panel loads codicons from the extension itself (no node_modules in the .vsix).
mkdirSync('dist/codicons', { recursive: true });
for (const f of ['codicon.css', 'codicon.ttf'])
  copyFileSync(`node_modules/@vscode/codicons/dist/${f}`, `dist/codicons/${f}`);
if (withTests) {
  // VS Code require()s extensionTestsPath as a folder (index.js); the repo is "type": "module".
  mkdirSync('out/test-ext', { recursive: true });
  writeFileSync('out/test-ext/package.json', '{"type":"commonjs"}\n');
  writeFileSync('out/test-ext/index.js', "module.exports = require('./index.cjs');\n");
}
