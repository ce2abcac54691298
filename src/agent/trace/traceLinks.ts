import * as fs from 'node:fs';
import * as path from 'node:path';
import type { TraceData } from './traceModel.ts';

// File links on the trace page. The page's script splits each text into plain pieces and links:
// every `path:line` (`src/a.ts:12`, `src/a.ts:12:5`, an absolute path inside the workspace), and a
// plain path when it names a workspace file a tool input named (`existingFiles`, checked here when the
// page is built: a static page cannot look). Pieces become text nodes and <a> elements whose text is
// set with textContent: a link never turns log text into markup. Where a link leads is decided by
// whoever opens it — the VS Code webview posts {type:'open'} and the extension opens only files inside
// the workspace; a page on disk links `vscode://file/<abs>:<line>`.

/**
 * The page's link finder (plain JS, inlined into the trace script and unit-tested as shipped):
 * `traceSegments(text, files)` → [{ text } | { text, path, line? }], pieces in order, joined = text.
 */
export const TRACE_LINK_SCRIPT = String.raw`function traceSegments(text, files) {
  const out = [];
  const re = /(?<![\w\/.:@+~-])((?:\.{1,2}\/|\/)?(?:[\w.@+-]+\/)*[\w.@+-]*[\w@+-])(?::(\d{1,7})(?::\d{1,5})?)?(?![\w\/@+-]|:\d)/g;
  const fileLike = /(?:^|\/)[^\/]*[A-Za-z_][^\/]*\.[A-Za-z][A-Za-z0-9]{0,9}$/;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    const p = m[1];
    const line = m[2];
    const known = files.has(p.replace(/^\.\//, ''));
    if (!(line ? known || fileLike.test(p) : known)) continue;
    if (m.index > last) out.push({ text: text.slice(last, m.index) });
    out.push(line ? { text: m[0], path: p, line: Math.max(1, Number(line)) } : { text: m[0], path: p });
    last = m.index + m[0].length;
  }
  if (last < text.length || out.length === 0) out.push({ text: text.slice(last) });
  return out;
}`;

/** At most this many distinct candidates are looked up on disk (a long session names many). */
const MAX_CANDIDATES = 5_000;
const CANDIDATE = /(?<![\w/.:@+~-])(?:\.\/)?(?:[\w.@+-]+\/)*[\w.@+-]*[\w@+-](?![\w/@+-])/g;

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel !== '' && !rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel);
}

/**
 * Workspace-relative paths in the tool inputs that name regular files inside the workspace (symlinks
 * resolved), as the page links them. Nothing is read, only looked up.
 */
export function existingFiles(data: TraceData): string[] {
  const workspace = data.session.workspace;
  if (!workspace || !path.isAbsolute(workspace)) return [];
  let root: string;
  try {
    root = fs.realpathSync(workspace);
  } catch {
    return [];
  }
  const candidates = new Set<string>();
  for (const row of data.rows) {
    if (row.k !== 'tool') continue;
    for (const m of row.input.matchAll(CANDIDATE)) {
      const rel = m[0].replace(/^\.\//, '');
      if (rel.split('/').includes('..') || !/[./]/.test(rel)) continue;
      candidates.add(rel);
      if (candidates.size >= MAX_CANDIDATES) break;
    }
  }
  const found: string[] = [];
  for (const rel of candidates) {
    const abs = path.resolve(workspace, rel);
    if (!inside(path.resolve(workspace), abs)) continue;
    try {
      const real = fs.realpathSync(abs);
      if (inside(root, real) && fs.statSync(real).isFile()) found.push(rel);
    } catch {
      // not there (any more): not linked
    }
  }
  return found.sort();
}
