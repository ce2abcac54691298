import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { button, h } from './dom.ts';

// Model output is untrusted: Markdown → HTML with marked, then DOMPurify, then the CSP as the last
// line. Images and anything that could fetch a remote resource are dropped (no remote resources).

const marked = new Marked({ gfm: true, breaks: false, async: false });

const PURIFY = {
  FORBID_TAGS: [
    'img',
    'style',
    'form',
    'input',
    'button',
    'textarea',
    'select',
    'iframe',
    'object',
    'embed',
    'svg',
    'math',
    'video',
    'audio',
    'source',
    'picture',
    'link',
    'meta',
  ],
  FORBID_ATTR: ['style', 'srcset', 'src', 'action', 'formaction', 'background', 'poster'],
  ALLOW_DATA_ATTR: false,
};

export function markdownToSafeHtml(text: string): string {
  const html = marked.parse(text) as string;
  return DOMPurify.sanitize(html, PURIFY);
}

export interface CodeActions {
  copy(code: string): void;
  insert(code: string): void;
}

/** Render Markdown into `target`, adding Copy / Insert-at-cursor actions to each code block. */
export function renderMarkdown(target: HTMLElement, text: string, actions: CodeActions): void {
  target.innerHTML = markdownToSafeHtml(text);
  for (const link of Array.from(target.querySelectorAll('a[href]'))) {
    link.setAttribute('rel', 'noopener noreferrer');
  }
  for (const pre of Array.from(target.querySelectorAll('pre'))) {
    const code = pre.querySelector('code');
    const source = (code ?? pre).textContent ?? '';
    const lang = /language-([\w+#-]+)/.exec(code?.className ?? '')?.[1] ?? '';
    const bar = h(
      'div',
      { class: 'code-actions' },
      lang ? h('span', { class: 'code-lang' }, lang) : null,
      button('Copy code', () => actions.copy(source), { icon: 'copy', iconOnly: true, secondary: true }),
      button('Insert at cursor', () => actions.insert(source), {
        icon: 'insert',
        iconOnly: true,
        secondary: true,
      }),
    );
    const wrapper = h('div', { class: 'code-block' });
    pre.replaceWith(wrapper);
    wrapper.append(bar, pre);
  }
}
