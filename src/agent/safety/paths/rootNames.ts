import * as path from 'node:path';

/**
 * Names that select a root in a relative path (VS Code's `${workspaceFolder:name}` convention): each
 * root after the first by its folder name. The first root has none (a relative path already means it);
 * a name that is empty, `.`/`..`, or shared with an earlier root selects nothing (the later root is
 * reached by absolute path only), so a name always means one root.
 */
export function workspaceRootNames(roots: readonly string[]): (string | undefined)[] {
  const seen = new Set<string>();
  return roots.map((r, i) => {
    const name = path.basename(r);
    const usable = name.length > 0 && name !== '.' && name !== '..' && !seen.has(name);
    seen.add(name);
    return i > 0 && usable ? name : undefined;
  });
}
