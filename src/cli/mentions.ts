import * as fs from 'node:fs';
import * as path from 'node:path';

/** `@path` words naming an existing workspace file: sent as "read this" reminders, never as content (P3). */
export function mentionedFiles(prompt: string, workspace: string): string[] {
  const found = new Set<string>();
  for (const m of prompt.matchAll(/(?:^|\s)@([^\s@]+)/g)) {
    const rel = m[1]!.replace(/[.,;:!?)\]]+$/, '');
    const abs = path.resolve(workspace, rel);
    if (!abs.startsWith(workspace + path.sep)) continue;
    try {
      if (fs.statSync(abs).isFile()) found.add(path.relative(workspace, abs).split(path.sep).join('/'));
    } catch {
      // not a file: an ordinary word that starts with @
    }
  }
  return [...found];
}
