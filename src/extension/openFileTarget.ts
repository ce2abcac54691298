import * as fs from 'node:fs';
import * as path from 'node:path';
import { workspaceRootNames } from '../agent/safety/paths/rootNames.ts';

// Where a file link from the chat panel may lead. The webview is an untrusted-ish context and the
// path comes from model output: it opens a file only when the file, symlinks resolved, is inside a
// workspace folder. Read-only (it only opens an editor), so links inside the workspace are followed.
// No vscode import: unit-tested in plain Node.

export type OpenTarget =
  | { readonly ok: true; readonly path: string }
  | { readonly ok: false; readonly reason: 'invalid' | 'outside' | 'missing' };

function realOrUndefined(p: string): string | undefined {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return undefined;
  }
}

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel));
}

/** The file `requested` names (relative to a workspace folder, or absolute inside one). */
export function resolveWorkspaceFile(roots: readonly string[], requested: string): OpenTarget {
  const value = requested.trim();
  if (!value || value.includes('\0') || value.length > 4096) return { ok: false, reason: 'invalid' };
  const realRoots = roots.map(realOrUndefined).filter((r): r is string => r !== undefined);
  if (realRoots.length === 0) return { ok: false, reason: 'outside' };
  // A later folder's name first (as the agent shows its files: `<name>/<rel>`), then each folder.
  const names = workspaceRootNames(roots);
  const head = value.split('/')[0];
  const named = names.findIndex((n) => n !== undefined && n === head);
  const candidates = path.isAbsolute(value)
    ? [value]
    : [
        ...(named > 0 ? [path.resolve(roots[named]!, value.slice(head!.length + 1))] : []),
        ...roots.map((root) => path.resolve(root, value)),
      ];
  let outside = false;
  for (const candidate of candidates) {
    // Lexically first: `../x` or an absolute path elsewhere never touches the disk.
    if (
      !roots.some((root) => inside(path.resolve(root), candidate)) &&
      !realRoots.some((r) => inside(r, candidate))
    ) {
      outside = true;
      continue;
    }
    const real = realOrUndefined(candidate);
    if (real === undefined) continue;
    if (!realRoots.some((root) => inside(root, real))) {
      outside = true;
      continue;
    }
    try {
      if (!fs.statSync(real).isFile()) continue;
    } catch {
      continue;
    }
    return { ok: true, path: candidate };
  }
  return { ok: false, reason: outside ? 'outside' : 'missing' };
}
