import * as fs from 'node:fs';
import type { PathGuard } from '../safety/pathGuard.ts';
import { fileHash } from './document.ts';
import { renderMemorySnapshot } from './snapshot.ts';
import { type MemoryPaths, readMemoryFile } from './store.ts';

/** The rendered snapshot of both memory files for a new session's system prompt (undefined: none). */
export function takeMemorySnapshot(paths: MemoryPaths, guard: PathGuard): string | undefined {
  try {
    return renderMemorySnapshot(
      [
        { label: 'User (~/.keel/MEMORY.md)', text: paths.user ? readMemoryFile(paths.user) : undefined },
        { label: 'Workspace (.keel/memory/MEMORY.md)', text: readMemoryFile(paths.workspace) },
      ],
      {
        hashOf: (rel) => {
          const r = guard.resolve(rel);
          if (!r.ok) return undefined;
          try {
            return fileHash(fs.readFileSync(r.path));
          } catch {
            return undefined;
          }
        },
      },
    );
  } catch {
    return undefined; // an unreadable memory file never blocks a session
  }
}
