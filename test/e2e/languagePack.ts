import * as fs from 'node:fs';
import * as path from 'node:path';
import { log, REPO, run, WORK } from './codeServer.ts';

// A Simplified Chinese language pack for the E2E's code-server, made at test time from the npm
// package @codingame/monaco-vscode-language-pack-zh-hans (Microsoft's vscode-loc translations).
//
// How code-server picks a display language (lib/vscode/out/server-main.js): the locale comes from
// --locale, else argv.json's "locale", else the cookie/Accept-Language; for anything but English it
// looks the locale up in <user-data>/languagepacks.json, which VS Code writes when an extension
// contributing `localizations` is installed *by the running server* (its language-pack service is a
// post-install participant there; the `code-server --install-extension` CLI never creates that
// service, so a pack installed that way is ignored — the E2E installs it from the workbench, with
// "Extensions: Install from VSIX...", and reloads). With no entry (or the entry's `translations.vscode`
// file missing) it falls back to English — which is why `--locale zh-cn` alone does nothing, and the
// extension host then reports vscode.env.language "en". With an entry it builds nls.messages.json
// from the pack's main.i18n.json ({"contents": {"vs/…": {key: text}}}, any key it lacks stays
// English) and runs the workbench and extension host in that language.
//
// The npm package keeps VS Code's own strings as an array in its own build's order (not VS Code's
// keys), so they cannot be carried over to this code-server's VS Code; its translations for the
// built-in extensions (git, markdown, …) keep vscode-loc's keyed format and are carried over as they
// are. The pack's main.i18n.json is therefore empty: VS Code's own words stay English, the language
// switches, and VS Code's built-in extensions and Keel speak Chinese.

const PACKAGE = '@codingame/monaco-vscode-language-pack-zh-hans';
const VERSION = '25.1.2';

interface Localization {
  languageId: string;
  languageName: string;
  localizedLanguageName: string;
  translations: { id: string; path: string }[];
}

/** The npm package, unpacked once into .e2e/ (npm pack: no dependencies are installed). */
function unpackedPackage(): string {
  const dir = path.join(WORK, `language-pack-zh-hans-${VERSION}`);
  const root = path.join(dir, 'package');
  if (fs.existsSync(path.join(root, 'index.js'))) return root;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  log(`fetching ${PACKAGE}@${VERSION} with npm pack`);
  const out = run('npm', ['pack', `${PACKAGE}@${VERSION}`, '--silent'], { cwd: dir }).trim();
  const tgz = out.split('\n').pop() ?? '';
  run('tar', ['xzf', tgz], { cwd: dir });
  return root;
}

/** The manifest the package's index.js registers (VS Code's language-pack extension manifest). */
function packManifest(root: string): { version: string; contributes: { localizations: Localization[] } } {
  const source = fs.readFileSync(path.join(root, 'index.js'), 'utf8');
  const match = /^const manifest = (\{.*\});$/m.exec(source);
  if (!match?.[1]) throw new Error(`${PACKAGE}@${VERSION}: no manifest in index.js`);
  return JSON.parse(match[1]);
}

/**
 * Builds the language-pack extension as a .vsix (vsce, as for Keel) and returns its path: the
 * package's zh-cn localization with its keyed translations for VS Code's built-in extensions.
 */
export function buildZhCnLanguagePack(): string {
  const root = unpackedPackage();
  const manifest = packManifest(root);
  const localization = manifest.contributes.localizations.find((l) => l.languageId === 'zh-cn');
  if (!localization) throw new Error(`${PACKAGE}@${VERSION}: no zh-cn localization`);
  const stage = path.join(WORK, 'language-pack-zh-cn');
  fs.rmSync(stage, { recursive: true, force: true });
  fs.mkdirSync(path.join(stage, 'translations', 'extensions'), { recursive: true });
  const translations = [{ id: 'vscode', path: './translations/main.i18n.json' }];
  fs.writeFileSync(
    path.join(stage, 'translations', 'main.i18n.json'),
    `${JSON.stringify({ version: '1.0.0', contents: {} })}\n`,
  );
  for (const t of localization.translations) {
    if (t.id === 'vscode') continue;
    const from = path.join(root, t.path);
    if (!fs.existsSync(from)) continue;
    fs.copyFileSync(from, path.join(stage, t.path));
    translations.push(t);
  }
  const vsixManifest = {
    name: 'keel-e2e-language-pack-zh-cn',
    displayName: 'Chinese (Simplified) language pack for Keel E2E',
    description: `Built by Keel's E2E from ${PACKAGE}@${VERSION}`,
    publisher: 'keel-e2e',
    version: '1.0.0',
    license: 'MIT',
    engines: { vscode: '^1.90.0' },
    categories: ['Language Packs'],
    contributes: {
      localizations: [
        {
          languageId: 'zh-cn',
          languageName: localization.languageName,
          localizedLanguageName: localization.localizedLanguageName,
          translations,
        },
      ],
    },
  };
  fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(vsixManifest, null, 2)}\n`);
  fs.writeFileSync(path.join(stage, 'README.md'), `# zh-cn language pack for Keel's E2E\n`);
  // In a folder of its own: the test picks it in VS Code's file dialog, which lists a folder as a
  // virtualised list — in a busy .e2e/ (run folders of earlier runs) its row can be out of view.
  const outDir = path.join(WORK, 'language-pack-vsix');
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  const vsix = path.join(outDir, 'language-pack-zh-cn.vsix');
  run(
    path.join(REPO, 'node_modules', '.bin', 'vsce'),
    ['package', '--allow-missing-repository', '--skip-license', '--no-dependencies', '-o', vsix],
    { cwd: stage },
  );
  log(`language pack: ${translations.length} translation files from ${PACKAGE}@${VERSION}`);
  return vsix;
}
