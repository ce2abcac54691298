import { h } from '../dom.ts';
import { t } from '../l10n.ts';
import type { Item } from '../model.ts';
import { createGeometry } from '../virtual.ts';
import { type RenderContext, renderItem } from './items.ts';

// Virtualised, keyed transcript. Only the items near the viewport are in the DOM; spacers above and
// below stand for the rest, sized from measured heights (estimates until an item was first shown),
// so the scrollbar spans the whole conversation and a 5,000-event session costs a screenful of DOM.
// An item is re-rendered only when its object identity (or its review state) changed, so a stream
// of deltas touches one element. Elements scrolled out are kept a while (no Markdown re-parse when
// scrolling back, expanded cards stay expanded).

/** Pixels rendered above and below the viewport. */
export const OVERSCAN_PX = 1000;
/**
 * At least this many items are in the DOM (all of them in an ordinary session), so the browser's
 * find and a reader's quick look back work as before; virtualising starts with long transcripts.
 */
export const MIN_RENDERED = 50;
/** Rendered elements kept off the DOM after they scrolled out. */
const KEEP_DETACHED = 300;

interface Entry {
  item: Item;
  key: string;
  el: HTMLElement;
}

export interface Transcript {
  readonly element: HTMLElement;
  render(items: readonly Item[], ctx: RenderContext): void;
  /** The user sent a message: follow the newest output again, even if they had scrolled up. */
  followLatest(): void;
}

function openDetailsOf(el: HTMLElement): boolean[] {
  return Array.from(el.querySelectorAll('details')).map((d) => d.open);
}

function restoreDetails(el: HTMLElement, open: boolean[]): void {
  el.querySelectorAll('details').forEach((d, i) => {
    if (open[i]) d.open = true;
  });
}

export function createTranscript(): Transcript {
  const element = h('div', {
    class: 'transcript',
    role: 'log',
    'aria-label': t('Conversation'),
    'aria-live': 'polite',
    tabindex: '0',
  });
  const above = h('div', { class: 'spacer', 'aria-hidden': 'true' });
  const below = h('div', { class: 'spacer', 'aria-hidden': 'true' });
  const list = h('div', { class: 'items' });
  const empty = h(
    'div',
    { class: 'empty-state' },
    h('h2', {}, t('Ask Keel')),
    h(
      'p',
      {},
      t(
        'Describe a change, ask about the code, or type @ to mention a file. Edits arrive as diffs you can accept or reject.',
      ),
    ),
  );
  element.append(empty, above, list, below);
  const geometry = createGeometry();
  const rendered = new Map<string, Entry>();
  const detached = new Map<string, Entry>();
  let items: readonly Item[] = [];
  let ctx: RenderContext | undefined;
  let start = 0;
  let end = 0;

  // Follow the newest output while the user is at the bottom; stop following once they scroll up.
  // Only an upward scroll turns following off: the scroll event of our own jump to the bottom
  // arrives a frame later, when more content may already have made it look "not at the bottom".
  let stick = true;
  let lastTop = 0;
  const setScrollTop = (top: number) => {
    element.scrollTop = top;
    lastTop = element.scrollTop;
  };
  element.addEventListener('scroll', () => {
    const top = element.scrollTop;
    if (top + element.clientHeight >= element.scrollHeight - 48) stick = true;
    else if (top < lastTop) stick = false;
    lastTop = top;
    schedule();
  });
  // Heights change after render (custom elements upgrade, fonts, a card expanded) and the viewport
  // changes (a footer that grows, a view that becomes visible): measure again next frame.
  const resized = new ResizeObserver(() => schedule());
  resized.observe(element);
  let frame = 0;
  function schedule(): void {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      layout();
    });
  }

  const reviewKey = (item: Item, c: RenderContext) =>
    item.kind === 'tool' && item.diff && item.path
      ? `${c.pendingHunks(item.path)}|${JSON.stringify(c.settled?.(item.path) ?? null)}`
      : '';

  function entryFor(item: Item, c: RenderContext): Entry {
    const key = reviewKey(item, c);
    let entry = rendered.get(item.id) ?? detached.get(item.id);
    detached.delete(item.id);
    if (!entry || entry.item !== item || entry.key !== key) {
      const el = renderItem(item, c);
      if (entry) restoreDetails(el, openDetailsOf(entry.el));
      if (entry && rendered.get(item.id) === entry) resized.unobserve(entry.el);
      entry = { item, key, el };
    }
    return entry;
  }

  /** Put items [from, to) in the DOM, in order, and nothing else. */
  function mount(from: number, to: number): void {
    const c = ctx;
    if (!c) return;
    const wanted: Entry[] = [];
    const keep = new Set<string>();
    for (let i = from; i < to; i++) {
      const entry = entryFor(items[i]!, c);
      keep.add(entry.item.id);
      wanted.push(entry);
    }
    for (const [id, entry] of rendered) {
      if (keep.has(id)) continue;
      rendered.delete(id);
      resized.unobserve(entry.el);
      entry.el.remove();
      detached.set(id, entry);
    }
    while (detached.size > KEEP_DETACHED) detached.delete(detached.keys().next().value!);
    // Reconcile order with minimal DOM moves (appends during streaming are the common case).
    let cursor = list.firstElementChild;
    for (const entry of wanted) {
      if (rendered.get(entry.item.id) !== entry) {
        const old = rendered.get(entry.item.id);
        if (old) {
          // Re-rendered in place: the new element takes the old one's slot.
          if (cursor === old.el) cursor = entry.el;
          old.el.replaceWith(entry.el);
        }
        rendered.set(entry.item.id, entry);
        resized.observe(entry.el);
      }
      if (cursor === entry.el) cursor = cursor.nextElementSibling;
      else list.insertBefore(entry.el, cursor);
    }
    while (cursor) {
      const next = cursor.nextElementSibling;
      cursor.remove();
      cursor = next;
    }
    start = from;
    end = to;
  }

  /** Measure what is in the DOM; true when a height differs from what the geometry assumed. */
  function measure(): boolean {
    const gap = Number.parseFloat(getComputedStyle(list).rowGap) || 0;
    let changed = false;
    for (let i = start; i < end; i++) {
      const el = rendered.get(items[i]!.id)?.el;
      if (!el) continue;
      const height = el.getBoundingClientRect().height;
      // A hidden element (display: none) takes no gap either.
      if (geometry.measure(i, height > 0 ? height + gap : 0)) changed = true;
    }
    return changed;
  }

  function widen(range: { start: number; end: number }, n: number): { start: number; end: number } {
    const missing = MIN_RENDERED - (range.end - range.start);
    if (missing <= 0) return range;
    const end = Math.min(n, range.end + Math.floor(missing / 2));
    return { start: Math.max(0, end - MIN_RENDERED), end: Math.min(n, Math.max(end, MIN_RENDERED)) };
  }

  function layout(): void {
    empty.hidden = items.length > 0;
    // Where the list starts in the scrolled content (below the padding, and the empty state if shown).
    const base = above.getBoundingClientRect().top - element.getBoundingClientRect().top + element.scrollTop;
    const viewport = element.clientHeight;
    // What the user is looking at (kept in place while heights above it settle).
    // (Negative in the padding above the first item: kept as is, not pulled down to the item.)
    const y = element.scrollTop - base;
    const anchor = stick ? -1 : geometry.indexAt(Math.max(0, y));
    const anchorDelta = anchor >= 0 ? y - geometry.offset(anchor) : 0;
    for (let pass = 0; pass < 3; pass++) {
      const total = geometry.offset(items.length);
      const top = stick ? Math.max(0, total - viewport) : Math.max(0, geometry.offset(anchor) + anchorDelta);
      const range = widen(geometry.range(top, viewport, OVERSCAN_PX), items.length);
      if (pass > 0 && range.start === start && range.end === end) break;
      mount(range.start, range.end);
      above.style.height = `${geometry.offset(start)}px`;
      below.style.height = `${total - geometry.offset(end)}px`;
      if (!measure()) break;
      above.style.height = `${geometry.offset(start)}px`;
      below.style.height = `${geometry.offset(items.length) - geometry.offset(end)}px`;
    }
    if (stick) setScrollTop(element.scrollHeight);
    else if (anchor >= 0) {
      const want = base + geometry.offset(anchor) + anchorDelta;
      if (Math.abs(want - element.scrollTop) >= 1) setScrollTop(want);
    }
  }

  function render(next: readonly Item[], c: RenderContext): void {
    // Offsets hold up to the first item that is not the same object as before (usually the last).
    let firstChanged = 0;
    const n = Math.min(next.length, items.length);
    while (firstChanged < n && next[firstChanged] === items[firstChanged]) firstChanged++;
    items = next;
    ctx = c;
    geometry.setItems(next, firstChanged);
    layout();
  }

  function followLatest(): void {
    stick = true;
    schedule();
  }

  return { element, render, followLatest };
}
