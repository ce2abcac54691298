// The transcript's geometry, kept apart from the DOM so it is tested in Node: each item's height
// (measured once it was rendered, estimated from its kind until then), their running offsets, and
// which items a viewport needs. Offsets are recomputed only from the first item that changed, so
// a delta on the newest message costs O(1) here whatever the transcript's length.

export interface Geometry {
  /** Make `items` the list; offsets stay valid up to `firstChanged` (the first item that differs). */
  setItems(items: readonly Sized[], firstChanged: number): void;
  /** Record a rendered item's measured height (gap included); returns true when it changed. */
  measure(index: number, height: number): boolean;
  /** Top of item `index` (index = count gives the total height). */
  offset(index: number): number;
  readonly count: number;
  /** Index of the item at `y` (clamped to the list). */
  indexAt(y: number): number;
  /** Items to render for a viewport [top, top + height), with `overscan` px around it. */
  range(top: number, height: number, overscan: number): { start: number; end: number };
}

/** Until an item of a kind was measured: a typical height (px) by kind. */
const DEFAULT_HEIGHT: Record<string, number> = {
  user: 70,
  assistant: 220,
  tool: 40,
  notice: 30,
  error: 70,
  memory: 110,
};

export interface Sized {
  readonly id: string;
  readonly kind: string;
}

export function createGeometry(): Geometry {
  let items: readonly Sized[] = [];
  const heights = new Map<string, number>();
  // Running averages of measured heights per kind: better estimates for what was not rendered yet.
  const perKind = new Map<string, { sum: number; n: number }>();
  let offsets = new Float64Array(1);
  let validUpTo = 0; // offsets[0..validUpTo] are right

  const estimate = (kind: string) => {
    const k = perKind.get(kind);
    return k && k.n > 0 ? k.sum / k.n : (DEFAULT_HEIGHT[kind] ?? 60);
  };
  const heightAt = (i: number) => heights.get(items[i]!.id) ?? estimate(items[i]!.kind);

  function ensure(upTo: number): void {
    if (upTo <= validUpTo) return;
    for (let i = validUpTo; i < upTo; i++) offsets[i + 1] = offsets[i]! + heightAt(i);
    validUpTo = upTo;
  }

  const geometry: Geometry = {
    setItems(next, firstChanged) {
      if (next.length + 1 > offsets.length) {
        const grown = new Float64Array(Math.max(next.length + 1, offsets.length * 2));
        grown.set(offsets.subarray(0, validUpTo + 1));
        offsets = grown;
      }
      // A replaced transcript (another session): forget heights of items that are gone.
      if (firstChanged === 0 && heights.size > next.length * 2) {
        const keep = new Set(next.map((item) => item.id));
        for (const id of heights.keys()) if (!keep.has(id)) heights.delete(id);
      }
      items = next;
      validUpTo = Math.min(validUpTo, firstChanged, next.length);
    },
    measure(index, height) {
      const id = items[index]?.id;
      if (id === undefined || heights.get(id) === height) return false;
      if (heights.has(id)) validUpTo = Math.min(validUpTo, index);
      else {
        // A first measurement refines its kind's estimate, which every unmeasured item uses. Only a
        // newly rendered item does this (not a streaming one growing), so deltas stay O(1).
        const k = perKind.get(items[index]!.kind) ?? { sum: 0, n: 0 };
        k.sum += height;
        k.n++;
        perKind.set(items[index]!.kind, k);
        validUpTo = 0;
      }
      heights.set(id, height);
      return true;
    },
    offset(index) {
      const i = Math.max(0, Math.min(index, items.length));
      ensure(i);
      return offsets[i]!;
    },
    get count() {
      return items.length;
    },
    indexAt(y) {
      const n = items.length;
      if (n === 0) return 0;
      ensure(n);
      let lo = 0;
      let hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (offsets[mid]! <= y) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    },
    range(top, height, overscan) {
      const n = items.length;
      if (n === 0) return { start: 0, end: 0 };
      const start = geometry.indexAt(Math.max(0, top - overscan));
      const last = geometry.indexAt(top + height + overscan);
      return { start, end: Math.min(n, last + 1) };
    },
  };
  return geometry;
}
