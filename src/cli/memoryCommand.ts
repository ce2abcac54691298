import * as path from 'node:path';
import { hitText } from '../agent/memory/searchIndex.ts';
import { memoryPaths, rollbackLast } from '../agent/memory/store.ts';
import { memoryIndexFor } from '../agent/tools/memorySearch.ts';
import type { MemoryArgs } from './args.ts';

// `keel memory search|rollback`: the same index MemorySearch uses, and the same history the Memory
// tool writes, from a shell.

export async function memoryCommand(
  args: MemoryArgs,
  workspace: string,
  out: (text: string) => void,
): Promise<number> {
  const stateDir = path.join(workspace, '.keel');
  if (args.action === 'rollback') {
    const paths = memoryPaths(stateDir);
    const change = rollbackLast(paths, Date.now());
    if (!change) {
      out('No memory change to roll back.\n');
      return 0;
    }
    out(
      `Rolled back: ${change.summary.replace(/^rollback of: /, '')}\n${change.file} restored to its previous version${change.after === null ? ' (removed: it did not exist before)' : ''}.\n`,
    );
    return 0;
  }
  const index = await memoryIndexFor(stateDir);
  index.update();
  index.save({ force: true });
  const byId = index.get(args.query);
  const hits = byId ? [byId.hit] : index.search(args.query, 10).hits;
  const rows = hits.map((hit) => {
    const found = index.get(hit.id);
    const text = (found && hitText(found)) ?? '';
    return { ...hit, text: byId ? text : text.replace(/\s+/g, ' ').slice(0, 300) };
  });
  if (args.json)
    out(`${JSON.stringify({ query: args.query, documents: index.documentCount, hits: rows })}\n`);
  else if (rows.length === 0)
    out(
      `No matches for ${JSON.stringify(args.query)} in ${index.documentCount} messages and memory entries.\n`,
    );
  else
    for (const r of rows)
      out(`${r.id}  ${r.date}  ${r.session ? `session ${r.session}` : r.source}  (${r.role})\n  ${r.text}\n`);
  return 0;
}
