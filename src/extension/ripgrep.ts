import * as fs from 'node:fs';
import * as path from 'node:path';

// Prefer the ripgrep VS Code ships (already on disk, signed, right architecture); fall back to the
// one packaged with the extension (@vscode/ripgrep's platform package).

const BIN = process.platform === 'win32' ? 'rg.exe' : 'rg';

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Candidate locations under VS Code's appRoot (desktop packs it in an .asar.unpacked folder). */
export function bundledRipgrepCandidates(appRoot: string): string[] {
  const arch = process.arch;
  const platform = process.platform;
  const out: string[] = [];
  for (const modules of ['node_modules', 'node_modules.asar.unpacked']) {
    out.push(path.join(appRoot, modules, '@vscode', 'ripgrep', 'bin', BIN));
    out.push(path.join(appRoot, modules, '@vscode', `ripgrep-${platform}-${arch}`, 'bin', BIN));
    // VS Code ≥1.10x ships one package with every platform's binary.
    out.push(path.join(appRoot, modules, '@vscode', 'ripgrep-universal', 'bin', `${platform}-${arch}`, BIN));
    out.push(path.join(appRoot, modules, 'vscode-ripgrep', 'bin', BIN));
  }
  return out;
}

export function packagedRipgrepCandidates(extensionPath: string): string[] {
  const pkg = `ripgrep-${process.platform}-${process.arch}`;
  return [
    path.join(extensionPath, 'node_modules', '@vscode', pkg, 'bin', BIN),
    path.join(extensionPath, 'node_modules', '@vscode', 'ripgrep', 'bin', BIN),
  ];
}

export function findRipgrep(appRoot: string | undefined, extensionPath: string): string | undefined {
  const candidates = [
    ...(appRoot ? bundledRipgrepCandidates(appRoot) : []),
    ...packagedRipgrepCandidates(extensionPath),
  ];
  return candidates.find(isExecutable);
}
