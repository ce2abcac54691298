import { button, h } from '../dom.ts';
import { visibleRange } from '../format.ts';
import type { Item } from '../model.ts';
import { type RenderContext, renderItem } from './items.ts';

// Windowed, keyed transcript. Only the last WINDOW items are in the DOM ("Show earlier" pages back),
// and an item is re-rendered only when its object identity (or its review state) changed, so a
// stream of deltas touches one element and thousands of events never rebuild the whole list.

export const WINDOW = 200;

interface Entry {
  item: Item;
  key: string;
  el: HTMLElement;
}

export interface Transcript {
  readonly element: HTMLElement;
  render(items: readonly Item[], ctx: RenderContext): void;
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
    'aria-label': 'Conversation',
    'aria-live': 'polite',
    tabindex: '0',
  });
  const earlier = h('div', { class: 'earlier' });
  const list = h('div', { class: 'items' });
  const empty = h(
    'div',
    { class: 'empty-state' },
    h('h2', {}, 'Ask Keel'),
    h(
      'p',
      {},
      'Describe a change, ask about the code, or type @ to mention a file. Edits arrive as diffs you can accept or reject.',
    ),
  );
  element.append(earlier, empty, list);
  const cache = new Map<string, Entry>();
  // Follow the newest output while the user is at the bottom; stop following once they scroll up.
  // Heights change after render (custom elements upgrade, fonts), hence the ResizeObserver.
  // Only an upward scroll turns following off: the scroll event of our own jump to the bottom
  // arrives a frame later, when more content may already have made it look "not at the bottom"
  // (a restored transcript then stayed stuck halfway).
  let stick = true;
  let lastTop = 0;
  element.addEventListener('scroll', () => {
    const top = element.scrollTop;
    if (top + element.clientHeight >= element.scrollHeight - 48) stick = true;
    else if (top < lastTop) stick = false;
    lastTop = top;
  });
  const follow = new ResizeObserver(() => {
    if (stick) element.scrollTop = element.scrollHeight;
  });
  follow.observe(list);
  // The viewport too: a footer that grows (review list, queue, banner) or a view that becomes
  // visible must not leave the newest message below the fold.
  follow.observe(element);
  let limit = WINDOW;
  let lastItems: readonly Item[] = [];
  let lastCtx: RenderContext | undefined;

  const reviewKey = (item: Item, ctx: RenderContext) =>
    item.kind === 'tool' && item.diff && item.path
      ? `${ctx.pendingHunks(item.path)}|${JSON.stringify(ctx.settled?.(item.path) ?? null)}`
      : '';

  function render(items: readonly Item[], ctx: RenderContext): void {
    lastItems = items;
    lastCtx = ctx;
    const { start, hidden } = visibleRange(items.length, limit);
    empty.hidden = items.length > 0;
    earlier.replaceChildren();
    if (hidden > 0) {
      earlier.append(
        button(
          `Show earlier (${hidden})`,
          () => {
            const anchor = list.firstElementChild;
            limit += WINDOW;
            render(lastItems, lastCtx ?? ctx);
            anchor?.scrollIntoView({ block: 'start' });
          },
          { icon: 'fold-up', secondary: true },
        ),
      );
    }
    const keep = new Set<string>();
    const wanted: HTMLElement[] = [];
    for (let i = start; i < items.length; i++) {
      const item = items[i]!;
      const key = reviewKey(item, ctx);
      keep.add(item.id);
      let entry = cache.get(item.id);
      if (!entry || entry.item !== item || entry.key !== key) {
        const el = renderItem(item, ctx);
        if (entry) restoreDetails(el, openDetailsOf(entry.el));
        entry = { item, key, el };
        cache.set(item.id, entry);
      }
      wanted.push(entry.el);
    }
    for (const [id, entry] of cache) {
      if (!keep.has(id)) {
        entry.el.remove();
        cache.delete(id);
      }
    }
    // Reconcile order with minimal DOM moves (appends during streaming are the common case).
    let cursor = list.firstElementChild;
    for (const el of wanted) {
      if (cursor === el) {
        cursor = cursor.nextElementSibling;
      } else {
        list.insertBefore(el, cursor);
      }
    }
    while (cursor) {
      const next = cursor.nextElementSibling;
      cursor.remove();
      cursor = next;
    }
    if (stick) element.scrollTop = element.scrollHeight;
  }

  return { element, render };
}
