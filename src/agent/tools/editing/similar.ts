// Cheap "did you mean" for NO_MATCH: which regions of the file look most like old_string?
// Line-based token overlap: linear in file size times a capped number of needle lines, so a
// 10k-line file stays in the low milliseconds.

export interface SimilarRegion {
  /** 1-based, inclusive. */
  readonly startLine: number;
  readonly endLine: number;
  /** 0..1 */
  readonly score: number;
}

const TOKEN = /[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;
const MAX_NEEDLE_LINES = 40;

function tokens(line: string): Set<string> {
  return new Set(line.match(TOKEN) ?? []);
}

function dice(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  if (a.size === 0 || b.size === 0) return 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let shared = 0;
  for (const t of small) if (large.has(t)) shared++;
  return (2 * shared) / (a.size + b.size);
}

export function splitLines(text: string): string[] {
  return text.split(/\r?\n/);
}

export function findSimilarRegions(fileText: string, needle: string, limit = 3): SimilarRegion[] {
  const fileLines = splitLines(fileText);
  const needleLines = splitLines(needle)
    .map((l) => l.trim())
    .filter((l, _i, all) => l.length > 0 || all.length === 1);
  if (needleLines.length === 0) return [];
  const probe = needleLines.slice(0, MAX_NEEDLE_LINES);
  const probeTokens = probe.map(tokens);
  const probeSet = new Set(probe);
  const window = Math.min(Math.max(1, splitLines(needle).length), fileLines.length);

  // Per file line: how well does it match the needle line at the same offset in the window? Using the
  // best match against ANY needle line is order-blind but robust to inserted/removed lines.
  const lineScore = new Float64Array(fileLines.length);
  for (let i = 0; i < fileLines.length; i++) {
    const line = fileLines[i]!.trim();
    if (line.length === 0) continue;
    if (probeSet.has(line)) {
      lineScore[i] = 1;
      continue;
    }
    const lt = tokens(line);
    let best = 0;
    for (const pt of probeTokens) {
      const d = dice(lt, pt);
      if (d > best) best = d;
      if (best === 1) break;
    }
    lineScore[i] = best;
  }

  const scored: { start: number; score: number }[] = [];
  let sum = 0;
  for (let i = 0; i < fileLines.length; i++) {
    sum += lineScore[i]!;
    if (i >= window) sum -= lineScore[i - window]!;
    if (i >= window - 1) scored.push({ start: i - window + 1, score: sum / window });
  }
  scored.sort((a, b) => b.score - a.score || a.start - b.start);

  const picked: SimilarRegion[] = [];
  for (const candidate of scored) {
    if (picked.length >= limit || candidate.score < 0.3) break;
    const startLine = candidate.start + 1;
    const endLine = candidate.start + window;
    if (picked.some((p) => startLine <= p.endLine && endLine >= p.startLine)) continue;
    picked.push({ startLine, endLine, score: candidate.score });
  }
  return picked;
}

const MAX_SHOWN_LINES = 12;
const MAX_LINE_CHARS = 200;

/** Numbered excerpt lines, as Read shows them, so the model can copy the exact text. */
export function excerpt(fileLines: readonly string[], startLine: number, endLine: number): string {
  const last = Math.min(endLine, startLine + MAX_SHOWN_LINES - 1, fileLines.length);
  // Same layout as Read's output, so the model recognises (and knows to strip) the prefix.
  const width = Math.max(6, String(last).length);
  const out: string[] = [];
  for (let n = startLine; n <= last; n++) {
    const raw = fileLines[n - 1] ?? '';
    const line = raw.length > MAX_LINE_CHARS ? `${raw.slice(0, MAX_LINE_CHARS)}…` : raw;
    out.push(`${String(n).padStart(width)}\t${line}`);
  }
  if (endLine > last) out.push(`${' '.repeat(width)}\t… (${endLine - last} more lines)`);
  return out.join('\n');
}
