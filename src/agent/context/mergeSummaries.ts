import type { SummaryMessage } from '../messages.ts';
import { identifierUses, MAX_IDENTIFIERS, rankIdentifiers } from './compaction.ts';

// Many compactions leave many summaries at the front; each is immutable, but together they would
// fill the window (at 40K, after ~70 compactions). When they pass a share of the window, the older
// ones are merged BY CODE into one new summary that replaces them (it is immutable in its turn):
// red lines and the user's requests stay verbatim, decisions are kept (the oldest go first when the
// room runs out, named in the archives), the latest verification and open work win, identifiers
// are re-ranked (recent and much-referenced first). The merged originals stay in the transcript and
// the log (P8); their archives are all named.

export const MERGE_SHARE = 0.25;
/** The merged summary aims at this share of the window (in characters: tokens × 4). */
export const MERGED_SHARE = 0.1;

const HEADINGS = {
  redLines: `## User red lines and "don't" instructions (verbatim)`,
  requests: '## User requests (verbatim)',
  decisions: '## Decisions',
  files: '## Modified files',
  verification: '## Verification status',
  todos: '## Open TODOs and rollback notes',
  identifiers: '## Exact identifiers',
  progress: '## Progress',
} as const;
type Section = keyof typeof HEADINGS;
const BY_HEADING = new Map<string, Section>(Object.entries(HEADINGS).map(([k, h]) => [h, k as Section]));

export type ParsedSummary = Record<Section, string>;

/** The sections of a rendered summary (ours: known headings at line start). */
export function parseSummary(text: string): ParsedSummary {
  const out: Record<Section, string[]> = {
    redLines: [],
    requests: [],
    decisions: [],
    files: [],
    verification: [],
    todos: [],
    identifiers: [],
    progress: [],
  };
  let current: Section | undefined;
  for (const line of text.split('\n')) {
    const heading = BY_HEADING.get(line.trim());
    if (heading) {
      current = heading;
      continue;
    }
    if (line.startsWith('</session-summary>')) break;
    if (current) out[current].push(line);
  }
  const join = (k: Section) => out[k].join('\n').trim();
  return Object.fromEntries(Object.keys(out).map((k) => [k, join(k as Section)])) as ParsedSummary;
}

const EMPTY = /^\((?:none[^)]*|nothing verified yet|see the archive|none given|none recorded)\)$/;

/** Bullet items ("- " starts one; other lines continue it), placeholders dropped. */
export function bulletItems(section: string): string[] {
  const items: string[] = [];
  for (const line of section.split('\n')) {
    if (line.startsWith('- ')) items.push(line.slice(2));
    else if (items.length > 0 && line.trim()) items[items.length - 1] += `\n${line}`;
    else if (line.trim() && !EMPTY.test(line.trim())) items.push(line);
  }
  return items.filter((i) => !EMPTY.test(i.trim()));
}

function unique(items: readonly string[]): string[] {
  return [...new Set(items)];
}

/** Newest items that fit `budget` characters (always at least one), in their original order. */
function newestWithin(items: readonly string[], budget: number): { kept: string[]; dropped: number } {
  const kept: string[] = [];
  let used = 0;
  for (let i = items.length - 1; i >= 0; i--) {
    const size = items[i]!.length + 3;
    if (kept.length > 0 && used + size > budget) return { kept: kept.reverse(), dropped: i + 1 };
    kept.push(items[i]!);
    used += size;
  }
  return { kept: kept.reverse(), dropped: 0 };
}

function bullets(items: readonly string[], empty: string): string {
  return items.length > 0 ? items.map((i) => `- ${i}`).join('\n') : empty;
}

function nOf(summary: SummaryMessage): string {
  return /<session-summary n="([^"]+)"/.exec(summary.text)?.[1] ?? '?';
}

/** Whether the summaries in front (with the one about to be added) pass the share of the window. */
export function needsMerge(summaryTokens: readonly number[], window: number, share = MERGE_SHARE): boolean {
  return summaryTokens.length >= 2 && summaryTokens.reduce((a, b) => a + b, 0) > window * share;
}

/**
 * One summary in place of `summaries` (oldest first). `budgetChars` bounds what may be cut (requests
 * after the goal, decisions, files, progress); red lines are never cut.
 */
export function mergeSummaries(
  summaries: readonly SummaryMessage[],
  budgetChars: number,
  id: string,
  now: number,
): SummaryMessage {
  const parsed = summaries.map((s) => parseSummary(s.text));
  const newest = parsed.at(-1)!;
  const first = /^(\d+)/.exec(nOf(summaries[0]!))?.[1] ?? '1';
  const last = /(\d+)$/.exec(nOf(summaries.at(-1)!))?.[1] ?? String(summaries.length);
  const n = `${first}-${last}`;
  const archives = unique(summaries.flatMap((s) => s.archivePath.split(', ')));

  const redLines = unique(parsed.flatMap((p) => bulletItems(p.redLines)));
  const allRequests = unique(parsed.flatMap((p) => bulletItems(p.requests)));
  const goal = allRequests.find((r) => r.startsWith('Goal: '));
  const others = allRequests.filter((r) => r !== goal);
  const requests = newestWithin(others, budgetChars * 0.25);
  const decisions = newestWithin(
    unique(parsed.flatMap((p) => bulletItems(p.decisions).filter((d) => !d.startsWith('(from the')))),
    budgetChars * 0.3,
  );
  // Edits per file add up across the merged summaries ("src/a.ts (Edit ×2, Write)").
  const files = new Map<string, Map<string, number>>();
  for (const item of parsed.flatMap((p) => bulletItems(p.files))) {
    const match = /^(.*) \(([^()]*)\)$/.exec(item);
    const file = match?.[1] ?? item;
    const ops = files.get(file) ?? new Map<string, number>();
    files.delete(file); // re-inserted last: the most recently edited files come last
    files.set(file, ops);
    for (const op of (match?.[2] ?? '').split(', ').filter(Boolean)) {
      const [name, times] = op.split(' ×');
      ops.set(name!, (ops.get(name!) ?? 0) + (times ? Number(times) || 1 : 1));
    }
  }
  const fileLines = [...files.entries()].map(([file, ops]) =>
    ops.size === 0 ? file : `${file} (${[...ops].map(([op, k]) => (k > 1 ? `${op} ×${k}` : op)).join(', ')})`,
  );
  const fileList = newestWithin(fileLines, budgetChars * 0.1);
  const mentions = parsed.flatMap((p) => [...p.identifiers.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  const identifiers = rankIdentifiers(identifierUses(mentions), MAX_IDENTIFIERS);
  const progress =
    newest.progress.length > budgetChars * 0.2
      ? `${newest.progress.slice(0, Math.floor(budgetChars * 0.2))}… [more in the archives]`
      : newest.progress;
  const omitted = (k: number, what: string) =>
    k > 0 ? `\n- (${k} earlier ${what} are in the archives: MemorySearch finds them)` : '';

  const text = [
    `<session-summary n="${n}">`,
    `This merges summaries ${n} and replaces the conversation before it; it is final and will not be rewritten. The full history is archived in ${archives.join(', ')}: use MemorySearch to recover any detail.`,
    `${HEADINGS.redLines}\n${bullets(redLines, '(none given)')}`,
    `${HEADINGS.requests}\n${bullets([...(goal ? [goal] : []), ...requests.kept], '(none in this part)')}${omitted(requests.dropped, 'requests')}`,
    `${HEADINGS.decisions}\n${bullets(decisions.kept, '(none recorded)')}${omitted(decisions.dropped, 'decisions')}`,
    `${HEADINGS.files}\n${bullets(fileList.kept, '(none)')}${omitted(fileList.dropped, 'modified files')}`,
    `${HEADINGS.verification}\n${newest.verification || '(nothing verified yet)'}`,
    `${HEADINGS.todos}\n${newest.todos || '(none recorded)'}`,
    `${HEADINGS.identifiers}\n${identifiers.length > 0 ? identifiers.map((i) => `\`${i}\``).join(', ') : '(none)'}`,
    `${HEADINGS.progress}\n${progress || '(see the archives)'}${parsed.length > 1 ? '\n(Earlier progress notes are in the archives.)' : ''}`,
    '</session-summary>',
  ].join('\n\n');
  return {
    id,
    ts: now,
    role: 'summary',
    text,
    replaces: summaries.map((s) => s.id),
    archivePath: archives.join(', '),
  };
}
