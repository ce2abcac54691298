// A tiny element builder: no framework, no innerHTML except for sanitized Markdown (markdown.ts).

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs,
  ...children: Child[]
): HTMLElementTagNameMap[K];
export function h(tag: string, attrs?: Attrs, ...children: Child[]): HTMLElement;
export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, ...children);
  return el;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** A codicon glyph (decorative: hidden from screen readers). */
export function icon(name: string, extraClass = ''): HTMLElement {
  return h('span', { class: `codicon codicon-${name} ${extraClass}`.trim(), 'aria-hidden': 'true' });
}

/** A `vscode-button` with an accessible name; icon-only buttons get a tooltip too. */
export function button(
  label: string,
  onClick: (event: Event) => void,
  options: {
    icon?: string;
    secondary?: boolean;
    iconOnly?: boolean;
    className?: string;
    title?: string;
  } = {},
): HTMLElement {
  const el = h('vscode-button', {
    'aria-label': label,
    title: options.title ?? label,
    icon: options.icon,
    secondary: options.secondary,
    'icon-only': options.iconOnly,
    class: options.className,
  });
  if (!options.iconOnly) el.textContent = label;
  el.addEventListener('click', (event) => {
    if (el.hasAttribute('disabled')) return;
    onClick(event);
  });
  return el;
}

export function setDisabled(el: HTMLElement, disabled: boolean): void {
  el.toggleAttribute('disabled', disabled);
  el.setAttribute('aria-disabled', String(disabled));
}
