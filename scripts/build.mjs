#!/usr/bin/env node
// Bundles the CLI (ESM, Node 20); then scripts/build-ext.mjs bundles the extension (CJS) and the
// webview (browser IIFE), so `npm run build` builds everything a user runs.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
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
// The OpenTelemetry SDK and exporters are loaded from node_modules only when an endpoint is set
// (`@opentelemetry/api`, which the Anthropic SDK imports, stays in the bundle: inert without them).
const otelExternals = [
  '@opentelemetry/sdk-trace',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/resources',
  '@opentelemetry/core',
];

// `import { z } from 'zod'` binds zod's `z` namespace object, which keeps all of zod (755 KB) in the
// bundle and on `keel`'s start-up path; a module-namespace import lets esbuild drop what Keel never
// uses (210 KB left). Rewritten here, for this ESM bundle only: in the CommonJS bundles (extension,
// its tests) esbuild wraps zod for lazy initialisation once a dynamic import() shares it, and then
// misses the init call for namespace imports (`Class2 is not a constructor` at load).
const zodNamespaceImports = {
  name: 'zod-namespace-imports',
  setup(build) {
    build.onLoad({ filter: /[\\/](src|test[\\/]emulator)[\\/].*\.ts$/ }, async (args) => ({
      contents: (await readFile(args.path, 'utf8')).replace(
        /^import \{ z \} from 'zod';$/m,
        "import * as z from 'zod';",
      ),
      loader: 'ts',
    }));
  },
};

const builds = [
  {
    ...common,
    entryPoints: { cli: 'src/cli/entry.ts' },
    outExtension: { '.js': '.mjs' },
    outdir: 'dist',
    // Cold start: what a command imports lazily (`await import()`: the SDK, the shell parser, MCP,
    // sessions…) lands in its own chunk under dist/cli-chunks/, so `keel tool LS` never parses it.
    splitting: true,
    chunkNames: 'cli-chunks/[name]-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: [...nodeExternals, ...otelExternals],
    plugins: [zodNamespaceImports],
    // CommonJS dependencies inside an ESM bundle still call require() for Node built-ins.
    banner: {
      js: "import { createRequire as __keelCreateRequire } from 'node:module'; const require = __keelCreateRequire(import.meta.url);",
    },
  },
];
// Chunk names carry content hashes: drop the previous build's before writing the new ones.
rmSync('dist/cli-chunks', { recursive: true, force: true });
if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
  const ext = spawnSync(
    process.execPath,
    ['scripts/build-ext.mjs', '--no-tests', ...(production ? ['--production'] : [])],
    {
      stdio: 'inherit',
    },
  );
  if (ext.status !== 0) process.exit(ext.status ?? 1);
}
