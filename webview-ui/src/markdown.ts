import DOMPurify from 'dompurify';
import { button, h } from './dom.ts';
import { t } from './l10n.ts';
import { type FileRef, linkifyFileRefs } from './fileLinks.ts';
import { markdownToHtml } from './markdownHtml.ts';

// Model output is untrusted: markdownToHtml escapes raw HTML, DOMPurify strips anything active that
// is left (javascript: links, on* attributes), and the CSP is the last line.

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
  return DOMPurify.sanitize(markdownToHtml(text), PURIFY);
}

export interface CodeActions {
  copy(code: string): void;
  insert(code: string): void;
  /** A file reference was clicked (`src/a.ts:3`, a Markdown link to a file). */
  openFile?(target: FileRef): void;
}

/** Render Markdown into `target`, adding Copy / Insert-at-cursor actions to each code block. */
export function renderMarkdown(target: HTMLElement, text: string, actions: CodeActions): void {
  target.innerHTML = markdownToSafeHtml(text);
  const open = actions.openFile;
  if (open) linkifyFileRefs(target, open);
  else for (const a of Array.from(target.querySelectorAll('a.file-ref'))) a.replaceWith(a.textContent ?? '');
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
      button(t('Copy code'), () => actions.copy(source), { icon: 'copy', iconOnly: true, secondary: true }),
      button(t('Insert at cursor'), () => actions.insert(source), {
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
