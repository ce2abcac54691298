import { estimateTokens } from '../context/tokens.ts';
import { FILE_REF } from './document.ts';

// The memory snapshot for the frozen system prompt (P1): taken once at session start, after AGENTS.md.
// A change made during the session is on disk at once but shows from the next session on.

export const MEMORY_SNAPSHOT_MAX_TOKENS = 2000;

export interface SnapshotSource {
  readonly label: string;
  readonly text: string | undefined;
}

export interface SnapshotOptions {
  /** Current hash of a workspace file cited by an entry (undefined: missing/unreadable). */
  readonly hashOf: (relPath: string) => string | undefined;
  readonly maxTokens?: number;
}

/** Entries citing `[path@hash]` whose file changed since get a visible stale mark. */
function markStale(text: string, hashOf: SnapshotOptions['hashOf']): string {
  return text
    .split('\n')
    .map((line) => {
      if (!/^\s*[-*]\s/.test(line)) return line;
      const stale = [...line.matchAll(FILE_REF)].filter((m) => hashOf(m[1]!) !== m[2]).map((m) => m[1]!);
      return stale.length ? `${line} (STALE: ${stale.join(', ')} changed since)` : line;
    })
    .join('\n');
}

/** Demote the file's own headings one level under its section; drop its `# Memory` title. */
function body(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .filter((l) => !/^#\s/.test(l))
    .map((l) => (/^#{2,5}\s/.test(l) ? `#${l}` : l))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

export function renderMemorySnapshot(
  sources: readonly SnapshotSource[],
  options: SnapshotOptions,
): string | undefined {
  const parts = sources
    .map((s) => ({ label: s.label, text: s.text ? body(markStale(s.text, options.hashOf)) : '' }))
    .filter((s) => s.text.length > 0);
  if (parts.length === 0) return undefined;
  const header =
    '# Memory (from past sessions, as of session start)\nUser-stated facts and decisions; a STALE entry cites a file that changed since: re-check it.';
  const full = [header, ...parts.map((p) => `## ${p.label}\n${p.text}`)].join('\n\n');
  if (estimateTokens(full) <= (options.maxTokens ?? MEMORY_SNAPSHOT_MAX_TOKENS)) return full;
  const headingsOnly = parts.map((p) => {
    const headings = p.text.split('\n').filter((l) => /^#{3,6}\s/.test(l));
    const entries = p.text.split('\n').filter((l) => /^\s*[-*]\s/.test(l)).length;
    return `## ${p.label} (${entries} entries)\n${headings.join('\n')}`;
  });
  return [
    '# Memory (from past sessions; headings only, too long to include)',
    ...headingsOnly,
    'Search the entries with MemorySearch (e.g. a heading or topic).',
  ].join('\n\n');
}
