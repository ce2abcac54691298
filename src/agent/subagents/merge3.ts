import { diffArrays } from 'diff';

// A line-based three-way merge (what `git merge-file` does), in process: no program of the
// repository's (a merge driver) can run. Changes on both sides that overlap or touch are a conflict,
// never resolved by guessing; the same change made on both sides is taken once.

interface Change {
  readonly start: number;
  readonly end: number;
  readonly lines: readonly string[];
  readonly side: 'ours' | 'theirs';
}

/** Lines with their terminators, so joined slices are exact substrings. */
export function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function changesOf(base: readonly string[], other: readonly string[], side: Change['side']): Change[] {
  const out: Change[] = [];
  let at = 0;
  let open: { start: number; end: number; lines: string[] } | undefined;
  const close = () => {
    if (open) out.push({ ...open, side });
    open = undefined;
  };
  for (const part of diffArrays([...base], [...other])) {
    if (!part.added && !part.removed) {
      close();
      at += part.value.length;
      continue;
    }
    open ??= { start: at, end: at, lines: [] };
    if (part.removed) {
      at += part.value.length;
      open.end = at;
    } else open.lines.push(...part.value);
  }
  close();
  return out;
}

function applyWithin(
  base: readonly string[],
  from: number,
  to: number,
  changes: readonly Change[],
): string[] {
  const out: string[] = [];
  let at = from;
  for (const c of changes) {
    out.push(...base.slice(at, c.start), ...c.lines);
    at = c.end;
  }
  out.push(...base.slice(at, to));
  return out;
}

export interface MergeResult {
  readonly text: string;
  /** Regions where both sides changed the same lines differently (shown with markers in `text`). */
  readonly conflicts: number;
}

/** Merges `theirs`' changes to `base` into `ours`. */
export function merge3(
  base: string,
  ours: string,
  theirs: string,
  labels: { ours: string; theirs: string },
): MergeResult {
  const b = splitLines(base);
  const all = [...changesOf(b, splitLines(ours), 'ours'), ...changesOf(b, splitLines(theirs), 'theirs')].sort(
    (x, y) => x.start - y.start || x.end - y.end,
  );
  const out: string[] = [];
  let at = 0;
  let conflicts = 0;
  let i = 0;
  while (i < all.length) {
    const cluster = [all[i]!];
    let end = all[i]!.end;
    i++;
    while (i < all.length && all[i]!.start <= end) {
      cluster.push(all[i]!);
      end = Math.max(end, all[i]!.end);
      i++;
    }
    const start = cluster[0]!.start;
    out.push(...b.slice(at, start));
    at = end;
    const mine = cluster.filter((c) => c.side === 'ours');
    const other = cluster.filter((c) => c.side === 'theirs');
    const oursText = applyWithin(b, start, end, mine);
    const theirsText = applyWithin(b, start, end, other);
    if (mine.length === 0) out.push(...theirsText);
    else if (other.length === 0 || oursText.join('') === theirsText.join('')) out.push(...oursText);
    else {
      conflicts++;
      const nl = (lines: string[]) => {
        const text = lines.join('');
        return text === '' || text.endsWith('\n') ? text : `${text}\n`;
      };
      out.push(
        `<<<<<<< ${labels.ours}\n`,
        nl(oursText),
        '=======\n',
        nl(theirsText),
        `>>>>>>> ${labels.theirs}\n`,
      );
    }
  }
  out.push(...b.slice(at));
  return { text: out.join(''), conflicts };
}
